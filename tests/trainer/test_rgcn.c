/*
 * Tests of the R-GCN layer (trainer/layers/rgcn.c) and the relation
 * layout it reads (trainer/typed.h), through the model (trainer/model.h):
 *   - on a small random typed graph (3 node types, the middle one starting
 *     no relation; 5 relations, listed out of source-type order, two of
 *     them between the same pair of types and one from a type to itself;
 *     nodes without in-edges of some relations), 2 and 3 layers, with and
 *     without dropout, with one weight per relation or B = 1, 2, R bases:
 *     the loss against a double-precision model written from the layer's
 *     formula, every parameter gradient and every input gradient against
 *     central differences of that model;
 *   - the same on rectangular blocks whose sources are not grouped by type
 *     (the permuted path), one layer and a chain of two, and on blocks
 *     without any node of a type that starts relations, or without
 *     relations at all; a model over ranks on a rank with no rows;
 *   - the layout the attachment makes of the full graph; auto's choice of
 *     order from the layer's widths (every gradient test above runs in
 *     each order, on the world and on a variant where no relation ends at
 *     one type);
 *   - the cpu and cpu-as-gpu backends give bitwise-equal logits and
 *     gradients (cpu-as-gpu refuses any host pointer a layer would read);
 *   - layer-wise inference equals the forward without dropout;
 *   - configuration and graph errors, and the attachment under allocation
 *     failure.
 * Randomised: the seed is printed, GNN_TEST_SEED replays it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"
#include "graph/csr.h"
#include "graph/graph_file.h"
#include "kernels/aggr.h"
#include "kernels/backend.h"
#include "kernels/dense.h"
#include "trainer/model.h"
#include "trainer/typed.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;
/* The order the layer graphs offer (every gradient test runs each). */
static gnn_typed_order_t g_order = GNN_TYPED_AUTO;
static const gnn_typed_order_t k_orders[3] = {GNN_TYPED_AUTO, GNN_TYPED_TRANSFORM_FIRST,
                                              GNN_TYPED_AGGREGATE_FIRST};
static const char *const k_order_names[3] = {"auto", "transform-first", "aggregate-first"};

static void expect_error(int rc, int code, const char *want)
{
    assert_int_equal(rc, code);
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

static double unit(uint64_t *s) { return (double)(tu_rng_next(s) >> 11) * 0x1p-53; }

/* ---- The typed graph --------------------------------------------------- */

enum { T = 3, R = 5, CLASSES = 3 };

/*
 * Node types a, b, c (6 to 10 nodes each); b starts no relation. The
 * relations, not in the order of their source types:
 *   r0 c->a, r1 a->c, r2 c->c, r3 a->c (the ends of r1), r4 a->b;
 * in the variant (g_r4_to_a) r4 is a->a, so that no relation ends at b
 * either (b's destinations take the self term alone).
 */
static const int rel_src[R] = {2, 0, 2, 0, 0};
static int rel_dst[R] = {0, 2, 2, 2, 1};
static int g_r4_to_a;

typedef struct {
    gnn_graph_types_t types;
    int64_t n;
    gnn_csr_t a;     /* in-edges of every node (rows: destinations) */
    int32_t *etype;  /* the relation of each stored edge */
} world_t;

/* Edges u -> v of relation r with probability 0.35, except into the first
 * node of each destination type for odd r (no in-edges of those). */
static void world(world_t *w, uint64_t *s)
{
    memset(w, 0, sizeof *w);
    gnn_graph_types_t *t = &w->types;
    t->n_ntypes = T;
    t->n_rels = R;
    for (int k = 0; k < T; k++) {
        t->off[k + 1] = t->off[k] + 6 + (int64_t)(tu_rng_next(s) % 5);
        snprintf(t->ntype[k], sizeof t->ntype[k], "%c", 'a' + k);
    }
    rel_dst[4] = g_r4_to_a ? 0 : 1;
    for (int r = 0; r < R; r++) {
        t->rel_src[r] = rel_src[r];
        t->rel_dst[r] = rel_dst[r];
        snprintf(t->rel[r], sizeof t->rel[r], "r%d", r);
    }
    t->target = 0;
    int64_t n = w->n = t->off[T];
    assert_int_equal(gnn_graph_types_check(t, n, "test"), 0);
    /* At most R n edges into each node (r2 may make self loops). */
    w->a.n_rows = w->a.n_cols = n;
    w->a.indptr = calloc((size_t)n + 1, sizeof *w->a.indptr);
    w->a.indices = malloc((size_t)(R * n * n + 1) * sizeof *w->a.indices);
    w->etype = malloc((size_t)(R * n * n + 1) * sizeof *w->etype);
    assert_true(w->a.indptr && w->a.indices && w->etype);
    int64_t e = 0;
    for (int64_t v = 0; v < n; v++) {
        int tv = gnn_graph_types_of(t, v);
        for (int r = 0; r < R; r++) {
            if (rel_dst[r] != tv || (r % 2 && v == t->off[tv])) continue;
            for (int64_t u = t->off[rel_src[r]]; u < t->off[rel_src[r] + 1]; u++)
                if (unit(s) < 0.35) {
                    w->a.indices[e] = u;
                    w->etype[e++] = r;
                }
        }
        w->a.indptr[v + 1] = e;
    }
    w->a.nnz = e;
    w->a.flags = 0;
}

static void world_free(world_t *w)
{
    free(w->a.indptr), free(w->a.indices), free(w->etype);
}

/* ---- Layer graphs ------------------------------------------------------ */

/* A layer's graph on the host: the full graph, or a block whose source j
 * is graph node gid[j] (the first n_dst sources its destinations). */
typedef struct {
    gnn_csr_t csr;
    int32_t *etype;
    int64_t *gid; /* NULL: source j is node j */
    int own;      /* csr, etype and gid are the block's (freed with it) */
} lgraph_t;

static void lgraph_full(const world_t *w, lgraph_t *g)
{
    g->csr = w->a;
    g->etype = w->etype;
    g->gid = NULL;
    g->own = 0;
}

/* The block with destinations order[0 .. nd) and sources order[0 .. ns):
 * the graph's in-edges of the destinations whose sources are among them. */
static void lgraph_block(const world_t *w, const int64_t *order, int64_t nd, int64_t ns,
                         lgraph_t *g)
{
    memset(g, 0, sizeof *g);
    int64_t *loc = malloc((size_t)w->n * sizeof *loc);
    assert_non_null(loc);
    for (int64_t v = 0; v < w->n; v++) loc[v] = -1;
    for (int64_t j = 0; j < ns; j++) loc[order[j]] = j;
    g->own = 1;
    g->gid = malloc((size_t)ns * sizeof *g->gid + 1);
    g->csr.n_rows = nd;
    g->csr.n_cols = ns;
    g->csr.indptr = calloc((size_t)nd + 1, sizeof *g->csr.indptr);
    g->csr.indices = malloc((size_t)(w->a.nnz + 1) * sizeof *g->csr.indices);
    g->etype = malloc((size_t)(w->a.nnz + 1) * sizeof *g->etype);
    assert_true(g->gid && g->csr.indptr && g->csr.indices && g->etype);
    memcpy(g->gid, order, (size_t)ns * sizeof *g->gid);
    int64_t e = 0;
    for (int64_t i = 0; i < nd; i++) {
        int64_t v = order[i];
        for (int64_t k = w->a.indptr[v]; k < w->a.indptr[v + 1]; k++)
            if (loc[w->a.indices[k]] >= 0) {
                g->csr.indices[e] = loc[w->a.indices[k]];
                g->etype[e++] = w->etype[k];
            }
        g->csr.indptr[i + 1] = e;
    }
    g->csr.nnz = e;
    g->csr.flags = 0;
    free(loc);
}

static void lgraph_free(lgraph_t *g)
{
    if (!g->own) return;
    free(g->csr.indptr), free(g->csr.indices), free(g->etype), free(g->gid);
}

/* g prepared on be with its relation layout attached. */
static gnn_bgraph_t *prepare(gnn_backend_t *be, const world_t *w, const lgraph_t *g)
{
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &g->csr, &bg), 0);
    int rc = gnn_typed_graph_attach(be, bg, &g->csr, g->etype, g->gid, &w->types, g_order, 0, 0);
    if (rc != 0) fail_msg("attach: %s", gnn_error_message());
    const gnn_typed_graph_t *t = gnn_bgraph_attached(bg);
    int agg = g_order == GNN_TYPED_AGGREGATE_FIRST; /* auto without widths: products first */
    if ((t->ug != NULL) != agg || (t->vg != NULL) == agg)
        fail_msg("attach in order %d built ug %p and vg %p", (int)g_order, (void *)t->ug,
                 (void *)t->vg);
    return bg;
}

/* ---- The double-precision model ---------------------------------------- */

/*
 * The model written from the layer's definition, in double precision:
 * per layer D = dropout(H) (the model's mask: element i of the layer's
 * n_src x fin input kept when gnn_rng_keep(key, off + i, p)), then
 *   Z[v] = D[v] W_self + sum_r 1/|N_r(v)| sum_{u -> v of r} D[u] W_r + b
 * (W_r = sum_b a[r][b] V_b with bases), ReLU but after the last layer;
 * the loss is the mean cross-entropy of the rows idx.
 */
typedef struct {
    int layers, bases;
    int64_t dims[GNN_MODEL_MAX_LAYERS + 1];
    float p;
    uint64_t key;
    const lgraph_t *g[GNN_MODEL_MAX_LAYERS];
    const double *x;      /* n_src of layer 0 x dims[0] */
    const int64_t *labels; /* per output row */
    const int64_t *idx;
    int64_t nidx;
} ref_t;

/* Layer l's output (n_dst x fout) of its input h, parameters at w. */
static void ref_layer(const ref_t *r, int l, const double *w, const double *h, uint64_t *off,
                      double *z)
{
    const gnn_csr_t *a = &r->g[l]->csr;
    const int32_t *et = r->g[l]->etype;
    int64_t ns = a->n_cols, nd = a->n_rows, fin = r->dims[l], fout = r->dims[l + 1];
    int64_t fw = fin * fout, B = r->bases;
    double *d = malloc((size_t)(ns * fin + 1) * sizeof *d);
    double *wr = calloc((size_t)(R * fw + 1), sizeof *wr);
    assert_true(d && wr);
    double scale = (double)(float)(1.0 / (1.0 - (double)r->p));
    for (int64_t i = 0; i < ns * fin; i++) {
        int keep = r->p == 0.0f || gnn_rng_keep(r->key, *off + (uint64_t)i, r->p);
        d[i] = keep ? h[i] * (r->p > 0.0f ? scale : 1.0) : 0.0;
    }
    if (r->p > 0.0f) *off += (uint64_t)(ns * fin);
    const double *ws = w, *bias = w + fw * (1 + (B ? B : R)) + (B ? R * B : 0);
    for (int q = 0; q < R; q++)
        for (int64_t i = 0; i < fw; i++)
            if (B) {
                const double *ca = w + fw * (1 + B) + q * B;
                for (int64_t b = 0; b < B; b++) wr[q * fw + i] += ca[b] * w[fw * (1 + b) + i];
            } else
                wr[q * fw + i] = w[fw * (1 + q) + i];
    for (int64_t v = 0; v < nd; v++) {
        int cnt[R] = {0};
        for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) cnt[et[e]]++;
        for (int64_t o = 0; o < fout; o++) {
            double s = bias[o];
            for (int64_t k = 0; k < fin; k++) s += d[v * fin + k] * ws[k * fout + o];
            for (int q = 0; q < R; q++) {
                if (!cnt[q]) continue;
                double sq = 0.0;
                for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
                    if (et[e] != q) continue;
                    const double *du = d + a->indices[e] * fin;
                    for (int64_t k = 0; k < fin; k++) sq += du[k] * wr[q * fw + k * fout + o];
                }
                s += sq / (double)cnt[q];
            }
            z[v * fout + o] = l < r->layers - 1 && s < 0.0 ? 0.0 : s;
        }
    }
    free(d), free(wr);
}

static int64_t layer_count(int64_t fin, int64_t fout, int bases)
{
    return fin * fout * (1 + (bases ? bases : R)) + (bases ? R * bases : 0) + fout;
}

/* The logits (n_dst of the last layer x classes) into out when not NULL;
 * returns the loss. */
static double ref_forward(const ref_t *r, const double *w, double *out)
{
    int64_t ns0 = r->g[0]->csr.n_cols;
    double *h = malloc((size_t)(ns0 * r->dims[0] + 1) * sizeof *h);
    assert_non_null(h);
    memcpy(h, r->x, (size_t)(ns0 * r->dims[0]) * sizeof *h);
    uint64_t off = 0;
    int64_t base = 0;
    for (int l = 0; l < r->layers; l++) {
        int64_t nd = r->g[l]->csr.n_rows;
        double *z = malloc((size_t)(nd * r->dims[l + 1] + 1) * sizeof *z);
        assert_non_null(z);
        ref_layer(r, l, w + base, h, &off, z);
        base += layer_count(r->dims[l], r->dims[l + 1], r->bases);
        free(h);
        h = z;
    }
    int64_t C = r->dims[r->layers], nd = r->g[r->layers - 1]->csr.n_rows;
    if (out) memcpy(out, h, (size_t)(nd * C) * sizeof *h);
    double loss = 0.0;
    for (int64_t j = 0; j < r->nidx; j++) {
        const double *row = h + r->idx[j] * C;
        double mx = row[0], se = 0.0;
        for (int64_t c = 1; c < C; c++) mx = fmax(mx, row[c]);
        for (int64_t c = 0; c < C; c++) se += exp(row[c] - mx);
        loss += mx + log(se) - row[r->labels[r->idx[j]]];
    }
    free(h);
    return loss / (double)r->nidx;
}

static double ref_loss(const ref_t *r, const double *w) { return ref_forward(r, w, NULL); }

/*
 * The backward's gradients got[i] of the n values v[i] (parameters or
 * input elements of r, at parameters w) against central differences of
 * its loss, with steps 1e-6 and 1e-7 (a ReLU switch within one step bends
 * one of them, not both; the backward must match one). Returns how many
 * are off; what and label name them in messages.
 */
static int fd_mismatches(const ref_t *r, const double *w, double *v, int64_t n, const float *got,
                         double gmax, const char *label, const char *what)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i], fd[2];
        for (int k = 0; k < 2; k++) {
            double hh = k ? 1e-7 : 1e-6;
            v[i] = keep + hh;
            double lp = ref_loss(r, w);
            v[i] = keep - hh;
            double lm = ref_loss(r, w);
            fd[k] = (lp - lm) / (2.0 * hh);
        }
        v[i] = keep;
        int ok = 0;
        for (int k = 0; k < 2; k++)
            ok |= fabs(fd[k] - got[i]) <= 1e-4 * gmax + (k ? 1e-2 : 1e-3) * fabs(fd[k]);
        if (!ok && bad++ < 5)
            print_message("%s: %s %" PRId64 ": backward %.6g, differences %.6g\n", label, what, i,
                          (double)got[i], fd[0]);
    }
    return bad;
}

/* ---- The model on a backend -------------------------------------------- */

typedef struct {
    int layers, bases;
    int64_t f, hidden;
    float dropout;
} cfg_t;

/* A model on be with its graphs, input and targets, all in backend
 * buffers (so that it runs on cpu-as-gpu as on cpu). */
typedef struct {
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    gnn_model_t *m;
    int layers;
    gnn_bgraph_t *bg[GNN_MODEL_MAX_LAYERS]; /* owned: distinct ones */
    int n_bg;
    gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS];
    int64_t n_in, n_out, f, np;
    float *x, *dl;  /* backend: input, dlogits */
    float *xh;      /* host copy of the input */
    const int64_t *labels, *idx;
    int64_t nidx;
} run_t;

/* The model of c on the backend called backend over the layer graphs g
 * (prepared here; g[l] == g[l - 1] shares one prepared graph), input xh,
 * parameters of seed 5 with the zero ones (biases) drawn small from s. */
static void run_open(run_t *u, const char *backend, const world_t *w, const lgraph_t *const *g,
                     const cfg_t *c, const float *xh, const int64_t *labels, const int64_t *idx,
                     int64_t nidx, uint64_t s)
{
    memset(u, 0, sizeof *u);
    assert_int_equal(gnn_backend_open(backend, &u->be), 0);
    assert_int_equal(gnn_aggr_registry_create(&u->reg), 0);
    u->layers = c->layers;
    for (int l = 0; l < c->layers; l++) {
        if (l > 0 && g[l] == g[l - 1]) {
            u->gs[l] = u->gs[l - 1];
            continue;
        }
        u->gs[l] = u->bg[u->n_bg++] = prepare(u->be, w, g[l]);
    }
    u->n_in = g[0]->csr.n_cols;
    u->n_out = g[c->layers - 1]->csr.n_rows;
    u->f = c->f;
    gnn_model_config_t cfg = {.kind = GNN_MODEL_RGCN, .layers = c->layers, .in_dim = c->f,
                              .hidden = c->hidden, .classes = CLASSES, .dropout = c->dropout,
                              .relations = R, .num_bases = c->bases};
    int rc = gnn_model_create(u->be, u->reg, &cfg, 5, &u->m);
    if (rc != 0) fail_msg("model: %s", gnn_error_message());
    /* Blocks of 3 rows: a whole graph's input gradient is formed block by
     * block (types of 6-10 nodes span several, one ends mid-block). */
    gnn_model_set_block_rows(u->m, 3);
    int64_t np = u->np = gnn_model_n_params(u->m);
    float *wh = malloc((size_t)np * sizeof *wh);
    assert_non_null(wh);
    assert_int_equal(gnn_be_download(u->be, wh, gnn_model_params(u->m), np * sizeof *wh), 0);
    for (int64_t i = 0; i < np; i++)
        if (wh[i] == 0.0f) wh[i] = 0.05f * ((float)unit(&s) - 0.5f);
    assert_int_equal(gnn_be_upload(u->be, gnn_model_params(u->m), wh, np * sizeof *wh), 0);
    free(wh);
    size_t xb = (size_t)(u->n_in * c->f) * sizeof(float);
    u->xh = malloc(xb + 1);
    assert_non_null(u->xh);
    memcpy(u->xh, xh, xb);
    assert_int_equal(gnn_be_alloc(u->be, xb, (void **)&u->x), 0);
    assert_int_equal(gnn_be_alloc(u->be, (size_t)(u->n_out * CLASSES) * sizeof(float),
                                  (void **)&u->dl),
                     0);
    u->labels = labels;
    u->idx = idx;
    u->nidx = nidx;
}

static void run_close(run_t *u)
{
    gnn_model_free(u->m);
    gnn_be_free(u->be, u->x);
    gnn_be_free(u->be, u->dl);
    for (int i = 0; i < u->n_bg; i++) gnn_be_graph_free(u->bg[i]);
    free(u->xh);
    gnn_aggr_registry_free(u->reg);
    gnn_backend_close(u->be);
}

static void download(run_t *u, float *dst, const float *src, int64_t n)
{
    assert_int_equal(gnn_be_download(u->be, dst, src, (size_t)n * sizeof *dst), 0);
}

/* A forward (training: the dropout stream reset to (99, 0)) from a fresh
 * copy of the input; the logits into logits (host) when not NULL; the loss. */
static double run_forward(run_t *u, int training, float *logits)
{
    const float *lg;
    assert_int_equal(gnn_be_upload(u->be, u->x, u->xh, (size_t)(u->n_in * u->f) * sizeof(float)),
                     0);
    gnn_model_set_rng(u->m, 99, 0);
    int rc = gnn_model_forward(u->m, u->gs, u->x, training, &lg);
    if (rc != 0) fail_msg("forward: %s", gnn_error_message());
    int64_t nl = u->n_out * CLASSES;
    float *lh = malloc((size_t)nl * sizeof *lh), *dh = malloc((size_t)nl * sizeof *dh);
    assert_true(lh && dh);
    download(u, lh, lg, nl);
    double loss;
    assert_int_equal(gnn_softmax_xent(u->n_out, CLASSES, lh, u->labels, u->idx, u->nidx, &loss, dh),
                     0);
    assert_int_equal(gnn_be_upload(u->be, u->dl, dh, (size_t)nl * sizeof *dh), 0);
    if (logits) memcpy(logits, lh, (size_t)nl * sizeof *lh);
    free(lh), free(dh);
    return loss;
}

/* A training step's gradients: parameters into gp, the input's into gx
 * (when the model forms it; NULL otherwise). The loss. */
static double run_gradients(run_t *u, float *logits, float *gp, float *gx)
{
    double loss = run_forward(u, 1, logits);
    int rc = gnn_model_backward(u->m, u->dl);
    if (rc != 0) fail_msg("backward: %s", gnn_error_message());
    download(u, gp, gnn_model_grads(u->m), u->np);
    if (gx) {
        const float *g = gnn_model_input_grad(u->m);
        assert_non_null(g);
        download(u, gx, g, u->n_in * u->f);
    }
    return loss;
}

/* ---- Gradient checks ---------------------------------------------------- */

/* Dense input rows in [-0.5, 0.5), labels, every other output row as a
 * target. */
typedef struct {
    float *x;
    int64_t *labels, *idx, nidx;
} data_t;

static void data(data_t *dt, int64_t n_in, int64_t f, int64_t n_out, uint64_t *s)
{
    dt->x = malloc((size_t)(n_in * f) * sizeof *dt->x);
    dt->labels = malloc((size_t)n_out * sizeof *dt->labels);
    dt->idx = malloc((size_t)n_out * sizeof *dt->idx);
    assert_true(dt->x && dt->labels && dt->idx);
    for (int64_t i = 0; i < n_in * f; i++) dt->x[i] = (float)unit(s) - 0.5f;
    for (int64_t v = 0; v < n_out; v++) dt->labels[v] = (int64_t)(tu_rng_next(s) % CLASSES);
    dt->nidx = 0;
    for (int64_t v = n_out % 2; v < n_out; v += 2) dt->idx[dt->nidx++] = v;
}

static void data_free(data_t *dt) { free(dt->x), free(dt->labels), free(dt->idx); }

/*
 * The model of c on the layer graphs g: the loss against the double model,
 * parameter gradients the same with and without the input gradient, and
 * both against central differences of the double model.
 */
static void check_on(const world_t *w, const lgraph_t *const *g, const cfg_t *c, uint64_t s,
                     const char *what)
{
    char label[160];
    const char *order = "auto";
    for (int o = 0; o < 3; o++)
        if (k_orders[o] == g_order) order = k_order_names[o];
    snprintf(label, sizeof label, "%s%s, %s, %d layers, B = %d, dropout %g (seed %" PRIu64 ")",
             what, g_r4_to_a ? " (r4 a->a)" : "", order, c->layers, c->bases, (double)c->dropout,
             g_seed);
    int64_t n_in = g[0]->csr.n_cols, n_out = g[c->layers - 1]->csr.n_rows, nx = n_in * c->f;
    data_t dt;
    data(&dt, n_in, c->f, n_out, &s);
    run_t u;
    run_open(&u, "cpu", w, g, c, dt.x, dt.labels, dt.idx, dt.nidx, s);
    int64_t np = u.np;
    float *gp0 = malloc((size_t)np * sizeof *gp0), *gp = malloc((size_t)np * sizeof *gp);
    float *gx = malloc((size_t)nx * sizeof *gx), *wf = malloc((size_t)np * sizeof *wf);
    assert_true(gp0 && gp && gx && wf);
    /* Without the input gradient, then with it: the same parameter gradients. */
    run_gradients(&u, NULL, gp0, NULL);
    assert_null(gnn_model_input_grad(u.m));
    assert_int_equal(gnn_model_set_input_grad(u.m, 1), 0);
    double lf = run_gradients(&u, NULL, gp, gx);
    for (int64_t i = 0; i < np; i++)
        if (gp[i] != gp0[i])
            fail_msg("%s: param %" PRId64 ": %g with the input gradient, %g without", label, i,
                     (double)gp[i], (double)gp0[i]);
    /* The double model. */
    ref_t r = {.layers = c->layers, .bases = c->bases, .p = c->dropout,
               .key = gnn_model_dropout_key(u.m), .labels = dt.labels, .idx = dt.idx,
               .nidx = dt.nidx};
    r.dims[0] = c->f;
    for (int l = 1; l < c->layers; l++) r.dims[l] = c->hidden;
    r.dims[c->layers] = CLASSES;
    for (int l = 0; l < c->layers; l++) r.g[l] = g[l];
    int64_t want = 0;
    for (int l = 0; l < c->layers; l++) want += layer_count(r.dims[l], r.dims[l + 1], c->bases);
    assert_int_equal(np, want);
    double *wd = malloc((size_t)np * sizeof *wd), *xd = malloc((size_t)nx * sizeof *xd);
    assert_true(wd && xd);
    download(&u, wf, gnn_model_params(u.m), np);
    for (int64_t i = 0; i < np; i++) wd[i] = wf[i];
    for (int64_t i = 0; i < nx; i++) xd[i] = dt.x[i];
    r.x = xd;
    double l0 = ref_loss(&r, wd);
    if (fabs(l0 - lf) > 1e-5 * fmax(1.0, fabs(l0)))
        fail_msg("%s: loss %.9g, double-precision model %.9g", label, lf, l0);
    double gmax = 0.0, xmax = 0.0;
    for (int64_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(gp[i]));
    for (int64_t i = 0; i < nx; i++) xmax = fmax(xmax, fabs(gx[i]));
    assert_true(gmax > 0.0 && xmax > 0.0);
    int bad = fd_mismatches(&r, wd, wd, np, gp, gmax, label, "param");
    if (bad) fail_msg("%s: %d of %" PRId64 " parameter gradients off", label, bad, np);
    bad = fd_mismatches(&r, wd, xd, nx, gx, xmax, label, "input");
    if (bad) fail_msg("%s: %d of %" PRId64 " input gradients off", label, bad, nx);
    free(wd), free(xd);
    free(gp0), free(gp), free(gx), free(wf);
    run_close(&u);
    data_free(&dt);
}

/* A random order of the n nodes, not grouped by type, with every type
 * among the first ns. */
static void shuffled(const world_t *w, int64_t ns, uint64_t *s, int64_t *order)
{
    int64_t n = w->n;
    for (;;) {
        for (int64_t v = 0; v < n; v++) order[v] = v;
        for (int64_t v = n - 1; v > 0; v--) {
            int64_t j = (int64_t)(tu_rng_next(s) % (uint64_t)(v + 1)), x = order[v];
            order[v] = order[j];
            order[j] = x;
        }
        int seen[T] = {0}, sorted = 1;
        for (int64_t j = 0; j < ns; j++) {
            int t = gnn_graph_types_of(&w->types, order[j]);
            seen[t] = 1;
            if (j > 0 && t < gnn_graph_types_of(&w->types, order[j - 1])) sorted = 0;
        }
        if (!sorted && seen[0] && seen[1] && seen[2]) return;
    }
}

static void full_graph_gradients_once(void **state)
{
    (void)state;
    static const cfg_t cases[] = {
        {2, 0, 5, 4, 0.0f}, {2, 0, 5, 4, 0.3f}, {3, 0, 4, 5, 0.0f}, {3, 0, 4, 5, 0.25f},
        {2, 1, 5, 4, 0.0f}, {2, 1, 5, 4, 0.3f}, {3, 1, 4, 5, 0.2f},
        {2, 2, 5, 4, 0.0f}, {2, 2, 5, 4, 0.3f}, {3, 2, 4, 5, 0.0f}, {3, 2, 4, 5, 0.25f},
        {2, R, 5, 4, 0.0f}, {2, R, 5, 4, 0.3f}, {3, R, 4, 5, 0.2f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t s = g_seed ^ (0x9e37ull * (i + 1));
        world_t w;
        world(&w, &s);
        lgraph_t full;
        lgraph_full(&w, &full);
        const lgraph_t *g[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cases[i].layers; l++) g[l] = &full;
        check_on(&w, g, &cases[i], s, "full graph");
        world_free(&w);
    }
}

/* full_graph_gradients in each order the layer graphs can offer, on both worlds. */
static void test_full_graph_gradients(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        full_graph_gradients_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* The layout the attachment made: the full graph in type order, with the
 * relations of each type in order of their ids and b without any. */
static void test_layout(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    world_t w;
    world(&w, &s);
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    lgraph_t full;
    lgraph_full(&w, &full);
    gnn_bgraph_t *bg = prepare(be, &w, &full);
    const gnn_typed_graph_t *t = gnn_bgraph_attached(bg);
    assert_non_null(t);
    assert_null(t->perm);
    assert_int_equal(t->n_types, T);
    assert_int_equal(t->n_rels, R);
    /* a: r1 r3 r4; b: none; c: r0 r2. */
    static const int order[R] = {1, 3, 4, 0, 2};
    for (int q = 0; q < R; q++) {
        assert_int_equal(t->order[q], order[q]);
        assert_int_equal(t->order[t->pos[q]], q);
    }
    assert_int_equal(t->k[0], 3);
    assert_int_equal(t->k[1], 0);
    assert_int_equal(t->k[2], 2);
    int64_t nv = 0;
    for (int k = 0; k < T; k++) {
        assert_int_equal(t->cnt[k], w.types.off[k + 1] - w.types.off[k]);
        assert_int_equal(t->start[k], w.types.off[k]);
        assert_int_equal(t->vbase[k], nv);
        nv += t->cnt[k] * t->k[k];
    }
    assert_int_equal(t->nv, nv);
    gnn_be_graph_free(bg);
    gnn_backend_close(be);
    world_free(&w);
}

/*
 * Blocks whose sources are not grouped by type (the permuted path): one
 * rectangular layer, and a chain of two (the second block's sources the
 * first's destinations), gradients as on the full graph.
 */
static void block_gradients_once(void **state)
{
    (void)state;
    static const cfg_t one[] = {
        {1, 0, 5, 0, 0.0f}, {1, 0, 5, 0, 0.3f}, {1, 2, 5, 0, 0.3f}, {1, R, 4, 0, 0.0f},
    };
    static const cfg_t two[] = {{2, 0, 5, 4, 0.3f}, {2, 2, 4, 5, 0.0f}};
    for (size_t i = 0; i < sizeof one / sizeof one[0] + sizeof two / sizeof two[0]; i++) {
        uint64_t s = g_seed ^ (0x7f4aull * (i + 1));
        world_t w;
        world(&w, &s);
        int64_t *order = malloc((size_t)w.n * sizeof *order);
        assert_non_null(order);
        lgraph_t b[2];
        const lgraph_t *g[2];
        const cfg_t *c;
        gnn_backend_t *be;
        assert_int_equal(gnn_backend_open("cpu", &be), 0);
        if (i < sizeof one / sizeof one[0]) {
            c = &one[i];
            int64_t ns = w.n - 4, nd = ns / 2;
            shuffled(&w, ns, &s, order);
            lgraph_block(&w, order, nd, ns, &b[0]);
            g[0] = &b[0];
        } else {
            c = &two[i - sizeof one / sizeof one[0]];
            int64_t n0 = w.n - 2, n1 = n0 - 6, n2 = n1 - 5;
            shuffled(&w, n1, &s, order);
            lgraph_block(&w, order, n1, n0, &b[0]);
            lgraph_block(&w, order, n2, n1, &b[1]);
            g[0] = &b[0];
            g[1] = &b[1];
        }
        /* The layout is permuted, and some type starts no relation. */
        for (int l = 0; l < c->layers; l++) {
            gnn_bgraph_t *bg = prepare(be, &w, g[l]);
            const gnn_typed_graph_t *t = gnn_bgraph_attached(bg);
            if (g_order != GNN_TYPED_AGGREGATE_FIRST) /* else ug, by destination */
                assert_non_null(t->perm);
            assert_true(t->cnt[1] > 0 && t->k[1] == 0);
            gnn_be_graph_free(bg);
        }
        gnn_backend_close(be);
        check_on(&w, g, c, s, c->layers == 1 ? "block" : "two blocks");
        for (int l = 0; l < c->layers; l++) lgraph_free(&b[l]);
        free(order);
        world_free(&w);
    }
}

/* block_gradients in each order the layer graphs can offer, on both worlds. */
static void test_block_gradients(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        block_gradients_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* A block without any node of a (the type with most relations): its
 * relations have no virtual sources, their weights no gradient. */
static void block_without_a_type_once(void **state)
{
    (void)state;
    static const cfg_t cases[] = {{1, 0, 5, 0, 0.3f}, {1, 2, 4, 0, 0.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t s = g_seed ^ (0x2b1dull * (i + 1));
        world_t w;
        world(&w, &s);
        int64_t *order = malloc((size_t)w.n * sizeof *order);
        assert_non_null(order);
        /* The nodes of b and c shuffled (b's first, so not in type order). */
        int64_t a0 = w.types.off[1], ns = w.n - a0;
        for (int64_t j = 0; j < ns; j++) order[j] = a0 + j;
        for (int64_t j = ns - 1; j > 0; j--) {
            int64_t k = (int64_t)(tu_rng_next(&s) % (uint64_t)(j + 1)), x = order[j];
            order[j] = order[k];
            order[k] = x;
        }
        if (order[0] < w.types.off[2]) { /* c first, then b somewhere after it */
            int64_t k = 1;
            while (order[k] < w.types.off[2]) k++;
            int64_t x = order[0];
            order[0] = order[k];
            order[k] = x;
        }
        lgraph_t b;
        lgraph_block(&w, order, ns / 2, ns, &b);
        gnn_backend_t *be;
        assert_int_equal(gnn_backend_open("cpu", &be), 0);
        gnn_bgraph_t *bg = prepare(be, &w, &b);
        const gnn_typed_graph_t *t = gnn_bgraph_attached(bg);
        if (g_order != GNN_TYPED_AGGREGATE_FIRST) /* else ug, by destination */
            assert_non_null(t->perm);
        assert_true(t->cnt[0] == 0 && t->k[0] == 3 && t->cnt[1] > 0 && t->cnt[2] > 0);
        assert_int_equal(t->nv, t->cnt[2] * 2);
        gnn_be_graph_free(bg);
        gnn_backend_close(be);
        const lgraph_t *g[1] = {&b};
        check_on(&w, g, &cases[i], s, "block without a");
        lgraph_free(&b);
        free(order);
        world_free(&w);
    }
}

/* block_without_a_type in each order the layer graphs can offer, on both worlds. */
static void test_block_without_a_type(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        block_without_a_type_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* Halo hooks that count their calls. */
static int count_forward(void *ctx, int k, int training, float *x, int64_t f)
{
    (void)k, (void)training, (void)x, (void)f;
    ((int *)ctx)[0]++;
    return 0;
}

static int count_backward(void *ctx, int k, float *g, int64_t f)
{
    (void)k, (void)g, (void)f;
    ((int *)ctx)[1]++;
    return 0;
}

/*
 * Layouts without virtual sources: a block of nodes of b only (no
 * relation starts there: the aggregation is empty, the input gradient is
 * the self term's), gradients as above; and a model over ranks on a rank
 * with no rows, whose graph has no sources at all: a training forward and
 * the backward succeed on both backends, every exchange is made, the
 * gradients are zero.
 */
static void no_virtual_sources_once(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x6a09ull;
    world_t w;
    world(&w, &s);
    int64_t nb = w.types.off[2] - w.types.off[1];
    int64_t *order = malloc((size_t)nb * sizeof *order);
    assert_non_null(order);
    for (int64_t j = 0; j < nb; j++) order[j] = w.types.off[2] - 1 - j;
    lgraph_t b;
    lgraph_block(&w, order, nb - 2, nb, &b);
    assert_int_equal(b.csr.nnz, 0);
    static const cfg_t cases[] = {{1, 0, 4, 0, 0.3f}, {1, 2, 4, 0, 0.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const lgraph_t *g[1] = {&b};
        check_on(&w, g, &cases[i], s, "block of b");
    }
    lgraph_free(&b);
    free(order);

    static const char *const names[2] = {"cpu", "cpu-as-gpu"};
    for (int k = 0; k < 2; k++) {
        gnn_backend_t *be;
        gnn_aggr_registry_t *reg;
        assert_int_equal(gnn_backend_open(names[k], &be), 0);
        assert_int_equal(gnn_aggr_registry_create(&reg), 0);
        gnn_csr_t a = {0};
        int64_t indptr[1] = {0}, indices[1] = {0};
        int32_t et[1] = {0};
        a.indptr = indptr;
        a.indices = indices;
        gnn_bgraph_t *bg;
        assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
        int rc = gnn_typed_graph_attach(be, bg, &a, et, NULL, &w.types, g_order, 0, 0);
        if (rc != 0) fail_msg("%s: attach: %s", names[k], gnn_error_message());
        float *x, *dl;
        int64_t *ids;
        assert_int_equal(gnn_be_alloc(be, 0, (void **)&x), 0);
        assert_int_equal(gnn_be_alloc(be, 0, (void **)&dl), 0);
        assert_int_equal(gnn_be_alloc(be, 0, (void **)&ids), 0);
        for (int bases = 0; bases <= 2; bases += 2) {
            gnn_model_config_t cfg = {.kind = GNN_MODEL_RGCN, .layers = 2, .in_dim = 4,
                                      .hidden = 3, .classes = CLASSES, .dropout = 0.5f,
                                      .relations = R, .num_bases = bases};
            gnn_model_t *m;
            assert_int_equal(gnn_model_create(be, reg, &cfg, 1, &m), 0);
            int calls[2] = {0, 0};
            gnn_model_halo_t h = {.ctx = calls, .forward = count_forward,
                                  .backward = count_backward, .n_rows = 0, .row_id = ids,
                                  .n_global = w.n};
            assert_int_equal(gnn_model_set_halo(m, &h), 0);
            gnn_bgraph_t *gs[2] = {bg, bg};
            const float *logits;
            rc = gnn_model_forward(m, gs, x, 1, &logits);
            if (rc == 0) rc = gnn_model_backward(m, dl);
            if (rc != 0) fail_msg("%s, B = %d, no rows: %s", names[k], bases, gnn_error_message());
            assert_int_equal(calls[0], 1);
            assert_int_equal(calls[1], 1);
            int64_t np = gnn_model_n_params(m);
            float *gp = malloc((size_t)np * sizeof *gp);
            assert_non_null(gp);
            assert_int_equal(gnn_be_download(be, gp, gnn_model_grads(m), (size_t)np * sizeof *gp),
                             0);
            for (int64_t q = 0; q < np; q++)
                if (gp[q] != 0.0f)
                    fail_msg("%s, B = %d, no rows: gradient %" PRId64 " is %g", names[k], bases, q,
                             (double)gp[q]);
            free(gp);
            gnn_model_free(m);
        }
        gnn_be_free(be, x);
        gnn_be_free(be, dl);
        gnn_be_free(be, ids);
        gnn_be_graph_free(bg);
        gnn_aggr_registry_free(reg);
        gnn_backend_close(be);
    }
    world_free(&w);
}

/* no_virtual_sources in each order the layer graphs can offer, on both worlds. */
static void test_no_virtual_sources(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        no_virtual_sources_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* ---- cpu against cpu-as-gpu --------------------------------------------- */

/* Logits (training and inference), parameter and input gradients of c on
 * the graphs g, bitwise equal on cpu and cpu-as-gpu. */
static void same_on_both(const world_t *w, const lgraph_t *const *g, const cfg_t *c, uint64_t s,
                         const char *what)
{
    int64_t n_in = g[0]->csr.n_cols, n_out = g[c->layers - 1]->csr.n_rows, nx = n_in * c->f;
    data_t dt;
    data(&dt, n_in, c->f, n_out, &s);
    run_t u[2];
    float *lg[2], *li[2], *gp[2], *gx[2];
    double loss[2];
    static const char *const names[2] = {"cpu", "cpu-as-gpu"};
    for (int k = 0; k < 2; k++) {
        run_open(&u[k], names[k], w, g, c, dt.x, dt.labels, dt.idx, dt.nidx, s);
        assert_int_equal(gnn_be_host_memory(u[k].be), k == 0);
        lg[k] = malloc((size_t)(n_out * CLASSES) * sizeof(float));
        li[k] = malloc((size_t)(n_out * CLASSES) * sizeof(float));
        gp[k] = malloc((size_t)u[k].np * sizeof(float));
        gx[k] = malloc((size_t)nx * sizeof(float));
        assert_true(lg[k] && li[k] && gp[k] && gx[k]);
        assert_int_equal(gnn_model_set_input_grad(u[k].m, 1), 0);
        loss[k] = run_gradients(&u[k], lg[k], gp[k], gx[k]);
        run_forward(&u[k], 0, li[k]);
    }
    assert_int_equal(u[0].np, u[1].np);
    if (loss[0] != loss[1])
        fail_msg("%s: loss %.9g on cpu, %.9g on cpu-as-gpu", what, loss[0], loss[1]);
    const struct {
        const char *name;
        float **v;
        int64_t n;
    } cmp[] = {{"training logits", lg, n_out * CLASSES},
               {"inference logits", li, n_out * CLASSES},
               {"parameter gradients", gp, u[0].np},
               {"input gradients", gx, nx}};
    for (size_t q = 0; q < sizeof cmp / sizeof cmp[0]; q++)
        for (int64_t i = 0; i < cmp[q].n; i++)
            if (memcmp(&cmp[q].v[0][i], &cmp[q].v[1][i], sizeof(float)))
                fail_msg("%s, B = %d: %s %" PRId64 ": %.9g on cpu, %.9g on cpu-as-gpu "
                         "(seed %" PRIu64 ")",
                         what, c->bases, cmp[q].name, i, (double)cmp[q].v[0][i],
                         (double)cmp[q].v[1][i], g_seed);
    for (int k = 0; k < 2; k++) {
        free(lg[k]), free(li[k]), free(gp[k]), free(gx[k]);
        run_close(&u[k]);
    }
    data_free(&dt);
}

static void cpu_as_gpu_once(void **state)
{
    (void)state;
    static const cfg_t cases[] = {{2, 0, 5, 4, 0.3f}, {3, 2, 4, 5, 0.25f}, {2, R, 5, 4, 0.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t s = g_seed ^ (0x51edull * (i + 1));
        world_t w;
        world(&w, &s);
        /* The full graph. */
        lgraph_t full;
        lgraph_full(&w, &full);
        const lgraph_t *g[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cases[i].layers; l++) g[l] = &full;
        same_on_both(&w, g, &cases[i], s, "full graph");
        /* Permuted blocks, one per layer. */
        int64_t *order = malloc((size_t)w.n * sizeof *order);
        assert_non_null(order);
        int64_t rows[GNN_MODEL_MAX_LAYERS + 1];
        rows[0] = w.n - 1;
        for (int l = 1; l <= cases[i].layers; l++) rows[l] = rows[l - 1] - 4;
        shuffled(&w, rows[cases[i].layers - 1], &s, order);
        lgraph_t b[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cases[i].layers; l++) {
            lgraph_block(&w, order, rows[l + 1], rows[l], &b[l]);
            g[l] = &b[l];
        }
        same_on_both(&w, g, &cases[i], s, "blocks");
        for (int l = 0; l < cases[i].layers; l++) lgraph_free(&b[l]);
        free(order);
        world_free(&w);
    }
}

/* cpu_as_gpu in each order the layer graphs can offer, on both worlds. */
static void test_cpu_as_gpu(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        cpu_as_gpu_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* ---- Layer-wise inference ------------------------------------------------ */

/* Layer by layer (gnn_model_layer_infer) equals the forward without
 * dropout (a model that drops while training), which equals the double
 * model without dropout; and it invalidates the training forward. */
static void infer_equals_forward(const world_t *w, const lgraph_t *const *g, const cfg_t *c,
                                 uint64_t s, const char *what)
{
    int64_t n_in = g[0]->csr.n_cols, n_out = g[c->layers - 1]->csr.n_rows, nl = n_out * CLASSES;
    data_t dt;
    data(&dt, n_in, c->f, n_out, &s);
    run_t u;
    run_open(&u, "cpu-as-gpu", w, g, c, dt.x, dt.labels, dt.idx, dt.nidx, s);
    float *lf = malloc((size_t)nl * sizeof *lf), *ll = malloc((size_t)nl * sizeof *ll);
    float *gp = malloc((size_t)u.np * sizeof *gp), *wf = malloc((size_t)u.np * sizeof *wf);
    assert_true(lf && ll && gp && wf);
    run_gradients(&u, NULL, gp, NULL);
    run_forward(&u, 0, lf);
    /* Layer by layer from the same input. */
    assert_int_equal(gnn_be_upload(u.be, u.x, u.xh, (size_t)(n_in * c->f) * sizeof(float)), 0);
    const float *in = u.x, *out = NULL;
    for (int l = 0; l < c->layers; l++) {
        int rc = gnn_model_layer_infer(u.m, l, u.gs[l], in, &out);
        if (rc != 0) fail_msg("%s: layer %d: %s", what, l, gnn_error_message());
        in = out;
    }
    download(&u, ll, out, nl);
    for (int64_t i = 0; i < nl; i++)
        if (memcmp(&lf[i], &ll[i], sizeof(float)))
            fail_msg("%s, %d layers, B = %d: logit %" PRId64 ": forward %.9g, layer by layer %.9g "
                     "(seed %" PRIu64 ")",
                     what, c->layers, c->bases, i, (double)lf[i], (double)ll[i], g_seed);
    expect_error(gnn_model_backward(u.m, u.dl), GNN_EINVAL, "no training forward");
    /* The double model without dropout. */
    ref_t r = {.layers = c->layers, .bases = c->bases, .p = 0.0f, .labels = dt.labels,
               .idx = dt.idx, .nidx = dt.nidx};
    r.dims[0] = c->f;
    for (int l = 1; l < c->layers; l++) r.dims[l] = c->hidden;
    r.dims[c->layers] = CLASSES;
    for (int l = 0; l < c->layers; l++) r.g[l] = g[l];
    double *wd = malloc((size_t)u.np * sizeof *wd);
    double *xd = malloc((size_t)(n_in * c->f) * sizeof *xd);
    double *ld = malloc((size_t)nl * sizeof *ld);
    assert_true(wd && xd && ld);
    download(&u, wf, gnn_model_params(u.m), u.np);
    for (int64_t i = 0; i < u.np; i++) wd[i] = wf[i];
    for (int64_t i = 0; i < n_in * c->f; i++) xd[i] = dt.x[i];
    r.x = xd;
    ref_forward(&r, wd, ld);
    for (int64_t i = 0; i < nl; i++)
        if (fabs(ld[i] - lf[i]) > 1e-5 * fmax(1.0, fabs(ld[i])))
            fail_msg("%s: logit %" PRId64 ": %.9g, double-precision model %.9g (seed %" PRIu64 ")",
                     what, i, (double)lf[i], ld[i], g_seed);
    free(wd), free(xd), free(ld);
    free(lf), free(ll), free(gp), free(wf);
    run_close(&u);
    data_free(&dt);
}

static void layer_infer_once(void **state)
{
    (void)state;
    static const cfg_t cases[] = {{3, 0, 5, 4, 0.5f}, {2, 2, 4, 6, 0.3f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t s = g_seed ^ (0x3c6eull * (i + 1));
        world_t w;
        world(&w, &s);
        lgraph_t full;
        lgraph_full(&w, &full);
        const lgraph_t *g[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cases[i].layers; l++) g[l] = &full;
        infer_equals_forward(&w, g, &cases[i], s, "full graph");
        int64_t *order = malloc((size_t)w.n * sizeof *order);
        assert_non_null(order);
        int64_t rows[GNN_MODEL_MAX_LAYERS + 1];
        rows[0] = w.n;
        for (int l = 1; l <= cases[i].layers; l++) rows[l] = rows[l - 1] - 4;
        shuffled(&w, rows[cases[i].layers - 1], &s, order);
        lgraph_t b[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cases[i].layers; l++) {
            lgraph_block(&w, order, rows[l + 1], rows[l], &b[l]);
            g[l] = &b[l];
        }
        infer_equals_forward(&w, g, &cases[i], s, "blocks");
        for (int l = 0; l < cases[i].layers; l++) lgraph_free(&b[l]);
        free(order);
        world_free(&w);
    }
}

/* layer_infer in each order the layer graphs can offer, on both worlds. */
static void test_layer_infer(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        layer_infer_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

/* ---- Errors -------------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    world_t w;
    world(&w, &s);
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    gnn_model_config_t cfg = {.kind = GNN_MODEL_RGCN, .layers = 2, .in_dim = 4, .hidden = 3,
                              .classes = CLASSES, .relations = R};
    gnn_model_t *m;
    /* rgcn without relations, or with more bases than relations. */
    gnn_model_config_t bad = cfg;
    bad.relations = 0;
    expect_error(gnn_model_create(be, reg, &bad, 1, &m), GNN_EINVAL,
                 "rgcn needs the relations of a typed graph");
    assert_null(m);
    bad = cfg;
    bad.num_bases = R + 1;
    expect_error(gnn_model_create(be, reg, &bad, 1, &m), GNN_EINVAL,
                 "--num-bases 6 outside [0, 5 relations]");
    bad.num_bases = -1;
    expect_error(gnn_model_create(be, reg, &bad, 1, &m), GNN_EINVAL, "--num-bases -1");

    /* A forward on a graph without the relations attached, or with
     * another number of relations than the model's. */
    float *x;
    assert_int_equal(gnn_be_alloc(be, (size_t)(w.n * 4) * sizeof(float), (void **)&x), 0);
    assert_int_equal(gnn_be_zero(be, x, (size_t)(w.n * 4) * sizeof(float)), 0);
    gnn_bgraph_t *plain;
    assert_int_equal(gnn_be_graph_create(be, &w.a, &plain), 0);
    assert_int_equal(gnn_model_create(be, reg, &cfg, 1, &m), 0);
    gnn_bgraph_t *gs[2] = {plain, plain};
    const float *logits;
    expect_error(gnn_model_forward(m, gs, x, 1, &logits), GNN_EINVAL, "rgcn layer 0");
    expect_error(gnn_model_forward(m, gs, x, 0, &logits), GNN_EINVAL, "rgcn");
    expect_error(gnn_model_layer_infer(m, 1, plain, x, &logits), GNN_EINVAL, "rgcn layer 1");
    gnn_model_free(m);
    gnn_model_config_t four = cfg;
    four.relations = R - 1;
    assert_int_equal(gnn_model_create(be, reg, &four, 1, &m), 0);
    lgraph_t full;
    lgraph_full(&w, &full);
    gnn_bgraph_t *typed = prepare(be, &w, &full);
    gs[0] = gs[1] = typed;
    expect_error(gnn_model_forward(m, gs, x, 1, &logits), GNN_EINVAL, "rgcn layer 0");
    gnn_model_free(m);
    gnn_be_graph_free(typed);

    /* An edge whose relation does not start at its source's type: make
     * the source of an r4 (a -> b) edge a node of c; the message names
     * the relation and both types. Nothing is attached. */
    gnn_csr_t a = w.a;
    a.indices = malloc((size_t)(w.a.nnz + 1) * sizeof *a.indices);
    assert_non_null(a.indices);
    memcpy(a.indices, w.a.indices, (size_t)w.a.nnz * sizeof *a.indices);
    int64_t e = -1;
    for (int64_t k = 0; k < a.nnz && e < 0; k++)
        if (w.etype[k] == 4) e = k;
    assert_true(e >= 0);
    a.indices[e] = w.types.off[2];
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
    char want[512];
    snprintf(want, sizeof want,
             "edge %" PRId64 " has relation 'r4', which starts at type 'a', but its source is of "
             "type 'c'",
             e);
    expect_error(gnn_typed_graph_attach(be, bg, &a, w.etype, NULL, &w.types, GNN_TYPED_AUTO, 0, 0),
                 GNN_EINVAL, want);
    assert_null(gnn_bgraph_attached(bg));
    gnn_be_graph_free(bg);
    free(a.indices);
    /* The same through src_gid, on a full graph whose node u (the source
     * of that r4 edge) is read as a node of c: the first edge that either
     * starts at u (its relation starts at a) or ends at u (its relation
     * ends at u's own type, not c) is named, with what is wrong with it. */
    int64_t *gid = malloc((size_t)w.n * sizeof *gid);
    assert_non_null(gid);
    for (int64_t v = 0; v < w.n; v++) gid[v] = v;
    const int64_t u = w.a.indices[e];
    gid[u] = w.types.off[2];
    assert_int_equal(gnn_be_graph_create(be, &w.a, &bg), 0);
    int64_t e0 = -1, row = 0;
    for (int64_t k = 0; k < w.a.nnz && e0 < 0; k++) {
        while (w.a.indptr[row + 1] <= k) row++;
        if (w.a.indices[k] == u || row == u) e0 = k;
    }
    assert_true(e0 >= 0);
    const char *own = w.types.ntype[gnn_graph_types_of(&w.types, u)];
    if (w.a.indices[e0] == u)
        snprintf(want, sizeof want,
                 "edge %" PRId64 " has relation 'r%d', which starts at type '%s', but its "
                 "source is of type 'c'",
                 e0, (int)w.etype[e0], own);
    else
        snprintf(want, sizeof want,
                 "edge %" PRId64 " has relation 'r%d', which ends at type '%s', but its "
                 "destination is of type 'c'",
                 e0, (int)w.etype[e0], own);
    expect_error(gnn_typed_graph_attach(be, bg, &w.a, w.etype, gid, &w.types, GNN_TYPED_AUTO, 0, 0),
                 GNN_EINVAL, want);
    assert_null(gnn_bgraph_attached(bg));
    gnn_be_graph_free(bg);
    /* An edge whose relation does not end at its destination's type: the
     * relation of an r0 (c -> a) edge made r2 (c -> c). */
    int32_t *et = malloc((size_t)(w.a.nnz + 1) * sizeof *et);
    assert_non_null(et);
    memcpy(et, w.etype, (size_t)w.a.nnz * sizeof *et);
    int64_t e2 = -1;
    for (int64_t k = 0; k < w.a.nnz && e2 < 0; k++)
        if (w.etype[k] == 0) e2 = k;
    assert_true(e2 >= 0);
    et[e2] = 2;
    for (int o = 0; o < 3; o++) {
        assert_int_equal(gnn_be_graph_create(be, &w.a, &bg), 0);
        snprintf(want, sizeof want,
                 "edge %" PRId64 " has relation 'r2', which ends at type 'c', but its "
                 "destination is of type 'a'",
                 e2);
        expect_error(gnn_typed_graph_attach(be, bg, &w.a, et, NULL, &w.types, k_orders[o], 0, 0),
                     GNN_EINVAL, want);
        assert_null(gnn_bgraph_attached(bg));
        gnn_be_graph_free(bg);
    }
    free(et);
    free(gid);

    gnn_be_free(be, x);
    gnn_be_graph_free(plain);
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be);
    world_free(&w);
}

/*
 * Auto's choice from the layer's widths: on a block of 3 destinations
 * among every node, widening 4 -> 64, aggregating first (its products on
 * the destinations' few virtual rows, its SpMM 4 wide instead of 64); on
 * the whole graph narrowing 64 -> 2, the products first (an SpMM 2 wide
 * instead of 64, as many virtual rows either way); without widths, the
 * products first.
 */
static void test_auto_order(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5ca1ull;
    world_t w;
    world(&w, &s);
    int64_t *order = malloc((size_t)w.n * sizeof *order);
    assert_non_null(order);
    shuffled(&w, w.n, &s, order);
    lgraph_t b, full;
    lgraph_block(&w, order, 3, w.n, &b);
    lgraph_full(&w, &full);
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    static const struct {
        int block;
        int64_t fin, fout;
        int agg;
    } cases[] = {{1, 4, 64, 1}, {0, 64, 2, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const lgraph_t *g = cases[i].block ? &b : &full;
        gnn_bgraph_t *bg;
        assert_int_equal(gnn_be_graph_create(be, &g->csr, &bg), 0);
        int rc = gnn_typed_graph_attach(be, bg, &g->csr, g->etype, g->gid, &w.types,
                                        GNN_TYPED_AUTO, cases[i].fin, cases[i].fout);
        if (rc != 0) fail_msg("attach: %s", gnn_error_message());
        const gnn_typed_graph_t *t = gnn_bgraph_attached(bg);
        if ((t->ug != NULL) != cases[i].agg || (t->vg != NULL) == cases[i].agg)
            fail_msg("%s, %" PRId64 " -> %" PRId64 ": auto chose %s (nv %" PRId64
                     ", nvd %" PRId64 ", %" PRId64 " edges; seed %" PRIu64 ")",
                     cases[i].block ? "block" : "whole graph", cases[i].fin, cases[i].fout,
                     t->ug ? "aggregate-first" : "transform-first", t->nv, t->nvd, g->csr.nnz,
                     g_seed);
        gnn_be_graph_free(bg);
    }
    gnn_backend_close(be);
    lgraph_free(&b);
    free(order);
    world_free(&w);
}

/* The attachment under allocation failure: the Nth allocation failing for
 * N = 1, 2, ... until it succeeds gives GNN_ENOMEM, attaches nothing and
 * leaks nothing (the sanitizer build checks). */
static void attach_alloc_failure_once(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    world_t w;
    world(&w, &s);
    int64_t *order = malloc((size_t)w.n * sizeof *order);
    assert_non_null(order);
    shuffled(&w, w.n - 2, &s, order);
    lgraph_t b;
    lgraph_block(&w, order, 6, w.n - 2, &b);
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &b.csr, &bg), 0);
    int ok = 0;
    for (int64_t nth = 1; nth < 1000 && !ok; nth++) {
        gnn_alloc_fail_at(nth);
        int rc = gnn_typed_graph_attach(be, bg, &b.csr, b.etype, b.gid, &w.types, g_order, 0, 0);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!failed) {
            assert_int_equal(rc, 0);
            ok = 1;
            break;
        }
        if (rc != GNN_ENOMEM)
            fail_msg("allocation %" PRId64 " failing: %d (%s)", nth, rc, gnn_error_message());
        assert_null(gnn_bgraph_attached(bg));
    }
    assert_true(ok);
    assert_non_null(gnn_bgraph_attached(bg));
    gnn_be_graph_free(bg);
    gnn_backend_close(be);
    lgraph_free(&b);
    free(order);
    world_free(&w);
}

/* attach_alloc_failure in each order the layer graphs can offer, on both worlds. */
static void test_attach_alloc_failure(void **state)
{
    for (int o = 0; o < 6; o++) {
        g_order = k_orders[o % 3];
        g_r4_to_a = o / 3;
        attach_alloc_failure_once(state);
    }
    g_order = GNN_TYPED_AUTO;
    g_r4_to_a = 0;
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_full_graph_gradients),
        cmocka_unit_test(test_block_gradients),
        cmocka_unit_test(test_block_without_a_type),
        cmocka_unit_test(test_no_virtual_sources),
        cmocka_unit_test(test_cpu_as_gpu),
        cmocka_unit_test(test_layer_infer),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_auto_order),
        cmocka_unit_test(test_attach_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
