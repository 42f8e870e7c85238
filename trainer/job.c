/*
 * What every file of the trainer shares (trainer/job.h): the clock,
 * backend buffers that grow, and freeing a job in the order its parts
 * depend on each other (the loader before the graph it samples, the
 * exchange before the backend it uses).
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"

#include <time.h>

double gnn__now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double gnn__wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int gnn__buf_ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes)
{
    return gnn_layer_ensure(be, buf, have, bytes ? bytes : 1);
}

int gnn__buf_upload(gnn_backend_t *be, const void *src, size_t bytes, void **dst)
{
    int rc = gnn_be_alloc(be, bytes, dst);
    if (rc < 0) return rc;
    return gnn_be_upload(be, *dst, src, bytes);
}

void gnn__job_free(gnn_job_t *j)
{
    /* The loader first: its workers may still read the features and
     * graphs below (a failure in the middle of an epoch). */
    gnn_loader_free(j->ld);
    gnn__dsq_free(j); /* the device sampler's thread, then the sampler, before the graph */
    gnn_be_batch_free(&j->dsb);
    gnn_be_sampler_free(j->ds);
    gnn_free(j->dperm);
    gnn_free(j->dstart);
    gnn_loader_edges_free(&j->dsb_edges);
    gnn__dhost_clear(&j->dsb_host);
    gnn_free(j->dy);
    gnn_free(j->dids);
    gnn_free(j->loss_host);
    if (j->mode && j->mode->free) j->mode->free(j); /* after the loader reading its rows */
    if (j->task && j->task->free) j->task->free(j);
    if (j->be) gnn__replay_free(j); /* the capture, before the buffers it reads */
    gnn_model_free(j->model);
    gnn__input_dist_free(j);
    gnn__input_typed_free(j);
    gnn_embed_free(j->emb);
    gnn_backend_close(j->emb_be);
    if (j->be) {
        if (j->x_mapped)
            gnn_be_unmap_host(j->be, j->g.feat); /* before the graph's arrays go */
        else
            gnn_be_free(j->be, j->x);
        gnn_be_free(j->be, j->xin);
        gnn_be_free(j->be, j->dlogits);
        gnn_be_free(j->be, j->loss_dev);
        gnn_be_free(j->be, j->loss_slots);
        gnn_be_free(j->be, j->fc_rows);
        gnn_be_free(j->be, j->fc_slot);
        gnn_be_free(j->be, j->adam_m);
        gnn_be_free(j->be, j->adam_v);
        gnn_be_free(j->be, j->iota);
        gnn_be_free(j->be, j->xb);
        gnn_be_free(j->be, j->yb);
        gnn_be_free(j->be, j->nb);
        gnn_be_free(j->be, j->hbuf[0]);
        gnn_be_free(j->be, j->hbuf[1]);
        gnn_be_free(j->be, j->ebuf);
        gnn_be_free(j->be, j->eidx);
        gnn_be_free(j->be, j->row_id);
    }
    gnn_free(j->outdeg);
    gnn_be_graph_free(j->bg);
    gnn_be_sparse_free(j->bxsb);
    gnn_csr_free(&j->xsb);
    gnn_be_sparse_free(j->bxs);
    gnn_csr_free(&j->xs);
    gnn_graph_free(&j->g);
    gnn_aggr_registry_free(j->reg);
    gnn_dist_dev_free(j->ddev); /* before the backend it uses */
    gnn_backend_close(j->be);
    gnn_checkpoint_free(&j->ck);
    if (j->log) fclose(j->log);
    if (j->dist) gnn_dist_free(j->dist);
}
