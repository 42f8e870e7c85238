/*
 * The registry of layer kinds, by --model name, and the helpers layers
 * share (trainer/layer.h). A new kind is one file defining
 * gnn_layer_<name> and one X(name) line in GNN_LAYER_KINDS.
 */
#include "trainer/layer.h"

#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define GNN_LAYER_KINDS(X) \
    X(gcn)                 \
    X(sage)                \
    X(gat)                 \
    X(rgcn)

#define DECLARE(name) extern const gnn_layer_kind_t gnn_layer_##name;
GNN_LAYER_KINDS(DECLARE)
#undef DECLARE

#define ENTRY(name) &gnn_layer_##name,
static const gnn_layer_kind_t *const kinds[] = {GNN_LAYER_KINDS(ENTRY)};
#undef ENTRY

#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

int gnn_layer_kind_count(void) { return N_KINDS; }

const gnn_layer_kind_t *gnn_layer_kind_at(int i)
{
    return i >= 0 && i < N_KINDS ? kinds[i] : NULL;
}

int gnn_layer_kind_find(const char *name, const gnn_layer_kind_t **out)
{
    for (int i = 0; name && i < N_KINDS; i++)
        if (!strcmp(kinds[i]->name, name)) {
            *out = kinds[i];
            return 0;
        }
    char list[256];
    gnn_layer_kind_list(list, sizeof list);
    return GNN_FAIL(GNN_EINVAL, "unknown model \"%s\" (expected %s)", name ? name : "(null)", list);
}

void gnn_layer_kind_list(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_KINDS && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s",
                               i == 0 ? "" : i == N_KINDS - 1 ? " or " : ", ", kinds[i]->name);
}

int gnn_layer_ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes) return 0;
    const size_t want = *buf && bytes <= SIZE_MAX / 5 * 4 ? bytes + bytes / 4 : bytes;
    gnn_be_free(be, *buf);
    *buf = NULL;
    *have = 0;
    size_t got = want;
    int rc = gnn_be_alloc(be, want, buf);
    if (rc < 0 && want > bytes) { /* the room asked for only */
        gnn_error_clear();
        got = bytes;
        rc = gnn_be_alloc(be, bytes, buf);
    }
    if (rc < 0) return rc;
    *have = got;
    return 0;
}

void gnn_layer_init_declared(const gnn_layer_t *L, float *w, int64_t at,
                             const gnn_aggr_param_t *ps, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++) {
        const gnn_aggr_param_t *t = &ps[i];
        int64_t count = t->rows * t->cols;
        if (t->init == GNN_AGGR_INIT_GLOROT) gnn_layer_glorot(L, w, at, t->rows, t->cols, seed);
        for (int64_t k = 0; t->init == GNN_AGGR_INIT_CONST && k < count; k++)
            w[at + k] = t->value;
        at += count; /* GNN_AGGR_INIT_ZEROS: w is zero already */
    }
}

/* w[at ...] uniform in +-lim, one counter per entry. */
static void fill_uniform(const gnn_layer_t *L, float *w, int64_t at, int64_t count, double lim,
                         uint64_t seed)
{
    uint64_t base = (uint64_t)(L->off + at);
    for (int64_t i = 0; i < count; i++)
        w[at + i] = (float)((2.0 * gnn_rng_uniform(seed, base + (uint64_t)i) - 1.0) * lim);
}

void gnn_layer_glorot(const gnn_layer_t *L, float *w, int64_t at, int64_t fin, int64_t fout,
                      uint64_t seed)
{
    fill_uniform(L, w, at, fin * fout, sqrt(6.0 / (double)(fin + fout)), seed);
}

void gnn_layer_weights(const gnn_layer_t *L, float *w, int64_t at, int64_t fin, int64_t fout,
                       uint64_t seed)
{
    if (L->init_fan_in)
        fill_uniform(L, w, at, fin * fout, 1.0 / sqrt((double)fin), seed);
    else
        gnn_layer_glorot(L, w, at, fin, fout, seed);
}

gnn_layer_tensor_t gnn_layer_tensor(const char *name, int64_t at, int64_t rows, int64_t cols,
                                    int transpose)
{
    gnn_layer_tensor_t t = {.at = at, .ndim = cols > 0 ? 2 : 1, .shape = {rows, cols, 0},
                            .transpose = transpose};
    snprintf(t.name, sizeof t.name, "%s", name);
    return t;
}

int gnn_layer_tensors_declared(const char *prefix, int64_t at, const gnn_aggr_param_t *ps,
                               int n, gnn_layer_tensor_t *t)
{
    for (int i = 0; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s%s", prefix, ps[i].name);
        t[i] = gnn_layer_tensor(name, at, ps[i].rows, ps[i].cols, 0);
        at += ps[i].rows * ps[i].cols;
    }
    return n;
}
