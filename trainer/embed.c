/*
 * Learnable embedding table (trainer/embed.h).
 */
#include "trainer/embed.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

struct gnn_embed {
    gnn_backend_t *be;
    gnn_embed_config_t cfg;
    int64_t *gid;           /* host copy of cfg.gid, or NULL */
    float *w, *s[2], *best; /* backend */
    int64_t step;
};

#define INIT_BLOCK 65536 /* rows drawn on the host per upload */

int gnn_embed_states(gnn_sparse_opt_kind_t kind) { return kind == GNN_SPARSE_ADAM ? 2 : 1; }

size_t gnn_embed_row_bytes(int64_t dim, gnn_sparse_opt_kind_t kind)
{
    return (size_t)dim * sizeof(float) * (size_t)(1 + gnn_embed_states(kind));
}

static size_t table_bytes(const gnn_embed_t *e)
{
    return (size_t)e->cfg.rows * (size_t)e->cfg.dim * sizeof(float);
}

int gnn_embed_reset(gnn_embed_t *e, uint64_t seed)
{
    int rc = 0;
    int64_t d = e->cfg.dim, n = e->cfg.rows;
    uint64_t key = gnn_rng_mix64(seed ^ 0x656d626564ull); /* "embed" */
    float lim = (float)(1.0 / sqrt((double)d));
    int64_t nb = n < INIT_BLOCK ? n : INIT_BLOCK;
    float *h = gnn_malloc_array((size_t)(nb * d) + 1, sizeof *h);
    GNN_CHECK(h, GNN_ENOMEM, "embedding table: %" PRId64 " rows of %" PRId64, nb, d);
    for (int64_t r0 = 0; r0 < n; r0 += nb) {
        int64_t k = n - r0 < nb ? n - r0 : nb;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < k; i++) {
            uint64_t v = (uint64_t)(e->gid ? e->gid[r0 + i] : r0 + i);
            for (int64_t c = 0; c < d; c++)
                h[i * d + c] = (2.0f * gnn_rng_uniform(key, v * (uint64_t)d + (uint64_t)c) - 1.0f) *
                               lim;
        }
        GNN_TRY(gnn_be_upload(e->be, e->w + r0 * d, h, (size_t)(k * d) * sizeof(float)));
    }
    for (int i = 0; i < gnn_embed_states(e->cfg.opt.kind); i++)
        GNN_TRY(gnn_be_zero(e->be, e->s[i], table_bytes(e)));
    if (e->best) GNN_TRY(gnn_be_copy(e->be, e->best, e->w, table_bytes(e)));
    e->step = 0;
    GNN_TRY(gnn_be_sync(e->be)); /* h is freed next */
fail:
    gnn_free(h);
    return rc;
}

int gnn_embed_create(gnn_backend_t *be, const gnn_embed_config_t *cfg, gnn_embed_t **out)
{
    int rc = 0;
    *out = NULL;
    GNN_CHECK(cfg->rows >= 0 && cfg->dim >= 1, GNN_EINVAL,
              "embedding table: %" PRId64 " rows of width %" PRId64, cfg->rows, cfg->dim);
    GNN_CHECK(cfg->opt.kind == GNN_SPARSE_ADAM || cfg->opt.kind == GNN_SPARSE_ADAGRAD, GNN_EINVAL,
              "embedding table: unknown optimiser");
    GNN_CHECK(cfg->opt.lr > 0.0f && isfinite(cfg->opt.lr), GNN_EINVAL,
              "embedding table: learning rate %g", (double)cfg->opt.lr);
    gnn_embed_t *e = gnn_calloc(1, sizeof *e);
    GNN_CHECK(e, GNN_ENOMEM, "embedding table");
    *out = e;
    e->be = be;
    e->cfg = *cfg;
    gnn_sparse_opt_t *o = &e->cfg.opt;
    if (o->beta1 == 0.0f && o->beta2 == 0.0f) {
        o->beta1 = 0.9f;
        o->beta2 = 0.999f;
    }
    if (o->eps == 0.0f) o->eps = o->kind == GNN_SPARSE_ADAM ? 1e-8f : 1e-10f;
    if (cfg->gid) {
        e->gid = gnn_malloc_array((size_t)cfg->rows + 1, sizeof *e->gid);
        GNN_CHECK(e->gid, GNN_ENOMEM, "embedding table ids");
        memcpy(e->gid, cfg->gid, (size_t)cfg->rows * sizeof *e->gid);
    }
    e->cfg.gid = NULL;
    size_t bytes = table_bytes(e) + sizeof(float);
    GNN_TRY(gnn_be_alloc(be, bytes, (void **)&e->w));
    for (int i = 0; i < gnn_embed_states(o->kind); i++)
        GNN_TRY(gnn_be_alloc(be, bytes, (void **)&e->s[i]));
    if (cfg->keep_best) GNN_TRY(gnn_be_alloc(be, bytes, (void **)&e->best));
    GNN_TRY(gnn_embed_reset(e, cfg->seed));
    return 0;
fail:
    gnn_embed_free(*out);
    *out = NULL;
    return rc;
}

void gnn_embed_free(gnn_embed_t *e)
{
    if (!e) return;
    gnn_be_free(e->be, e->w);
    gnn_be_free(e->be, e->s[0]);
    gnn_be_free(e->be, e->s[1]);
    gnn_be_free(e->be, e->best);
    gnn_free(e->gid);
    gnn_free(e);
}

int64_t gnn_embed_dim(const gnn_embed_t *e) { return e->cfg.dim; }
gnn_backend_t *gnn_embed_backend(const gnn_embed_t *e) { return e->be; }
int64_t gnn_embed_rows(const gnn_embed_t *e) { return e->cfg.rows; }
const float *gnn_embed_table(const gnn_embed_t *e) { return e->w; }

int gnn_embed_gather(gnn_embed_t *e, int64_t n, const int64_t *rows, float *dst, int64_t ldd)
{
    return gnn_be_copy_rows(e->be, n, e->cfg.dim, e->w, e->cfg.dim, e->cfg.rows, rows, dst, ldd);
}

int gnn_embed_step(gnn_embed_t *e, int64_t n, const int64_t *rows, const float *g, int64_t ldg)
{
    e->step++;
    if (n == 0) return 0;
    return gnn_be_sparse_opt_step(e->be, &e->cfg.opt, n, e->cfg.dim, rows, e->cfg.rows, g, ldg,
                                  e->w, e->s[0], e->s[1], e->step);
}

int gnn_embed_keep_best(gnn_embed_t *e)
{
    return e->best ? gnn_be_copy(e->be, e->best, e->w, table_bytes(e)) : 0;
}

int gnn_embed_restore_best(gnn_embed_t *e)
{
    return e->best ? gnn_be_copy(e->be, e->w, e->best, table_bytes(e)) : 0;
}

int gnn_embed_download(gnn_embed_t *e, float *w, float *s1, float *s2, float *best)
{
    int rc = 0;
    size_t b = table_bytes(e);
    if (w) GNN_TRY(gnn_be_download(e->be, w, e->w, b));
    if (s1) GNN_TRY(gnn_be_download(e->be, s1, e->s[0], b));
    if (s2 && e->s[1]) GNN_TRY(gnn_be_download(e->be, s2, e->s[1], b));
    if (best && e->best) GNN_TRY(gnn_be_download(e->be, best, e->best, b));
fail:
    return rc;
}

int gnn_embed_upload(gnn_embed_t *e, const float *w, const float *s1, const float *s2,
                     const float *best)
{
    int rc = 0;
    size_t b = table_bytes(e);
    if (w) GNN_TRY(gnn_be_upload(e->be, e->w, w, b));
    if (s1) GNN_TRY(gnn_be_upload(e->be, e->s[0], s1, b));
    if (s2 && e->s[1]) GNN_TRY(gnn_be_upload(e->be, e->s[1], s2, b));
    if (best && e->best) GNN_TRY(gnn_be_upload(e->be, e->best, best, b));
    GNN_TRY(gnn_be_sync(e->be));
fail:
    return rc;
}

int64_t gnn_embed_step_count(const gnn_embed_t *e) { return e->step; }
void gnn_embed_set_step_count(gnn_embed_t *e, int64_t step) { e->step = step; }
