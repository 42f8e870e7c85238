/*
 * The end of every training step, whatever the mode (trainer/job.h): the
 * backward from the task's loss gradient, over several ranks the gradients
 * summed with one allreduce of the flat buffer (each rank's gradient is
 * its share of the whole loss's, so the sum is the gradient of the mean),
 * and one Adam step that every rank takes alike, so the parameters stay
 * identical everywhere.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/mpiutil.h"

#include <inttypes.h>
#include <string.h>

gnn_adam_opts_t gnn__adam_opts(const gnn_job_t *j)
{
    gnn_adam_opts_t ao = gnn_adam_defaults();
    ao.lr = (float)j->o->lr;
    ao.weight_decay = (float)j->o->weight_decay;
    return ao;
}

int gnn__adam_step(gnn_job_t *j)
{
    int rc = 0;
    gnn_adam_opts_t ao = gnn__adam_opts(j);
    int64_t step = ++j->ck.step, total = gnn_model_n_params(j->model);
    float *w = gnn_model_params(j->model), *g = gnn_model_grads(j->model);
    if (!strcmp(j->decay_scope, "all")) {
        GNN_TRY(gnn_be_adam(j->be, total, w, g, j->adam_m, j->adam_v, &ao, step));
    } else {
        int64_t off, cnt;
        gnn_model_layer_span(j->model, 0, &off, &cnt);
        GNN_TRY(gnn_be_adam(j->be, cnt, w, g, j->adam_m, j->adam_v, &ao, step));
        ao.weight_decay = 0.0f;
        if (total > cnt)
            GNN_TRY(gnn_be_adam(j->be, total - cnt, w + cnt, g + cnt, j->adam_m + cnt,
                                j->adam_v + cnt, &ao, step));
    }
    return 0;
fail:
    return rc;
}

int gnn__step(gnn_job_t *j)
{
    int rc = gnn_model_backward(j->model, j->dlogits);
    if (rc == 0) rc = gnn__input_step(j);
    return rc < 0 ? rc : gnn__adam_step(j);
}

/* FNV-1a of the parameters' bytes into *h. */
static int params_hash(gnn_job_t *j, uint64_t *h)
{
    size_t n = (size_t)gnn_model_n_params(j->model) * sizeof(float);
    unsigned char *copy = NULL;
    const unsigned char *b = (const unsigned char *)gnn_model_params(j->model);
    if (!gnn_be_host_memory(j->be)) {
        copy = gnn_malloc(n + 1);
        if (!copy) return GNN_FAIL(GNN_ENOMEM, "parameter hash");
        int rc = gnn_be_download(j->be, copy, b, n);
        if (rc < 0) {
            gnn_free(copy);
            return rc;
        }
        b = copy;
    }
    *h = gnn_fnv1a(GNN_FNV_BASIS, b, n);
    gnn_free(copy);
    return 0;
}

/* --debug: every rank must hold the same parameters after a step. */
static int check_same_params(gnn_job_t *j)
{
    int rc = 0;
    uint64_t h = 0;
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, params_hash(j, &h)));
    int same = 0;
    GNN_TRY(gnn_mpi_same(MPI_COMM_WORLD, h, &same));
    if (!same)
        rc = GNN_FAIL(GNN_EINVAL, "--debug: the parameters differ across ranks after step %" PRId64
                      " (rank %d hash %016" PRIx64 ")",
                      j->ck.step, j->dist->rank, h);
    rc = gnn_dist_agree(MPI_COMM_WORLD, rc);
fail:
    return rc;
}

int gnn__step_reduce(gnn_job_t *j, double *sum)
{
    int rc = 0;
    GNN_TRY(gnn_be_sync(j->be)); /* allreduce_s times the sum, not the backward queued before */
    double t0 = gnn__now_s();
    int64_t np = gnn_model_n_params(j->model);
    GNN_TRY(gnn_dist_dev_allreduce(j->ddev, gnn_model_grads(j->model), np));
    if (sum)
        GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
                  GNN_EMPI, "loss allreduce failed");
    j->allreduce_s += gnn__now_s() - t0;
    j->grad_bytes += j->dist->size > 1 ? np * (int64_t)sizeof(float) : 0;
    GNN_TRY(gnn__adam_step(j));
    if (j->o->debug) GNN_TRY(check_same_params(j));
fail:
    return rc;
}
