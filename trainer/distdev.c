/*
 * The halo exchange and the gradient allreduce for rows in backend buffers
 * (trainer/distdev.h): in place on a host-memory backend; on a device
 * through host buffers, or with MPI reading and writing the device's
 * buffers themselves where it can (CUDA-aware MPI); with NCCL for
 * gradients when the build has it.
 */
#include "trainer/distdev.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/mpiutil.h"
#ifdef GNN_HAVE_NCCL
#include "kernels/cuda/device.h"
#include "kernels/cuda/nccl.h"
#endif

#include <inttypes.h>
#include <string.h>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* What a device needs of one plan. */
typedef struct {
    gnn_csr_t back;        /* n_owned x n_send: owned row <- the sent entries naming it */
    gnn_bgraph_t *bback;   /* ... on the backend */
    int64_t *send_rows;    /* backend copy of the plan's send_rows */
    int64_t *recv_rows;    /* ... and of its recv_rows (direct exchanges; NULL: none) */
} stage_t;

struct gnn_dist_dev {
    gnn_dist_part_t *d;
    gnn_backend_t *be;
    const gnn_aggr_def_t *sum;
    int staged;            /* a backend without host memory */
    int direct;            /* ... whose buffers MPI reads and writes itself */
    stage_t stage[1 + GNN_DIST_MAX_LAYERS]; /* the full plan, then d's loss plans */
    float *rbuf;           /* backend: a loss plan's received rows, n_recv x f (direct) */
    size_t rbuf_bytes;
    float *packed;         /* backend, n_send x f */
    size_t packed_bytes;
    float *summed;         /* backend, n_owned x f */
    size_t summed_bytes;
    float *h_send;         /* host, n_send x f (sent forward, received backward) */
    size_t h_send_bytes;
    float *h_halo;         /* host, halo rows x f */
    size_t h_halo_bytes;
    float *h_grad;         /* host, the gradients when summed through host memory */
    size_t h_grad_bytes;
#ifdef GNN_HAVE_NCCL
    gnn_nccl_t *nccl;
#endif
};

int gnn_dist_local_rank(MPI_Comm comm, int *local, int *count)
{
    MPI_Comm node = MPI_COMM_NULL;
    *local = 0;
    *count = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return GNN_FAIL(GNN_EMPI, "MPI_Comm_split_type failed");
    int ok = MPI_Comm_rank(node, local) == MPI_SUCCESS && MPI_Comm_size(node, count) == MPI_SUCCESS;
    MPI_Comm_free(&node);
    return ok ? 0 : GNN_FAIL(GNN_EMPI, "MPI_Comm_rank on the machine's ranks failed");
}

/* A staging buffer in host memory the device copies to and from at full
 * speed (pinned on a GPU: gnn_be_host_alloc). */
static int ensure_host(gnn_backend_t *be, float **p, size_t *have, size_t bytes)
{
    if (*p && *have >= bytes) return 0;
    gnn_be_host_free(be, *p);
    *p = NULL;
    *have = 0;
    int rc = gnn_be_host_alloc(be, bytes + sizeof(float), (void **)p);
    if (rc == 0) *have = bytes;
    return rc;
}

static int ensure_be(gnn_backend_t *be, float **p, size_t *have, size_t bytes)
{
    if (*p && *have >= bytes) return 0;
    gnn_be_free(be, *p);
    *p = NULL;
    *have = 0;
    int rc = gnn_be_alloc(be, bytes + sizeof(float), (void **)p);
    if (rc == 0) *have = bytes;
    return rc;
}

/* The backward graph of plan p: row v lists the entries i with
 * send_rows[i] == v, in increasing i. */
static int build_back(const gnn_dist_plan_t *p, int64_t n_owned, gnn_csr_t *a)
{
    a->n_rows = n_owned;
    a->n_cols = p->n_send;
    a->nnz = p->n_send;
    a->flags = 0;
    a->weights = NULL;
    a->indptr = gnn_calloc((size_t)n_owned + 1, sizeof *a->indptr);
    a->indices = gnn_malloc_array((size_t)p->n_send + 1, sizeof *a->indices);
    if (!a->indptr || !a->indices) return GNN_FAIL(GNN_ENOMEM, "halo exchange: backward graph");
    for (int64_t i = 0; i < p->n_send; i++) {
        int64_t v = p->send_rows[i];
        if (v < 0 || v >= n_owned)
            return GNN_FAIL(GNN_EINVAL, "halo exchange: sent row %" PRId64 " is not owned", v);
        a->indptr[v + 1]++;
    }
    for (int64_t v = 0; v < n_owned; v++) a->indptr[v + 1] += a->indptr[v];
    gnn_eid_t *at = gnn_malloc_array((size_t)n_owned + 1, sizeof *at);
    if (!at) return GNN_FAIL(GNN_ENOMEM, "halo exchange: backward graph");
    memcpy(at, a->indptr, (size_t)n_owned * sizeof *at);
    for (int64_t i = 0; i < p->n_send; i++) a->indices[at[p->send_rows[i]]++] = i;
    gnn_free(at);
    return 0;
}

/* The full plan's (s = 0) or loss plan s - 1's. */
static const gnn_dist_plan_t *plan_of(const gnn_dist_dev_t *x, int s, gnn_dist_plan_t *full)
{
    *full = gnn_dist_full_plan(x->d);
    return s == 0 ? full : &x->d->loss_plan[s - 1];
}

static int setup_staging(gnn_dist_dev_t *x)
{
    int rc = 0;
    for (int s = 0; s <= x->d->n_loss_plans; s++) {
        gnn_dist_plan_t full;
        const gnn_dist_plan_t *p = plan_of(x, s, &full);
        stage_t *st = &x->stage[s];
        GNN_TRY(build_back(p, x->d->n_owned, &st->back));
        GNN_TRY(gnn_be_graph_create(x->be, &st->back, &st->bback));
        size_t bytes = (size_t)p->n_send * sizeof(int64_t);
        GNN_TRY(gnn_be_alloc(x->be, bytes + sizeof(int64_t), (void **)&st->send_rows));
        GNN_TRY(gnn_be_upload(x->be, st->send_rows, p->send_rows, bytes));
        if (x->direct && p->recv_rows) {
            bytes = (size_t)p->n_recv * sizeof(int64_t);
            GNN_TRY(gnn_be_alloc(x->be, bytes + sizeof(int64_t), (void **)&st->recv_rows));
            GNN_TRY(gnn_be_upload(x->be, st->recv_rows, p->recv_rows, bytes));
        }
    }
    /* The plans' rows, checked when made, vouched for on the device (no
     * read-back per exchange): the received ones first, ascending halo
     * rows (each scatter would check them twice), then the sent ones
     * (owned rows, one per peer that needs them). */
    const int64_t nh = x->d->n_local - x->d->n_owned;
    for (int s = 0; s <= x->d->n_loss_plans; s++) {
        gnn_dist_plan_t full;
        const gnn_dist_plan_t *p = plan_of(x, s, &full);
        if (x->stage[s].recv_rows && p->n_recv > 0)
            GNN_TRY(gnn_be_trust_buffer(x->be, x->stage[s].recv_rows, p->n_recv, nh, 1));
    }
    for (int s = 0; s <= x->d->n_loss_plans; s++) {
        gnn_dist_plan_t full;
        const gnn_dist_plan_t *p = plan_of(x, s, &full);
        if (p->n_send > 0)
            GNN_TRY(gnn_be_trust_buffer(x->be, x->stage[s].send_rows, p->n_send, x->d->n_owned,
                                        0));
    }
fail:
    return rc;
}

/* Whether this MPI library reads and writes CUDA device memory, as it
 * says at run time: Open MPI's extension, MPICH's GPU query. */
static int mpi_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;
    return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes;
#else
    return 0;
#endif
}

/* Whether MPI may be given be's buffers, agreed over comm (every rank
 * calls it, and every rank with a device exchanges the same way): a CUDA
 * device's where the library is CUDA-aware; cpu-as-gpu's, which are host
 * memory, when asked (so that this path is tested without a GPU). want:
 * -1 auto (a CUDA device only), 0 off, 1 on (refused, on every rank,
 * where a device's MPI cannot), -2 a rank whose rows are in host memory
 * (no say). */
static int choose_direct(gnn_dist_part_t *d, gnn_backend_t *be, int want, int *direct)
{
    int rc = 0, can = 1, all = 0, asked = want == 1, any = 0;
    *direct = 0;
    if (want == 0)
        can = 0;
    else if (want != -2)
        can = gnn_backend_kind(be) == GNN_BACKEND_CUDA ? mpi_cuda_aware() : want == 1;
    GNN_CHECK(MPI_Allreduce(&can, &all, 1, MPI_INT, MPI_MIN, d->comm) == MPI_SUCCESS &&
                  MPI_Allreduce(&asked, &any, 1, MPI_INT, MPI_MAX, d->comm) == MPI_SUCCESS,
              GNN_EMPI, "MPI_Allreduce failed");
    if (any && !all)
        return GNN_FAIL(GNN_EUSAGE, "--cuda-aware-mpi on: %s",
                        can ? "another rank's MPI library is not CUDA-aware"
                            : "this MPI library is not CUDA-aware (it says so at run time)");
    *direct = want != -2 && all;
fail:
    return rc;
}

#ifdef GNN_HAVE_NCCL
/* *shared = 1 on every rank when two ranks of a machine run on one GPU
 * (compared by UUID: each rank may see its own CUDA_VISIBLE_DEVICES).
 * Collective over comm. */
static int gpus_shared(MPI_Comm comm, int dev, int *shared)
{
    int rc = 0, dup = 0;
    MPI_Comm node = MPI_COMM_NULL;
    unsigned char mine[16] = {0}, *all = NULL;
    *shared = 0;
    GNN_TRY(gnn_dist_agree(comm, gnn_cuda_device_uuid(dev, mine)));
    GNN_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
                  MPI_SUCCESS,
              GNN_EMPI, "MPI_Comm_split_type failed");
    int nr = 1;
    MPI_Comm_size(node, &nr);
    all = gnn_malloc((size_t)nr * 16);
    GNN_TRY(gnn_dist_agree(comm, all ? 0 : GNN_FAIL(GNN_ENOMEM, "device ids")));
    GNN_CHECK(MPI_Allgather(mine, 16, MPI_BYTE, all, 16, MPI_BYTE, node) == MPI_SUCCESS, GNN_EMPI,
              "MPI_Allgather of the device ids failed");
    for (int a = 0; a < nr && !dup; a++)
        for (int b = a + 1; b < nr && !dup; b++) dup = !memcmp(all + 16 * a, all + 16 * b, 16);
    GNN_CHECK(MPI_Allreduce(&dup, shared, 1, MPI_INT, MPI_MAX, comm) == MPI_SUCCESS, GNN_EMPI,
              "MPI_Allreduce failed");
fail:
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    gnn_free(all);
    return rc;
}
#endif

int gnn_dist_dev_create(gnn_dist_part_t *d, gnn_backend_t *be, const gnn_aggr_def_t *sum,
                        int direct, gnn_dist_dev_t **out)
{
    int rc = 0;
    *out = NULL;
    gnn_dist_dev_t *x = gnn_calloc(1, sizeof *x);
    int local = x ? 0 : GNN_FAIL(GNN_ENOMEM, "halo exchange");
    if (x) {
        x->d = d;
        x->be = be;
        x->sum = sum;
        x->staged = !gnn_be_host_memory(be);
    }
    GNN_TRY(gnn_dist_agree(d->comm, local));
    /* Collective on every rank, whatever its backend. */
    GNN_TRY(choose_direct(d, be, x->staged ? direct : -2, &x->direct));
    GNN_TRY(gnn_dist_agree(d->comm, x->staged ? setup_staging(x) : 0));
#ifdef GNN_HAVE_NCCL
    /* NCCL refuses two ranks on one GPU: such jobs sum through host memory. */
    int shared = 0;
    if (gnn_backend_kind(be) == GNN_BACKEND_CUDA && d->size > 1)
        GNN_TRY(gpus_shared(d->comm, gnn_be_device(be), &shared));
    if (gnn_backend_kind(be) == GNN_BACKEND_CUDA && d->size > 1 && !shared) {
        unsigned char id[GNN_NCCL_ID_BYTES];
        memset(id, 0, sizeof id);
        GNN_TRY(gnn_dist_agree(d->comm, d->rank == 0 ? gnn_nccl_unique_id(id) : 0));
        GNN_CHECK(MPI_Bcast(id, GNN_NCCL_ID_BYTES, MPI_BYTE, 0, d->comm) == MPI_SUCCESS, GNN_EMPI,
                  "MPI_Bcast of the NCCL id failed");
        /* A rank whose opening fails leaves its peers inside NCCL's
         * set-up, where no MPI call reaches them (they would wait for it
         * forever): it ends the job, naming itself and the cause. */
        rc = gnn_nccl_open(id, d->rank, d->size, gnn_be_device(be), &x->nccl);
        if (rc < 0) {
            rc = gnn_mpi_fail_alone("gnn-train", rc);
            goto fail;
        }
    }
#endif
    *out = x;
    return 0;
fail:
    gnn_dist_dev_free(x);
    return rc;
}

void gnn_dist_dev_free(gnn_dist_dev_t *x)
{
    if (!x) return;
#ifdef GNN_HAVE_NCCL
    gnn_nccl_close(x->nccl);
#endif
    for (int s = 0; s <= GNN_DIST_MAX_LAYERS; s++) {
        gnn_be_graph_free(x->stage[s].bback);
        gnn_csr_free(&x->stage[s].back);
        gnn_be_free(x->be, x->stage[s].send_rows);
        gnn_be_free(x->be, x->stage[s].recv_rows);
    }
    gnn_be_free(x->be, x->rbuf);
    gnn_be_free(x->be, x->packed);
    gnn_be_free(x->be, x->summed);
    gnn_be_host_free(x->be, x->h_send);
    gnn_be_host_free(x->be, x->h_halo);
    gnn_be_host_free(x->be, x->h_grad);
    gnn_free(x);
}

int gnn_dist_dev_staged(const gnn_dist_dev_t *x)
{
    return x->staged;
}

int gnn_dist_dev_direct(const gnn_dist_dev_t *x)
{
    return x->direct;
}

const char *gnn_dist_dev_allreduce_name(const gnn_dist_dev_t *x)
{
    if (x->d->size == 1) return "none (one rank)";
#ifdef GNN_HAVE_NCCL
    if (x->nccl) return "NCCL";
#endif
    return x->direct ? "MPI on device buffers" : x->staged ? "MPI through host memory" : "MPI";
}

const char *gnn_dist_dev_halo_name(const gnn_dist_dev_t *x)
{
    return x->direct ? "exchanged by MPI in device buffers"
           : x->staged ? "staged through host memory"
                       : "exchanged in place";
}

/* The plan of exchange k (training: a training step's) and its stage index. */
static const gnn_dist_plan_t *pick(const gnn_dist_dev_t *x, int k, int training, int *s)
{
    const gnn_dist_plan_t *p = gnn_dist_plan_for(x->d, k, training);
    *s = p ? 1 + k : 0;
    return p;
}

/* g[send_rows[i]] += received row i (packed, ns rows), as one sum over
 * the backward graph of stage s (no atomics for repeated rows). */
static int add_back(gnn_dist_dev_t *x, int s, int64_t ns, int64_t no, float *g, int64_t f)
{
    if (ns == 0) return 0;
    int rc = gnn_be_aggr_forward(x->be, x->stage[s].bback, x->sum, f, x->packed, x->summed, NULL,
                                 0);
    return rc < 0 ? rc : gnn_be_axpby(x->be, no * f, 1.0f, x->summed, 1.0f, g);
}

/* A direct exchange's plan (p, or the full plan), its sizes, and the
 * same plan received packed in plan order (recv_rows NULL); packed and,
 * for a loss plan, rbuf made large enough (the failure in *local). */
typedef struct {
    const gnn_dist_plan_t *p;
    gnn_dist_plan_t full, packed;
    int64_t ns, nh, no, nr; /* sent, halo, owned, received rows (a loss plan's) */
    size_t row;
} direct_t;

static void direct_plan(gnn_dist_dev_t *x, const gnn_dist_plan_t *p, int64_t f, direct_t *e,
                        int *local)
{
    gnn_dist_part_t *d = x->d;
    e->full = gnn_dist_full_plan(d);
    e->p = p ? p : &e->full;
    e->packed = *e->p;
    e->packed.recv_rows = NULL;
    e->ns = e->p->n_send;
    e->nh = d->n_local - d->n_owned;
    e->no = d->n_owned;
    e->nr = e->p->recv_rows ? e->p->n_recv : 0;
    e->row = (size_t)f * sizeof(float);
    *local = ensure_be(x->be, &x->packed, &x->packed_bytes, (size_t)e->ns * e->row);
    if (*local == 0 && e->p->recv_rows)
        *local = ensure_be(x->be, &x->rbuf, &x->rbuf_bytes, (size_t)e->nr * e->row);
}

/* The forward with MPI on the backend's buffers: the sent rows gathered
 * on the device, the device idle (MPI reads its memory), then received
 * into the halo rows in place, or, for a loss plan, into rbuf and put at
 * their rows on the device, the others zeroed. */
static int forward_direct(gnn_dist_dev_t *x, const gnn_dist_plan_t *p, int s, float *xrows,
                          int64_t f)
{
    gnn_dist_part_t *d = x->d;
    direct_t e;
    int local;
    direct_plan(x, p, f, &e, &local);
    float *halo = xrows + e.no * f;
    if (local == 0 && e.ns > 0)
        local = gnn_be_gather_rows(x->be, e.ns, f, xrows, e.no, x->stage[s].send_rows, x->packed);
    if (local == 0) local = gnn_be_sync(x->be);
    int rc = gnn_dist_halo_forward_packed(d, &e.packed, local, x->packed,
                                          e.p->recv_rows ? x->rbuf : halo, f);
    if (rc < 0 || !e.p->recv_rows) return rc;
    if (e.nh > 0) rc = gnn_be_zero(x->be, halo, (size_t)e.nh * e.row);
    if (rc == 0 && e.nr > 0)
        rc = gnn_be_scatter_rows(x->be, e.nr, f, x->rbuf, f, x->stage[s].recv_rows, halo, f,
                                 e.nh);
    return gnn_dist_agree(d->comm, rc); /* no rank goes on alone to the next exchange */
}

/* The backward likewise: the halo rows' gradients (a loss plan's gathered
 * into rbuf first) sent from device memory, the owners' received into
 * packed and added into their rows as the staged path adds them. */
static int backward_direct(gnn_dist_dev_t *x, const gnn_dist_plan_t *p, int s, float *g,
                           int64_t f)
{
    gnn_dist_part_t *d = x->d;
    direct_t e;
    int local;
    direct_plan(x, p, f, &e, &local);
    const int64_t ns = e.ns, no = e.no;
    const float *send = e.p->recv_rows ? x->rbuf : g + no * f;
    if (local == 0) local = ensure_be(x->be, &x->summed, &x->summed_bytes, (size_t)no * e.row);
    if (local == 0 && e.nr > 0)
        local = gnn_be_gather_rows(x->be, e.nr, f, g + no * f, e.nh, x->stage[s].recv_rows,
                                   x->rbuf);
    if (local == 0) local = gnn_be_sync(x->be);
    int rc = gnn_dist_halo_backward_packed(d, &e.packed, local, send, x->packed, f);
    if (rc < 0) return rc;
    return gnn_dist_agree(d->comm, add_back(x, s, ns, no, g, f));
}

int gnn_dist_dev_halo_forward(void *ctx, int k, int training, float *xrows, int64_t f)
{
    gnn_dist_dev_t *x = ctx;
    gnn_dist_part_t *d = x->d;
    int s;
    const gnn_dist_plan_t *p = pick(x, k, training, &s);
    if (!x->staged) return gnn_dist_halo_forward(d, p, xrows, f);
    if (x->direct) return forward_direct(x, p, s, xrows, f);
    int64_t ns = p ? p->n_send : d->n_send, nh = d->n_local - d->n_owned;
    size_t row = (size_t)f * sizeof(float);
    int local = ensure_host(x->be, &x->h_send, &x->h_send_bytes, (size_t)ns * row);
    if (local == 0) local = ensure_host(x->be, &x->h_halo, &x->h_halo_bytes, (size_t)nh * row);
    if (local == 0) local = ensure_be(x->be, &x->packed, &x->packed_bytes, (size_t)ns * row);
    if (local == 0 && ns > 0)
        local = gnn_be_gather_rows(x->be, ns, f, xrows, d->n_owned, x->stage[s].send_rows,
                                   x->packed);
    if (local == 0 && ns > 0)
        local = gnn_be_download(x->be, x->h_send, x->packed, (size_t)ns * row);
    /* The last exchange's upload from h_halo may still be queued (pinned
     * memory): done before MPI writes there (the download above waits) */
    if (local == 0 && ns == 0 && nh > 0) local = gnn_be_sync(x->be);
    int rc = gnn_dist_halo_forward_packed(d, p, local, x->h_send, x->h_halo, f);
    if (rc < 0) return rc;
    if (nh > 0) rc = gnn_be_upload(x->be, xrows + d->n_owned * f, x->h_halo, (size_t)nh * row);
    return gnn_dist_agree(d->comm, rc); /* no rank goes on alone to the next exchange */
}

int gnn_dist_dev_halo_backward(void *ctx, int k, float *g, int64_t f)
{
    gnn_dist_dev_t *x = ctx;
    gnn_dist_part_t *d = x->d;
    int s;
    const gnn_dist_plan_t *p = pick(x, k, 1, &s);
    if (!x->staged) return gnn_dist_halo_backward(d, p, g, f);
    if (x->direct) return backward_direct(x, p, s, g, f);
    int64_t ns = p ? p->n_send : d->n_send, nh = d->n_local - d->n_owned, no = d->n_owned;
    size_t row = (size_t)f * sizeof(float);
    int local = ensure_host(x->be, &x->h_send, &x->h_send_bytes, (size_t)ns * row);
    if (local == 0) local = ensure_host(x->be, &x->h_halo, &x->h_halo_bytes, (size_t)nh * row);
    if (local == 0) local = ensure_be(x->be, &x->packed, &x->packed_bytes, (size_t)ns * row);
    if (local == 0) local = ensure_be(x->be, &x->summed, &x->summed_bytes, (size_t)no * row);
    if (local == 0 && nh > 0)
        local = gnn_be_download(x->be, x->h_halo, g + no * f, (size_t)nh * row);
    /* likewise the last upload from h_send, before MPI writes there */
    if (local == 0 && nh == 0 && ns > 0) local = gnn_be_sync(x->be);
    int rc = gnn_dist_halo_backward_packed(d, p, local, x->h_halo, x->h_send, f);
    if (rc < 0) return rc;
    if (ns > 0) rc = gnn_be_upload(x->be, x->packed, x->h_send, (size_t)ns * row);
    if (rc == 0) rc = add_back(x, s, ns, no, g, f);
    return gnn_dist_agree(d->comm, rc);
}

int gnn_dist_dev_allreduce(gnn_dist_dev_t *x, float *buf, int64_t n)
{
    int rc = 0;
    gnn_dist_part_t *d = x->d;
    if (d->size == 1 || n == 0) return 0;
    GNN_CHECK(n <= INT32_MAX, GNN_ERANGE, "gradient allreduce: %" PRId64 " values", n);
#ifdef GNN_HAVE_NCCL
    if (x->nccl) { /* waited for, so that allreduce_s times the sum, not its launch */
        GNN_TRY(gnn_nccl_allreduce_f32(x->nccl, buf, (size_t)n, 0, gnn_be_stream(x->be)));
        return gnn_be_sync(x->be);
    }
#endif
    if (!x->staged || x->direct) { /* on a device: once the backward has run */
        if (x->direct) GNN_TRY(gnn_dist_agree(d->comm, gnn_be_sync(x->be)));
        GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, d->comm) ==
                      MPI_SUCCESS,
                  GNN_EMPI, "gradient allreduce failed");
        return 0;
    }
    size_t bytes = (size_t)n * sizeof(float);
    int local = ensure_host(x->be, &x->h_grad, &x->h_grad_bytes, bytes);
    if (local == 0) local = gnn_be_download(x->be, x->h_grad, buf, bytes);
    GNN_TRY(gnn_dist_agree(d->comm, local));
    GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, x->h_grad, (int)n, MPI_FLOAT, MPI_SUM, d->comm) ==
                  MPI_SUCCESS,
              GNN_EMPI, "gradient allreduce failed");
    GNN_TRY(gnn_be_upload(x->be, buf, x->h_grad, bytes));
fail:
    return rc;
}
