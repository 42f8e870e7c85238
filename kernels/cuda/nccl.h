/*
 * NCCL for the trainer: one communicator over the ranks of a job, and the
 * in-place sum of a flat float buffer (the gradient allreduce).
 *
 * kernels/ knows nothing of MPI: the caller creates the unique id on one
 * rank (gnn_nccl_unique_id), broadcasts its GNN_NCCL_ID_BYTES bytes itself
 * (trainer/, over MPI) and then every rank opens the communicator with its
 * rank, the rank count and the device it chose (one GPU per rank, by local
 * rank). Every NCCL and CUDA return code is checked; failures are
 * GNN_ENCCL / GNN_ECUDA with the library's message; nothing exits.
 */
#ifndef GNN_KERNELS_CUDA_NCCL_H
#define GNN_KERNELS_CUDA_NCCL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size of ncclUniqueId (checked against NCCL's at compile time). */
#define GNN_NCCL_ID_BYTES 128

typedef struct gnn_nccl gnn_nccl_t;

/* A fresh unique id into id (on one rank, before gnn_nccl_open). */
int gnn_nccl_unique_id(unsigned char id[GNN_NCCL_ID_BYTES]);
/*
 * Join the communicator of id as rank of size on CUDA device dev (made
 * current for the calling thread). Collective: every rank must call it.
 * 0 with *out set, or GNN_EINVAL, GNN_ENCCL, GNN_ECUDA, GNN_ENOMEM with
 * *out NULL.
 */
int gnn_nccl_open(const unsigned char id[GNN_NCCL_ID_BYTES], int rank, int size, int dev,
                  gnn_nccl_t **out);
/* buf[i] = sum over ranks of buf[i] for n floats of device memory, queued
 * on stream (a cudaStream_t; NULL: the default stream); with average != 0
 * the sum divided by the rank count. Collective. */
int gnn_nccl_allreduce_f32(gnn_nccl_t *c, float *buf, size_t n, int average, void *stream);
/* Rank and size of c. */
int gnn_nccl_rank(const gnn_nccl_t *c);
int gnn_nccl_size(const gnn_nccl_t *c);
/* Destroy the communicator (after the work queued on it); NULL ok. */
void gnn_nccl_close(gnn_nccl_t *c);
/* Abort it without waiting for the other ranks (after a failure some
 * ranks saw and others did not); NULL ok. */
void gnn_nccl_abort(gnn_nccl_t *c);

#ifdef __cplusplus
}
#endif

#endif
