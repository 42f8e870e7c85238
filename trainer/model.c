/*
 * GCN and GraphSAGE forward and backward passes (trainer/model.h).
 *
 * Per layer l the forward keeps what the backward reads: the dropped input
 * D (only when dropout is on; otherwise D is the input itself; above layer
 * 0 it replaces the input in place), the
 * aggregated matrix T (GCN: A D or D W, SAGE: aggr(D)), the output Z (ReLU
 * applied in place: the backward reads the sign pattern from the output),
 * and the aggregator's workspace. The backward walks the layers downwards
 * with two gradient buffers used in turn and one scratch for dT, so its
 * memory does not grow with depth.
 */
#include "trainer/model.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef struct {
    int64_t fin, fout;
    int64_t w_off, ws_off, b_off, count; /* ws_off: SAGE W_self, else -1 */
    int gemm_first;                      /* D W before aggregation */
    /* State of the last forward. */
    gnn_bgraph_t *graph;
    const float *in; /* H (x for layer 0) */
    int64_t n_src, n_dst;
    float *drop;   size_t drop_bytes; /* dropout(H), when used */
    uint64_t drop_off; /* generator offset of that dropout */
    int dropped;       /* the last forward applied dropout */
    const float *d; /* D: drop or in */
    float *t;      size_t t_bytes;
    float *z;      size_t z_bytes;
    void *ws;      size_t ws_bytes;
    int trained;   /* the last forward was a training one */
    int sparse;    /* layer 0 fed from the sparse input */
    float *q;      size_t q_bytes; /* SAGE on sparse input: D W_self */
} layer_t;

struct gnn_model {
    gnn_backend_t *be;
    gnn_model_config_t cfg;
    layer_t layer[GNN_MODEL_MAX_LAYERS];
    int64_t n_params;
    float *params, *grads;
    uint64_t drop_seed, drop_offset;
    const gnn_bsparse_t *sp; /* sparse input of layer 0, or NULL */
    float *sp_vals;          /* its values after dropout */
    size_t sp_vals_bytes;
    /* Backward scratch. */
    float *gbuf[2];  size_t gbuf_bytes[2];
    float *dt;       size_t dt_bytes;
    int64_t dd_block; /* rows per block of a blockwise dD */
    gnn_model_halo_t halo; /* distributed: exchange around layers (halo.forward set) */
    const int64_t *row_ids; /* dropout by these row ids (no halo), over ... */
    int64_t rows_global;    /* ... this many nodes */
};

static const char *const kind_names[] = {"gcn", "sage"};

int gnn_model_kind_from_name(const char *name, gnn_model_kind_t *kind)
{
    for (int i = 0; name && i < 2; i++)
        if (!strcmp(name, kind_names[i])) {
            *kind = (gnn_model_kind_t)i;
            return 0;
        }
    return GNN_FAIL(GNN_EINVAL, "unknown model \"%s\" (expected gcn or sage)",
                    name ? name : "(null)");
}

const char *gnn_model_kind_name(gnn_model_kind_t kind)
{
    return (unsigned)kind < 2 ? kind_names[kind] : "?";
}

/* ---- Creation ------------------------------------------------------------- */

static int check_config(const gnn_model_config_t *c)
{
    if ((unsigned)c->kind > GNN_MODEL_SAGE)
        return GNN_FAIL(GNN_EINVAL, "model: unknown kind %d", (int)c->kind);
    if (c->layers < 1 || c->layers > GNN_MODEL_MAX_LAYERS)
        return GNN_FAIL(GNN_EINVAL, "model: layers %d outside [1, %d]", c->layers,
                        GNN_MODEL_MAX_LAYERS);
    if (c->in_dim < 1) return GNN_FAIL(GNN_EINVAL, "model: input width %" PRId64, c->in_dim);
    if (c->layers > 1 && c->hidden < 1)
        return GNN_FAIL(GNN_EINVAL, "model: hidden width %" PRId64, c->hidden);
    if (c->classes < 1) return GNN_FAIL(GNN_EINVAL, "model: %" PRId64 " classes", c->classes);
    int64_t big = (int64_t)1 << 20;
    if (c->in_dim > big || c->hidden > big || c->classes > big)
        return GNN_FAIL(GNN_EINVAL, "model: a layer wider than %" PRId64, big);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "model: dropout %g outside [0, 1)", (double)c->dropout);
    if (c->kind == GNN_MODEL_SAGE && !c->aggr)
        return GNN_FAIL(GNN_EINVAL, "model: sage needs an aggregator");
    return 0;
}

/* Glorot-uniform fill of n weights from (seed, counter base). */
static void glorot(float *w, int64_t fin, int64_t fout, uint64_t seed, uint64_t base)
{
    double lim = sqrt(6.0 / (double)(fin + fout));
    for (int64_t i = 0; i < fin * fout; i++)
        w[i] = (float)((2.0 * gnn_rng_uniform(seed, base + (uint64_t)i) - 1.0) * lim);
}

/* Aggregators that commute with a product on the right: aggr(D) W = aggr(D W). */
static int linear_aggr(const gnn_aggr_def_t *a)
{
    return a && (!strcmp(a->name, "sum") || !strcmp(a->name, "mean") || !strcmp(a->name, "gcn"));
}

int gnn_model_create(gnn_backend_t *be, const gnn_aggr_registry_t *reg,
                     const gnn_model_config_t *cfg, uint64_t seed, gnn_model_t **out)
{
    int rc = 0;
    gnn_model_t *m = NULL;
    float *host = NULL;
    GNN_CHECK(out, GNN_EINVAL, "model: NULL output");
    *out = NULL;
    GNN_CHECK(be && reg && cfg, GNN_EINVAL, "model: NULL argument");
    m = gnn_calloc(1, sizeof *m);
    GNN_CHECK(m, GNN_ENOMEM, "model");
    m->be = be;
    m->cfg = *cfg;
    if (cfg->kind == GNN_MODEL_GCN) GNN_TRY(gnn_aggr_registry_find(reg, "gcn", &m->cfg.aggr));
    GNN_TRY(check_config(&m->cfg));

    int64_t off = 0;
    for (int l = 0; l < cfg->layers; l++) {
        layer_t *L = &m->layer[l];
        L->fin = l == 0 ? cfg->in_dim : cfg->hidden;
        L->fout = l == cfg->layers - 1 ? cfg->classes : cfg->hidden;
        L->w_off = off;
        off += L->fin * L->fout;
        L->ws_off = -1;
        if (cfg->kind == GNN_MODEL_SAGE) {
            L->ws_off = off;
            off += L->fin * L->fout;
        }
        L->b_off = off;
        off += L->fout;
        L->count = off - L->w_off;
        /* Multiply before aggregating when the output is narrower: always
         * for GCN, and for SAGE when the aggregator is linear (the built-ins
         * sum, mean, gcn), where aggr(D) W = aggr(D W). */
        L->gemm_first = L->fout < L->fin && (cfg->kind == GNN_MODEL_GCN || linear_aggr(m->cfg.aggr));
    }
    m->n_params = off;

    host = gnn_calloc((size_t)off, sizeof *host);
    GNN_CHECK(host, GNN_ENOMEM, "model parameters");
    uint64_t init_seed = gnn_rng_mix64(seed ^ 0x696e6974ull);
    for (int l = 0; l < cfg->layers; l++) {
        layer_t *L = &m->layer[l];
        glorot(host + L->w_off, L->fin, L->fout, init_seed, (uint64_t)L->w_off);
        if (L->ws_off >= 0)
            glorot(host + L->ws_off, L->fin, L->fout, init_seed, (uint64_t)L->ws_off);
    }
    size_t bytes = (size_t)off * sizeof(float);
    GNN_TRY(gnn_be_alloc(be, bytes, (void **)&m->params));
    GNN_TRY(gnn_be_alloc(be, bytes, (void **)&m->grads));
    GNN_TRY(gnn_be_upload(be, m->params, host, bytes));
    GNN_TRY(gnn_be_zero(be, m->grads, bytes));
    m->drop_seed = gnn_rng_mix64(seed ^ 0x64726f70ull);
    m->drop_offset = 0;
    m->dd_block = 16384;
    gnn_free(host);
    *out = m;
    return 0;
fail:
    gnn_free(host);
    gnn_model_free(m);
    return rc;
}

void gnn_model_free(gnn_model_t *m)
{
    if (!m) return;
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) {
        layer_t *L = &m->layer[l];
        gnn_be_free(m->be, L->drop);
        gnn_be_free(m->be, L->t);
        gnn_be_free(m->be, L->z);
        gnn_be_free(m->be, L->ws);
        gnn_be_free(m->be, L->q);
    }
    gnn_be_free(m->be, m->sp_vals);
    gnn_be_free(m->be, m->gbuf[0]);
    gnn_be_free(m->be, m->gbuf[1]);
    gnn_be_free(m->be, m->dt);
    gnn_be_free(m->be, m->params);
    gnn_be_free(m->be, m->grads);
    gnn_free(m);
}

const gnn_model_config_t *gnn_model_config(const gnn_model_t *m) { return &m->cfg; }
int64_t gnn_model_n_params(const gnn_model_t *m) { return m->n_params; }
float *gnn_model_params(gnn_model_t *m) { return m->params; }
float *gnn_model_grads(gnn_model_t *m) { return m->grads; }
uint64_t gnn_model_rng_offset(const gnn_model_t *m) { return m->drop_offset; }

void gnn_model_set_rng_offset(gnn_model_t *m, uint64_t offset) { m->drop_offset = offset; }

int gnn_model_set_row_ids(gnn_model_t *m, const int64_t *row_id, int64_t n_global)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model row ids: NULL model");
    if (row_id && n_global < 0)
        return GNN_FAIL(GNN_EINVAL, "model row ids: %" PRId64 " nodes", n_global);
    if (row_id && m->sp) return GNN_FAIL(GNN_EUNSUPPORTED, "model row ids: not with sparse input");
    m->row_ids = row_id;
    m->rows_global = row_id ? n_global : 0;
    return 0;
}

uint64_t gnn_model_dropout_span(const gnn_model_t *m, int64_t n_global)
{
    if (!(m->cfg.dropout > 0.0f)) return 0;
    uint64_t span = 0;
    for (int l = 0; l < m->cfg.layers; l++) span += (uint64_t)n_global * (uint64_t)m->layer[l].fin;
    return span;
}
uint64_t gnn_model_dropout_key(const gnn_model_t *m) { return m->drop_seed; }

void gnn_model_set_block_rows(gnn_model_t *m, int64_t rows)
{
    m->dd_block = rows < 1 ? 1 : rows;
}

void gnn_model_set_rng(gnn_model_t *m, uint64_t seed, uint64_t offset)
{
    m->drop_seed = gnn_rng_mix64(seed ^ 0x64726f70ull);
    m->drop_offset = offset;
}

void gnn_model_layer_span(const gnn_model_t *m, int l, int64_t *offset, int64_t *count)
{
    *offset = m->layer[l].w_off;
    *count = m->layer[l].count;
}

size_t gnn_model_activation_bytes(const gnn_model_t *m)
{
    size_t s = m->gbuf_bytes[0] + m->gbuf_bytes[1] + m->dt_bytes;
    for (int l = 0; l < m->cfg.layers; l++)
        s += m->layer[l].drop_bytes + m->layer[l].t_bytes + m->layer[l].z_bytes +
             m->layer[l].ws_bytes + m->layer[l].q_bytes;
    s += m->sp_vals_bytes;
    return s;
}

/* Make *buf hold at least bytes (contents not kept). */
static int ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes) return 0;
    gnn_be_free(be, *buf);
    *buf = NULL;
    *have = 0;
    int rc = gnn_be_alloc(be, bytes, buf);
    if (rc < 0) return rc;
    *have = bytes;
    return 0;
}

static size_t fbytes(int64_t rows, int64_t cols)
{
    return (size_t)rows * (size_t)cols * sizeof(float);
}

int gnn_model_set_sparse_input(gnn_model_t *m, const gnn_bsparse_t *s)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model: NULL argument");
    if (s) {
        if (gnn_bsparse_cols(s) != m->cfg.in_dim)
            return GNN_FAIL(GNN_EINVAL,
                            "model: sparse input has %" PRId64 " columns, the model %" PRId64,
                            gnn_bsparse_cols(s), m->cfg.in_dim);
        const char *a = m->cfg.aggr->name;
        if (m->cfg.kind == GNN_MODEL_SAGE && strcmp(a, "sum") && strcmp(a, "mean") &&
            strcmp(a, "gcn"))
            return GNN_FAIL(GNN_EUNSUPPORTED,
                            "model: sparse input needs a linear aggregator (sum, mean, gcn), not %s",
                            a);
    }
    m->sp = s;
    return 0;
}

/* ---- Forward -------------------------------------------------------------- */

/* Layer 0 on the sparse input: T = D W and Z = aggr(T) (+ D W_self). */
static int layer0_sparse_forward(gnn_model_t *m, gnn_bgraph_t *g, int training)
{
    int rc = 0;
    gnn_backend_t *be = m->be;
    layer_t *L = &m->layer[0];
    const gnn_aggr_def_t *ag = m->cfg.aggr;
    int64_t ns = gnn_bgraph_n_src(g), nd = gnn_bgraph_n_dst(g), fout = L->fout;
    GNN_CHECK(ns == nd && gnn_bsparse_rows(m->sp) == ns, GNN_EUNSUPPORTED,
              "model: sparse input needs a square graph with one row per input row");
    size_t nnzb = (size_t)gnn_bsparse_nnz(m->sp) * sizeof(float);
    GNN_TRY(ensure(be, (void **)&m->sp_vals, &m->sp_vals_bytes, nnzb ? nnzb : sizeof(float)));
    float p = training ? m->cfg.dropout : 0.0f;
    L->drop_off = m->drop_offset;
    GNN_TRY(gnn_be_sparse_dropout(be, m->sp, p, m->drop_seed, m->drop_offset, m->sp_vals));
    if (p > 0.0f) m->drop_offset += (uint64_t)(ns * L->fin);
    L->sparse = 1;
    L->in = NULL;
    L->d = NULL;
    GNN_TRY(ensure(be, (void **)&L->t, &L->t_bytes, fbytes(ns, fout)));
    GNN_TRY(ensure(be, (void **)&L->z, &L->z_bytes, fbytes(nd, fout)));
    size_t wsb = 0;
    GNN_TRY(gnn_be_aggr_workspace(be, g, ag, fout, &wsb));
    if (wsb) GNN_TRY(ensure(be, &L->ws, &L->ws_bytes, wsb));
    GNN_TRY(gnn_be_sparse_mm(be, m->sp, m->sp_vals, m->params + L->w_off, fout, L->t));
    GNN_TRY(gnn_be_aggr_forward(be, g, ag, fout, L->t, L->z, L->ws, L->ws_bytes));
    if (L->ws_off >= 0) {
        GNN_TRY(ensure(be, (void **)&L->q, &L->q_bytes, fbytes(ns, fout)));
        GNN_TRY(gnn_be_sparse_mm(be, m->sp, m->sp_vals, m->params + L->ws_off, fout, L->q));
        GNN_TRY(gnn_be_axpby(be, nd * fout, 1.0f, L->q, 1.0f, L->z));
    }
    GNN_TRY(gnn_be_bias_add(be, nd, fout, L->z, m->params + L->b_off));
    if (m->cfg.layers > 1) GNN_TRY(gnn_be_relu(be, nd * fout, L->z, L->z));
    return 0;
fail:
    return rc;
}

int gnn_model_set_halo(gnn_model_t *m, const gnn_model_halo_t *h)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model halo: NULL model");
    if (!h) {
        memset(&m->halo, 0, sizeof m->halo);
        return 0;
    }
    if (!h->forward || !h->backward || !h->row_id || h->n_rows < 0 || h->n_global < 0)
        return GNN_FAIL(GNN_EINVAL, "model halo: incomplete exchange");
    if (m->sp) return GNN_FAIL(GNN_EUNSUPPORTED, "model halo: not with sparse input");
    m->halo = *h;
    return 0;
}

/* Dropout of a layer input (n rows of f from counter off): by row ids when
 * the model is spread over ranks. gradient: the backward, which is the
 * same map. */
static int drop(gnn_model_t *m, int64_t row0, int64_t n, int64_t f, uint64_t off,
                const float *x, float *y, int gradient)
{
    gnn_backend_t *be = m->be;
    float p = m->cfg.dropout;
    if (m->halo.forward)
        return gnn_be_dropout_rows(be, n, f, m->halo.row_id + row0, p, m->drop_seed, off, x, y);
    if (m->row_ids)
        return gnn_be_dropout_rows(be, n, f, m->row_ids + row0, p, m->drop_seed, off, x, y);
    off += (uint64_t)(row0 * f);
    return gradient ? gnn_be_dropout_backward(be, n * f, p, m->drop_seed, off, x, y)
                    : gnn_be_dropout(be, n * f, p, m->drop_seed, off, x, y);
}

static int layer_forward(gnn_model_t *m, int l, gnn_bgraph_t *g, const float *in, int training)
{
    int rc = 0;
    gnn_backend_t *be = m->be;
    layer_t *L = &m->layer[l];
    const gnn_aggr_def_t *ag = m->cfg.aggr;
    int64_t ns = gnn_bgraph_n_src(g), nd = gnn_bgraph_n_dst(g), fin = L->fin, fout = L->fout;
    const float *w = m->params + L->w_off, *b = m->params + L->b_off;
    L->graph = g;
    L->in = in;
    L->n_src = ns;
    L->n_dst = nd;
    L->trained = training;
    L->sparse = 0;
    if (l == 0 && m->sp) return layer0_sparse_forward(m, g, training);

    /*
     * D = dropout(H) while training. Above layer 0 it overwrites H (the
     * previous layer's output, ours to change): the backward then reads the
     * ReLU's sign pattern from D, which differs from H's only where the
     * element was dropped and its gradient is zero anyway. Layer 0's input
     * is the caller's: D gets its own buffer, or, when only the forward
     * reads it (GCN aggregating first: the weight gradient reads A D, not
     * D), the layer's output buffer until the output is computed.
     */
    L->d = in;
    L->dropped = 0;
    float p = m->cfg.dropout;
    if (training && p > 0.0f) {
        float *dst;
        if (l > 0) {
            dst = (float *)in;
        } else if (m->cfg.kind == GNN_MODEL_GCN && !L->gemm_first && ns == nd) {
            /* Aggregating first means fout >= fin: D fits in Z's buffer,
             * which Z = (A D) W overwrites only after A D is formed. */
            GNN_TRY(ensure(be, (void **)&L->z, &L->z_bytes, fbytes(nd, fout)));
            dst = L->z;
        } else {
            GNN_TRY(ensure(be, (void **)&L->drop, &L->drop_bytes, fbytes(ns, fin)));
            dst = L->drop;
        }
        L->drop_off = m->drop_offset;
        GNN_TRY(drop(m, 0, ns, fin, m->drop_offset, in, dst, 0));
        m->drop_offset += (uint64_t)((m->halo.forward ? m->halo.n_global
                                      : m->row_ids   ? m->rows_global
                                                     : ns) *
                                     fin);
        L->d = dst;
        L->dropped = 1;
    }
    /* Spread over ranks, the output has room for the next layer's halo. */
    int64_t zr = m->halo.forward && m->halo.n_rows > nd ? m->halo.n_rows : nd;
    GNN_TRY(ensure(be, (void **)&L->z, &L->z_bytes, fbytes(zr, fout)));
    int64_t tw = L->gemm_first ? fout : fin; /* width of T */
    int64_t tr = L->gemm_first ? ns : nd;    /* rows of T */
    GNN_TRY(ensure(be, (void **)&L->t, &L->t_bytes, fbytes(tr, tw)));
    size_t wsb = 0;
    GNN_TRY(gnn_be_aggr_workspace(be, g, ag, tw, &wsb));
    if (wsb) GNN_TRY(ensure(be, &L->ws, &L->ws_bytes, wsb));

    if (L->gemm_first) {
        /* T = D W (ns x fout); Z = A T (+ D[:nd] W_self for SAGE). */
        GNN_TRY(gnn_be_gemm(be, 0, 0, ns, fout, fin, 1.0f, L->d, fin, w, fout, 0.0f, L->t, fout));
        GNN_TRY(gnn_be_aggr_forward(be, g, ag, fout, L->t, L->z, L->ws, L->ws_bytes));
        if (L->ws_off >= 0)
            GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, L->d, fin, m->params + L->ws_off,
                                fout, 1.0f, L->z, fout));
    } else {
        /* T = aggr(D) (nd x fin); Z = T W (+ D[:nd] W_self for SAGE). */
        GNN_TRY(gnn_be_aggr_forward(be, g, ag, fin, L->d, L->t, L->ws, L->ws_bytes));
        GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, L->t, fin, w, fout, 0.0f, L->z, fout));
        if (L->ws_off >= 0)
            GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, L->d, fin, m->params + L->ws_off,
                                fout, 1.0f, L->z, fout));
    }
    GNN_TRY(gnn_be_bias_add(be, nd, fout, L->z, b));
    if (l < m->cfg.layers - 1) GNN_TRY(gnn_be_relu(be, nd * fout, L->z, L->z));
    if (m->halo.forward && l < m->cfg.layers - 1)
        GNN_TRY(m->halo.forward(m->halo.ctx, l, training, L->z, fout));
    return 0;
fail:
    return rc;
}

int gnn_model_forward(gnn_model_t *m, gnn_bgraph_t *const *graphs, const float *x, int training,
                      const float **logits)
{
    int rc = 0;
    GNN_CHECK(m && graphs && (x || m->sp) && logits, GNN_EINVAL, "model forward: NULL argument");
    for (int l = 0; l < m->cfg.layers; l++) {
        GNN_CHECK(graphs[l], GNN_EINVAL, "model forward: no graph for layer %d", l);
        if (m->halo.forward) {
            GNN_CHECK(gnn_bgraph_n_src(graphs[l]) == m->halo.n_rows &&
                          gnn_bgraph_n_dst(graphs[l]) <= m->halo.n_rows &&
                          (l == 0 || gnn_bgraph_n_dst(graphs[l]) == gnn_bgraph_n_dst(graphs[0])),
                      GNN_EINVAL, "model forward: layer %d's graph does not match the halo", l);
        } else if (l > 0)
            GNN_CHECK(gnn_bgraph_n_src(graphs[l]) == gnn_bgraph_n_dst(graphs[l - 1]), GNN_EINVAL,
                      "model forward: layer %d has %" PRId64 " sources, layer %d gave %" PRId64
                      " rows",
                      l, gnn_bgraph_n_src(graphs[l]), l - 1, gnn_bgraph_n_dst(graphs[l - 1]));
        if (m->cfg.kind == GNN_MODEL_SAGE)
            GNN_CHECK(gnn_bgraph_n_dst(graphs[l]) <= gnn_bgraph_n_src(graphs[l]), GNN_EINVAL,
                      "model forward: layer %d has more destinations than sources", l);
    }
    const float *in = x;
    for (int l = 0; l < m->cfg.layers; l++) {
        GNN_TRY(layer_forward(m, l, graphs[l], in, training));
        in = m->layer[l].z;
    }
    *logits = in;
    return 0;
fail:
    return rc;
}

int gnn_model_layer_infer(gnn_model_t *m, int l, gnn_bgraph_t *g, const float *in,
                          const float **out)
{
    int rc = 0;
    GNN_CHECK(m && g && in && out, GNN_EINVAL, "model layer: NULL argument");
    GNN_CHECK(l >= 0 && l < m->cfg.layers, GNN_EINVAL, "model layer: %d outside [0, %d)", l,
              m->cfg.layers);
    if (m->cfg.kind == GNN_MODEL_SAGE)
        GNN_CHECK(gnn_bgraph_n_dst(g) <= gnn_bgraph_n_src(g), GNN_EINVAL,
                  "model layer: more destinations than sources");
    for (int k = 0; k < m->cfg.layers; k++) m->layer[k].trained = 0;
    const gnn_bsparse_t *sp = m->sp;
    m->sp = NULL;
    rc = layer_forward(m, l, g, in, 0);
    m->sp = sp;
    if (rc < 0) goto fail;
    *out = m->layer[l].z;
    return 0;
fail:
    return rc;
}

const float *gnn_model_last_hidden(const gnn_model_t *m, int64_t *rows, int64_t *cols)
{
    const layer_t *L = &m->layer[m->cfg.layers - 1];
    *rows = L->n_src;
    *cols = L->fin;
    return L->in;
}

/* ---- Backward ------------------------------------------------------------- */

/* Rows per block of a blockwise dD (see gnn_model_backward). */
#define DD_BLOCK (m->dd_block)

/*
 * For a layer l > 0 that multiplied first: the gradient of the layer
 * below's output, block by block of rows, written over that output (L->in):
 *   dD = dT W^T (+ dZ W_self^T on rows < n_dst), then through dropout and
 *   the ReLU (whose sign pattern is read from the same rows before they are
 *   overwritten).
 */
static int dd_blockwise(gnn_model_t *m, layer_t *L, const float *dz)
{
    int rc = 0;
    gnn_backend_t *be = m->be;
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout;
    float *s = m->gbuf[0], *out = (float *)L->in;
    for (int64_t r0 = 0; r0 < ns; r0 += DD_BLOCK) {
        int64_t nr = ns - r0 < DD_BLOCK ? ns - r0 : DD_BLOCK;
        GNN_TRY(gnn_be_gemm(be, 0, 1, nr, fin, fout, 1.0f, m->dt + r0 * fout, fout,
                            m->params + L->w_off, fout, 0.0f, s, fin));
        if (L->ws_off >= 0 && r0 < nd) {
            int64_t ns_self = nd - r0 < nr ? nd - r0 : nr;
            GNN_TRY(gnn_be_gemm(be, 0, 1, ns_self, fin, fout, 1.0f, dz + r0 * fout, fout,
                                m->params + L->ws_off, fout, 1.0f, s, fin));
        }
        if (L->dropped) GNN_TRY(drop(m, r0, nr, fin, L->drop_off, s, s, 1));
        GNN_TRY(gnn_be_relu_backward(be, nr * fin, out + r0 * fin, s, out + r0 * fin));
    }
    return 0;
fail:
    return rc;
}

int gnn_model_backward(gnn_model_t *m, float *dlogits)
{
    int rc = 0;
    GNN_CHECK(m && dlogits, GNN_EINVAL, "model backward: NULL argument");
    gnn_backend_t *be = m->be;
    const gnn_aggr_def_t *ag = m->cfg.aggr;
    for (int l = 0; l < m->cfg.layers; l++)
        GNN_CHECK(m->layer[l].graph && m->layer[l].trained, GNN_EINVAL,
                  "model backward: no training forward before it");

    /*
     * Scratch. A layer l > 0 that multiplied first forms dD = dT W^T block
     * by block of DD_BLOCK rows in gbuf[0] and writes the gradient of the
     * layer below's output into that output's own buffer (L->in), which
     * the backward does not read again: no full-size dD buffer. A layer
     * l > 0 that aggregated first needs all of dD at once (the transposed
     * aggregation scatters over rows): gbuf[(L - 1 - l) % 2]. dT: by the
     * layers that multiply first (or take sparse input), and by those above
     * 0 that aggregate first.
     */
    size_t gneed[2] = {0, 0}, tmax = 0;
    int guse[2] = {0, 0}, tuse = 0; /* needed, even at 0 bytes (a part with no rows) */
    int nl = m->cfg.layers;
    for (int l = 0; l < nl; l++) {
        const layer_t *L = &m->layer[l];
        if (l > 0) {
            int64_t rows = L->gemm_first ? (L->n_src < DD_BLOCK ? L->n_src : DD_BLOCK) : L->n_src;
            size_t a = fbytes(rows, L->fin);
            int b = L->gemm_first ? 0 : (nl - 1 - l) % 2;
            gneed[b] = a > gneed[b] ? a : gneed[b];
            guse[b] = 1;
        }
        size_t t = L->gemm_first || L->sparse ? fbytes(L->n_src, L->fout)
                   : l > 0                    ? fbytes(L->n_dst, L->fin)
                                              : 0;
        tmax = t > tmax ? t : tmax;
        tuse |= L->gemm_first || L->sparse || l > 0;
    }
    for (int b = 0; b < 2; b++)
        if (guse[b]) GNN_TRY(ensure(be, (void **)&m->gbuf[b], &m->gbuf_bytes[b], gneed[b]));
    if (tuse) GNN_TRY(ensure(be, (void **)&m->dt, &m->dt_bytes, tmax));

    float *dz = dlogits;
    for (int l = m->cfg.layers - 1; l >= 0; l--) {
        layer_t *L = &m->layer[l];
        gnn_bgraph_t *g = L->graph;
        int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout;
        const float *w = m->params + L->w_off;
        float *dw = m->grads + L->w_off, *db = m->grads + L->b_off;
        float *dd = NULL; /* gradient of D, n_src x fin (aggregating first) */
        if (l > 0 && !L->gemm_first) dd = m->gbuf[(nl - 1 - l) % 2];

        GNN_TRY(gnn_be_bias_grad(be, nd, fout, dz, db));
        if (L->sparse) {
            /* dT = aggr^T(dZ); dW = D^T dT (+ dW_self = D^T dZ). Layer 0: no dD. */
            GNN_TRY(gnn_be_aggr_backward(be, g, ag, fout, L->t, L->z, dz, m->dt, L->ws,
                                         L->ws_bytes));
            GNN_TRY(gnn_be_sparse_mm_t(be, m->sp, m->sp_vals, m->dt, fout, dw));
            if (L->ws_off >= 0)
                GNN_TRY(gnn_be_sparse_mm_t(be, m->sp, m->sp_vals, dz, fout,
                                           m->grads + L->ws_off));
            break;
        }
        if (L->gemm_first) {
            /* dT = A^T dZ; dW = D^T dT (+ dW_self = D[:nd]^T dZ); then dD
             * block by block into the layer below's output. */
            GNN_TRY(gnn_be_aggr_backward(be, g, ag, fout, L->t, L->z, dz, m->dt, L->ws,
                                         L->ws_bytes));
            GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, ns, 1.0f, L->d, fin, m->dt, fout, 0.0f, dw,
                                fout));
            if (L->ws_off >= 0)
                GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->d, fin, dz, fout, 0.0f,
                                    m->grads + L->ws_off, fout));
            if (l == 0) break;
            GNN_TRY(dd_blockwise(m, L, dz));
            dz = (float *)L->in;
            if (m->halo.forward) GNN_TRY(m->halo.backward(m->halo.ctx, l - 1, dz, fin));
            continue;
        } else {
            /* dW = T^T dZ; dT = dZ W^T; dD = aggr^T(dT) (+ dZ W_self^T on the first rows). */
            GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->t, fin, dz, fout, 0.0f, dw,
                                fout));
            if (L->ws_off >= 0)
                GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->d, fin, dz, fout, 0.0f,
                                    m->grads + L->ws_off, fout));
            if (dd) {
                GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, w, fout, 0.0f, m->dt,
                                    fin));
                GNN_TRY(gnn_be_aggr_backward(be, g, ag, fin, L->d, L->t, m->dt, dd, L->ws,
                                             L->ws_bytes));
                if (L->ws_off >= 0)
                    GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout,
                                        m->params + L->ws_off, fout, 1.0f, dd, fin));
            }
        }
        if (l == 0) break;
        /* Through dropout and the ReLU of layer l - 1 (L->in: its output, or
         * D where dropout overwrote it, which gives the same result). */
        if (L->dropped) GNN_TRY(drop(m, 0, ns, fin, L->drop_off, dd, dd, 1));
        GNN_TRY(gnn_be_relu_backward(be, ns * fin, L->in, dd, dd));
        if (m->halo.forward) GNN_TRY(m->halo.backward(m->halo.ctx, l - 1, dd, fin));
        dz = dd;
    }
    return 0;
fail:
    return rc;
}
