/*
 * Distributed training on any backend: the halo exchange and the gradient
 * allreduce for rows that live in backend buffers.
 *
 * On a host-memory backend (the CPU) the halo rows are exchanged in place
 * (trainer/dist.h) and gradients are summed with MPI_Allreduce. On a device
 * (CUDA) the rows a rank sends are gathered on the device, copied to host
 * memory (pinned: gnn_be_host_alloc), exchanged with MPI, and the received
 * rows copied back; in the
 * backward pass the received gradient rows are added into their owners'
 * rows on the device by a sum aggregation over a fixed graph (owned row <-
 * the sent entries naming it), so repeated rows need no atomics. Gradients
 * are summed with NCCL on the backend's stream when the build has it, else
 * through host memory with MPI. Where the MPI library is CUDA-aware (it
 * says so at run time), MPI is given the device's buffers instead: the
 * rows gathered and put back on the device as above, no host copies
 * (and gradients summed in place where NCCL is not used). The cpu-as-gpu
 * backend (kernels/backend.h) takes the device paths, staged or (asked
 * for) direct, which tests them on a machine without a GPU.
 */
#ifndef GNN_TRAINER_DISTDEV_H
#define GNN_TRAINER_DISTDEV_H

#include "kernels/backend.h"
#include "trainer/dist.h"

#include <mpi.h>
#include <stdint.h>

typedef struct gnn_dist_dev gnn_dist_dev_t;

/*
 * This rank's device index among the ranks on its machine: *local (its
 * rank among them) and *count (how many). Collective over comm.
 */
int gnn_dist_local_rank(MPI_Comm comm, int *local, int *count);

/*
 * Set up the exchanges of part d on be (d and be must outlive the result).
 * sum: the registry's "sum" aggregator. direct: whether MPI is given the
 * device's buffers (-1 where the library is CUDA-aware on every rank, 0
 * never, 1 always: GNN_EUSAGE where it is not; on cpu-as-gpu only when 1).
 * Collective (NCCL's communicator is made here, its unique id broadcast
 * from rank 0); failures are agreed, so every rank returns the same code.
 */
int gnn_dist_dev_create(gnn_dist_part_t *d, gnn_backend_t *be, const gnn_aggr_def_t *sum,
                        int direct, gnn_dist_dev_t **out);
void gnn_dist_dev_free(gnn_dist_dev_t *x);

/* 1 when rows go through host buffers (a backend without host memory). */
int gnn_dist_dev_staged(const gnn_dist_dev_t *x);
/* 1 when MPI is given the backend's buffers (a CUDA-aware MPI, or
 * cpu-as-gpu asked to act as one). */
int gnn_dist_dev_direct(const gnn_dist_dev_t *x);
/* How halo rows move: "exchanged in place", "staged through host memory"
 * or "exchanged by MPI in device buffers". */
const char *gnn_dist_dev_halo_name(const gnn_dist_dev_t *x);
/* "NCCL", "MPI", "MPI on device buffers" or "MPI through host memory": how gradients are summed
 * (through host memory on a device when ranks share a GPU, which NCCL
 * refuses); "none (one rank)" when there is a single rank. */
const char *gnn_dist_dev_allreduce_name(const gnn_dist_dev_t *x);

/* The model's halo hooks (trainer/model.h), ctx = the gnn_dist_dev_t:
 * x, g are backend buffers of n_local rows of f; exchange k of a training
 * step (backward: always one) takes d's loss plan k when d has one (make
 * them before gnn_dist_dev_create). Collective. */
int gnn_dist_dev_halo_forward(void *ctx, int k, int training, float *x, int64_t f);
int gnn_dist_dev_halo_backward(void *ctx, int k, float *g, int64_t f);

/* buf (backend, n floats) = its sum over the ranks. Collective. */
int gnn_dist_dev_allreduce(gnn_dist_dev_t *x, float *buf, int64_t n);

#endif
