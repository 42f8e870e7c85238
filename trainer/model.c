/*
 * The model as a stack of layers (trainer/model.h) over one flat parameter
 * buffer; each layer's arithmetic is its kind's (trainer/layer.h).
 *
 * Per layer the forward keeps the dropped input D (only when dropout is
 * on; otherwise D is the input itself; above layer 0 it replaces the input
 * in place, the input being the layer below's output) and the output Z
 * (ReLU applied in place: the backward reads the sign pattern from the
 * output); the layer keeps the rest it needs. The backward walks the
 * layers downwards with two gradient buffers used in turn (each layer's
 * input gradient goes to the one not holding its output gradient) and one
 * scratch for the layers' own use, so its memory does not grow with depth.
 */
#include "trainer/model.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <string.h>

struct gnn_model {
    gnn_backend_t *be;
    gnn_model_config_t cfg;
    gnn_layer_t layer[GNN_MODEL_MAX_LAYERS];
    int64_t n_params;
    int64_t extra_off;  /* the config's extra parameters, after the layers' */
    float *params, *grads;
    uint64_t drop_seed, drop_offset;
    const gnn_bsparse_t *sp; /* sparse input of layer 0, or NULL */
    float *sp_vals;          /* its values after dropout */
    size_t sp_vals_bytes;
    /* Backward scratch. */
    float *gbuf[2];  size_t gbuf_bytes[2];
    float *dt;       size_t dt_bytes;
    int64_t dd_block; /* rows per block of a blockwise input gradient */
    int dd_fixed;     /* ... set by gnn_model_set_block_rows (else grown on a GPU) */
    int64_t gpu_block_bytes; /* a GPU's block scratch (0: not chosen yet) */
    gnn_model_halo_t halo; /* distributed: exchange around layers (halo.forward set) */
    const int64_t *row_ids; /* dropout by these row ids (no halo), over ... */
    int64_t rows_global;    /* ... this many nodes */
    int want_dx0;           /* the backward also forms the input's gradient */
    float *dx0;             /* ... where the last backward left it */
    const int64_t *in_rows; /* layer 0's input row i is x + in_rows[i] * in_dim */
};

int gnn_model_kind_from_name(const char *name, gnn_model_kind_t *kind)
{
    return gnn_layer_kind_find(name, kind);
}

const char *gnn_model_kind_name(gnn_model_kind_t kind) { return kind ? kind->name : "?"; }

/* ---- Creation ------------------------------------------------------------- */

static int check_config(const gnn_model_config_t *c)
{
    if (!c->kind) return GNN_FAIL(GNN_EINVAL, "model: no layer kind");
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
    if (!c->aggr && c->kind->default_aggr)
        return GNN_FAIL(GNN_EINVAL, "model: %s needs an aggregator", c->kind->name);
    if (c->heads < 0 || c->heads > 64 || c->out_heads < 0 || c->out_heads > 64)
        return GNN_FAIL(GNN_EINVAL, "model: heads %d and %d outside [1, 64]", c->heads,
                        c->out_heads);
    if (!(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "model: attention dropout %g outside [0, 1)",
                        (double)c->attn_dropout);
    if (!(c->negative_slope >= 0.0f && c->negative_slope < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "model: negative slope %g outside [0, 1)",
                        (double)c->negative_slope);
    return 0;
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
    if (cfg->kind && !cfg->kind->any_aggr)
        m->cfg.aggr = NULL;
    if (cfg->kind && !cfg->kind->any_aggr && cfg->kind->default_aggr)
        GNN_TRY(gnn_aggr_registry_find(reg, cfg->kind->default_aggr, &m->cfg.aggr));
    if (cfg->kind && !cfg->kind->attention) m->cfg.attention = NULL;
    if (cfg->kind && cfg->kind->attention && !m->cfg.attention)
        GNN_TRY(gnn_aggr_registry_find_kind(reg, "gat", GNN_AGGR_KIND_ATTENTION,
                                            &m->cfg.attention));
    if (!m->cfg.heads) m->cfg.heads = 1;
    if (!m->cfg.out_heads) m->cfg.out_heads = 1;
    if (!(m->cfg.negative_slope > 0.0f)) m->cfg.negative_slope = 0.2f;
    GNN_TRY(check_config(&m->cfg));

    int64_t off = 0;
    for (int l = 0; l < cfg->layers; l++) {
        gnn_layer_t *L = &m->layer[l];
        L->kind = cfg->kind;
        L->index = l;
        L->last = l == cfg->layers - 1;
        L->fin = l == 0 ? cfg->in_dim : m->layer[l - 1].fout;
        L->fout = L->last ? cfg->classes : cfg->hidden;
        L->aggr = m->cfg.aggr;
        L->attn = m->cfg.attention;
        L->heads = L->last ? m->cfg.out_heads : m->cfg.heads;
        L->init_fan_in = m->cfg.init_fan_in;
        L->attn_dropout = m->cfg.attn_dropout;
        L->negative_slope = m->cfg.negative_slope;
        L->relations = m->cfg.relations;
        L->bases = m->cfg.num_bases;
        L->off = off;
        GNN_TRY(L->kind->setup(L));
        off += L->count;
    }
    m->extra_off = off;
    GNN_CHECK(cfg->extra >= 0 && (cfg->extra == 0 || cfg->extra_init), GNN_EINVAL,
              "model: %" PRId64 " extra parameters without an initialiser", cfg->extra);
    off += cfg->extra;
    m->n_params = off;

    host = gnn_calloc((size_t)off + 1, sizeof *host);
    GNN_CHECK(host, GNN_ENOMEM, "model parameters");
    uint64_t init_seed = gnn_rng_mix64(seed ^ 0x696e6974ull);
    for (int l = 0; l < cfg->layers; l++) {
        gnn_layer_t *L = &m->layer[l];
        L->kind->init(L, host + L->off, init_seed);
    }
    if (cfg->extra) cfg->extra_init(cfg->extra_ctx, host + m->extra_off, cfg->extra, init_seed);
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
        gnn_layer_t *L = &m->layer[l];
        gnn_be_free(m->be, L->drop);
        gnn_be_free(m->be, L->z);
        if (L->kind && L->kind->free) L->kind->free(L, m->be);
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

int64_t gnn_model_extra_offset(const gnn_model_t *m) { return m->extra_off; }
float *gnn_model_params(gnn_model_t *m) { return m->params; }
float *gnn_model_grads(gnn_model_t *m) { return m->grads; }
uint64_t gnn_model_rng_offset(const gnn_model_t *m) { return m->drop_offset; }

void gnn_model_set_rng_offset(gnn_model_t *m, uint64_t offset) { m->drop_offset = offset; }

int gnn_model_set_row_ids(gnn_model_t *m, const int64_t *row_id, int64_t n_global)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model row ids: NULL model");
    if (row_id && n_global < 0)
        return GNN_FAIL(GNN_EINVAL, "model row ids: %" PRId64 " nodes", n_global);
    m->row_ids = row_id;
    m->rows_global = row_id ? n_global : 0;
    return 0;
}

uint64_t gnn_model_dropout_span(const gnn_model_t *m, int64_t n_global)
{
    uint64_t span = 0;
    for (int l = 0; l < m->cfg.layers; l++) {
        const gnn_layer_t *L = &m->layer[l];
        if (m->cfg.dropout > 0.0f) span += (uint64_t)n_global * (uint64_t)L->fin;
        if (L->attn_dropout > 0.0f) span += (uint64_t)L->kind->dropout_keys;
    }
    return span;
}
uint64_t gnn_model_dropout_key(const gnn_model_t *m) { return m->drop_seed; }

void gnn_model_set_block_rows(gnn_model_t *m, int64_t rows)
{
    m->dd_block = rows < 1 ? 1 : rows;
    m->dd_fixed = 1;
}

/* Scratch a GPU's blockwise input gradient may take per block: at most
 * this, and an eighth of the memory free when first asked. */
#define GPU_BLOCK_BYTES ((int64_t)1 << 30)

/* Rows per block of L's blockwise input gradient: dd_block on the CPU
 * (blocks that stay in its caches); on a GPU as many as its block scratch
 * holds, so the gradient is formed in one piece (a launch or three per
 * layer instead of three per block) on all but the widest inputs of a
 * very large graph. */
static int64_t block_rows(gnn_model_t *m, const gnn_layer_t *L)
{
    if (m->dd_fixed || gnn_backend_kind(m->be) != GNN_BACKEND_CUDA) return m->dd_block;
    if (!m->gpu_block_bytes) {
        size_t avail = 0;
        int64_t b = GPU_BLOCK_BYTES;
        if (gnn_be_mem_available(m->be, &avail) == 0 && (int64_t)(avail / 8) < b)
            b = (int64_t)(avail / 8);
        gnn_error_clear();
        m->gpu_block_bytes = b > 1 ? b : 1;
    }
    int64_t r = m->gpu_block_bytes / ((L->fin > 0 ? L->fin : 1) * (int64_t)sizeof(float));
    return r > m->dd_block ? r : m->dd_block;
}

void gnn_model_set_rng(gnn_model_t *m, uint64_t seed, uint64_t offset)
{
    m->drop_seed = gnn_rng_mix64(seed ^ 0x64726f70ull);
    m->drop_offset = offset;
}

void gnn_model_layer_width(const gnn_model_t *m, int l, int64_t *fin, int64_t *fout)
{
    *fin = m->layer[l].fin;
    *fout = m->layer[l].fout;
}

int gnn_model_layer_tensors(const gnn_model_t *m, int l, gnn_layer_tensor_t *t)
{
    const gnn_layer_t *L = &m->layer[l];
    return L->kind->tensors ? L->kind->tensors(L, t) : 0;
}

void gnn_model_layer_span(const gnn_model_t *m, int l, int64_t *offset, int64_t *count)
{
    *offset = m->layer[l].off;
    *count = m->layer[l].count;
}

size_t gnn_model_activation_bytes(const gnn_model_t *m)
{
    size_t s = m->gbuf_bytes[0] + m->gbuf_bytes[1] + m->dt_bytes;
    for (int l = 0; l < m->cfg.layers; l++) {
        const gnn_layer_t *L = &m->layer[l];
        s += L->drop_bytes + L->z_bytes + L->kind->state_bytes(L);
    }
    s += m->sp_vals_bytes;
    return s;
}

int gnn_model_input_takes_rows(const gnn_model_t *m)
{
    const gnn_layer_t *L0 = &m->layer[0];
    return gnn_be_has_gemm_rows(m->be) && L0->kind->takes_rows && L0->kind->takes_rows(L0) &&
           m->cfg.dropout == 0.0f && !m->want_dx0 && !m->sp && !m->halo.forward;
}

int gnn_model_set_input_rows(gnn_model_t *m, const int64_t *rows)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model input rows: NULL model");
    if (rows && !gnn_model_input_takes_rows(m))
        return GNN_FAIL(GNN_EUNSUPPORTED,
                        "model input rows: layer 0 cannot read rows by index here (it needs a "
                        "%s layer that multiplies first on a host backend, no input dropout, "
                        "sparse input or input gradient)",
                        "gcn or sage");
    m->in_rows = rows;
    return 0;
}

int gnn_model_set_input_grad(gnn_model_t *m, int on)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model input gradient: NULL model");
    if (on && m->sp)
        return GNN_FAIL(GNN_EUNSUPPORTED, "model input gradient: not with sparse input");
    if (on && m->in_rows)
        return GNN_FAIL(GNN_EUNSUPPORTED, "model input gradient: not with input rows by index");
    m->want_dx0 = on != 0;
    m->dx0 = NULL;
    return 0;
}

float *gnn_model_input_grad(gnn_model_t *m) { return m ? m->dx0 : NULL; }

int gnn_model_set_sparse_input(gnn_model_t *m, const gnn_bsparse_t *s)
{
    if (!m) return GNN_FAIL(GNN_EINVAL, "model: NULL argument");
    if (s && m->want_dx0)
        return GNN_FAIL(GNN_EUNSUPPORTED, "model: sparse input gives no input gradient");
    if (s) {
        if (gnn_bsparse_cols(s) != m->cfg.in_dim)
            return GNN_FAIL(GNN_EINVAL,
                            "model: sparse input has %" PRId64 " columns, the model %" PRId64,
                            gnn_bsparse_cols(s), m->cfg.in_dim);
        const gnn_layer_t *L0 = &m->layer[0];
        int rc = L0->kind->sparse_check ? L0->kind->sparse_check(L0)
                                        : GNN_FAIL(GNN_EUNSUPPORTED,
                                                   "model: %s layers do not take sparse input",
                                                   L0->kind->name);
        if (rc < 0) return rc;
    }
    m->sp = s;
    return 0;
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

/* ---- Services to the layers ----------------------------------------------- */

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

/* env->input_grad: through the dropout of L's input and the ReLU of the
 * layer below (L->in: its output, or D where dropout overwrote it, which
 * gives the same result: the two differ only where an element was
 * dropped, and its gradient is zero there anyway). */
static int input_grad(gnn_layer_env_t *env, gnn_layer_t *L, int64_t r0, int64_t nr, float *g,
                      float *dst)
{
    gnn_model_t *m = env->model;
    int64_t fin = L->fin;
    if (L->dropped && !L->drop_rows && L->d == L->in && L->index > 0 &&
        m->layer[L->index - 1].kind->act == GNN_LAYER_ACT_RELU)
        /* D in place over a ReLU's output: both backwards in one pass,
         * with no mask (gnn_relu_drop_backward) */
        return gnn_be_relu_drop_backward(m->be, nr * fin, m->cfg.dropout, L->in + r0 * fin, g,
                                         dst);
    if (L->dropped) {
        int rc = drop(m, r0, nr, fin, L->drop_off, g, g, 1);
        if (rc < 0) return rc;
    }
    if (L->index == 0) /* the model's input: no activation below */
        return g == dst ? 0 : gnn_be_copy(m->be, dst, g, gnn_layer_fbytes(nr, fin));
    if (m->layer[L->index - 1].kind->act == GNN_LAYER_ACT_ELU)
        return gnn_be_elu_backward(m->be, nr * fin, L->in + r0 * fin, g, dst);
    return gnn_be_relu_backward(m->be, nr * fin, L->in + r0 * fin, g, dst);
}

/* env->drop_rows: rows of L's dropped input, as layer_forward would have
 * formed them. */
static int drop_rows(gnn_layer_env_t *env, gnn_layer_t *L, int64_t r0, int64_t nr, float *dst)
{
    return drop(env->model, r0, nr, L->fin, L->drop_off, L->in + r0 * L->fin, dst, 0);
}

/* env->dropout_key: a key from the stream's position (distinct from the
 * input dropout's key), the position advanced by one. */
static uint64_t dropout_key(gnn_layer_env_t *env, uint64_t *base_out, uint64_t *at_out)
{
    gnn_model_t *m = env->model;
    const uint64_t at = m->drop_offset++, base = gnn_rng_mix64(m->drop_seed ^ 0x6174746eull);
    if (base_out) *base_out = base;
    if (at_out) *at_out = at;
    return gnn_rng_key_at(base, at);
}

static int fwd_scratch(gnn_layer_env_t *env, size_t bytes, float **out)
{
    gnn_model_t *m = env->model;
    int rc = gnn_layer_ensure(m->be, (void **)&m->dt, &m->dt_bytes, bytes ? bytes : 1);
    *out = rc < 0 ? NULL : m->dt;
    return rc;
}

static gnn_layer_env_t env_of(gnn_model_t *m)
{
    gnn_layer_env_t e = {
        .be = m->be,
        .params = m->params,
        .grads = m->grads,
        .sp = m->sp,
        .sp_vals = m->sp_vals,
        .dt = m->dt,
        .block_rows = m->dd_block,
        .input_grad = input_grad,
        .drop_rows = drop_rows,
        .dropout_key = dropout_key,
        .fwd_scratch = fwd_scratch,
        .row_id = m->halo.forward ? m->halo.row_id : m->row_ids,
        .n_global = m->halo.forward ? m->halo.n_global : m->rows_global,
        .model = m,
    };
    return e;
}

/* ---- Forward -------------------------------------------------------------- */

/* Layer 0's sparse input through dropout (every forward: the values are
 * copied even at p = 0). */
static int drop_sparse(gnn_model_t *m, gnn_layer_t *L, int training)
{
    int rc = 0;
    GNN_CHECK(gnn_bsparse_rows(m->sp) == L->n_src, GNN_EINVAL,
              "model: sparse input of %" PRId64 " rows for a layer of %" PRId64 " sources",
              gnn_bsparse_rows(m->sp), L->n_src);
    size_t nnzb = (size_t)gnn_bsparse_nnz(m->sp) * sizeof(float);
    GNN_TRY(gnn_layer_ensure(m->be, (void **)&m->sp_vals, &m->sp_vals_bytes,
                             nnzb ? nnzb : sizeof(float)));
    float p = training ? m->cfg.dropout : 0.0f;
    L->drop_off = m->drop_offset;
    /* Counters as the dense input's: by node id where the rows have ids. */
    GNN_TRY(gnn_be_sparse_dropout(m->be, m->sp, p, m->drop_seed, m->drop_offset, m->row_ids,
                                  m->sp_vals));
    if (p > 0.0f)
        m->drop_offset += (uint64_t)((m->row_ids ? m->rows_global : L->n_src) * L->fin);
    L->sparse = 1;
    L->in = NULL;
    L->d = NULL;
    return 0;
fail:
    return rc;
}

static int layer_forward(gnn_model_t *m, int l, gnn_bgraph_t *g, const float *in, int training)
{
    int rc = 0;
    gnn_layer_t *L = &m->layer[l];
    int64_t ns = gnn_bgraph_n_src(g), nd = gnn_bgraph_n_dst(g), fin = L->fin, fout = L->fout;
    L->graph = g;
    L->in = in;
    L->n_src = ns;
    L->n_dst = nd;
    L->trained = training;
    L->sparse = 0;
    L->drop_rows = 0;
    L->d_rows = NULL;
    gnn_layer_env_t env = env_of(m);
    /* Spread over ranks, the output has room for the next layer's halo. */
    env.out_rows = m->halo.forward && m->halo.n_rows > nd ? m->halo.n_rows : nd;
    if (l == 0 && m->sp) {
        GNN_TRY(drop_sparse(m, L, training));
        env.sp_vals = m->sp_vals;
    } else if (l == 0 && m->in_rows) { /* no dropout: gnn_model_input_takes_rows */
        L->d = in;
        L->d_rows = m->in_rows;
        L->dropped = 0;
    } else {
        /*
         * D = dropout(H) while training. Above layer 0 it overwrites H (the
         * previous layer's output, ours to change): the backward then reads
         * the ReLU's sign pattern from D, which differs from H's only where
         * the element was dropped and its gradient is zero anyway. Layer
         * 0's input is the caller's: the layer says where D goes.
         */
        L->d = in;
        L->dropped = 0;
        if (training && m->cfg.dropout > 0.0f) {
            /* In place only over a ReLU's output (its backward reads the
             * sign pattern, which dropout keeps where it matters);
             * elsewhere into the layer's buffer, or not at all where the
             * layer draws D's rows itself. */
            float *dst = (float *)in;
            int in_place = l > 0 && m->layer[l - 1].kind->act == GNN_LAYER_ACT_RELU;
            L->drop_off = m->drop_offset;
            if (l > 0 && m->layer[l - 1].drop_done) {
                /* the layer below dropped its output in its bias pass */
                if (m->layer[l - 1].z != in || m->layer[l - 1].drop_off_next != m->drop_offset)
                    return GNN_FAIL(GNN_EINVAL, "model: layer %d's input was dropped for "
                                                "another input", l);
            } else if (!in_place && L->kind->drops_rows) {
                L->drop_rows = 1;
            } else {
                if (!in_place) GNN_TRY(L->kind->drop_target(L, &env, &dst));
                GNN_TRY(drop(m, 0, ns, fin, m->drop_offset, in, dst, 0));
                L->d = dst;
            }
            m->drop_offset += (uint64_t)((m->halo.forward ? m->halo.n_global
                                          : m->row_ids   ? m->rows_global
                                                         : ns) *
                                         fin);
            L->dropped = 1;
        }
    }
    /* The layer's bias and this activation in one pass where the layer
     * ends with its bias (gnn_layer_bias_out); else here. */
    env.out_act = L->last ? GNN_ACT_NONE
                  : L->kind->act == GNN_LAYER_ACT_ELU ? GNN_ACT_ELU
                                                      : GNN_ACT_RELU;
    L->act_done = 0;
    L->drop_done = 0;
    /* And the next layer's input dropout, where that layer would drop Z in
     * place (over a ReLU) on this process alone (no halo rows to come)
     * and this forward draws no keys before its bias (which would move
     * the counters). */
    if (training && m->cfg.dropout > 0.0f && !L->last && !m->halo.forward &&
        L->kind->act == GNN_LAYER_ACT_RELU && !(L->kind->dropout_keys && L->attn_dropout > 0.0f)) {
        env.out_drop_p = m->cfg.dropout;
        env.out_drop_seed = m->drop_seed;
        env.out_drop_off = m->drop_offset;
        env.out_drop_ids = m->row_ids;
        L->drop_off_next = m->drop_offset;
    }
    GNN_TRY(L->kind->forward(L, &env));
    if (L->drop_done && m->drop_offset != L->drop_off_next)
        return GNN_FAIL(GNN_EINVAL, "model: layer %d drew keys before its bias", l);
    if (!L->last && !L->act_done && L->kind->act == GNN_LAYER_ACT_ELU)
        GNN_TRY(gnn_be_elu(m->be, nd * fout, L->z, L->z));
    else if (!L->last && !L->act_done)
        GNN_TRY(gnn_be_relu(m->be, nd * fout, L->z, L->z));
    if (m->halo.forward && !L->last && !L->sparse && m->layer[l + 1].kind->reads_halo)
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
        if (m->layer[l].kind->square_sources)
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
    if (m->layer[l].kind->square_sources)
        GNN_CHECK(gnn_bgraph_n_dst(g) <= gnn_bgraph_n_src(g), GNN_EINVAL,
                  "model layer: more destinations than sources");
    for (int k = 0; k < m->cfg.layers; k++) m->layer[k].trained = 0;
    const gnn_bsparse_t *sp = m->sp;
    const int64_t *rows = m->in_rows;
    m->sp = NULL;
    m->in_rows = NULL;
    rc = layer_forward(m, l, g, in, 0);
    m->sp = sp;
    m->in_rows = rows;
    if (rc < 0) goto fail;
    *out = m->layer[l].z;
    return 0;
fail:
    return rc;
}

const float *gnn_model_last_hidden(const gnn_model_t *m, int64_t *rows, int64_t *cols)
{
    const gnn_layer_t *L = &m->layer[m->cfg.layers - 1];
    *rows = L->n_src;
    *cols = L->fin;
    return L->in;
}

/* ---- Backward ------------------------------------------------------------- */

/*
 * Which gradient buffer each layer's input gradient uses, top down: the
 * one not holding its output gradient (dlogits, or the layer below's
 * output for a blockwise gradient, hold none). slot[l]: 0/1, for a whole
 * gradient or a blockwise one's block scratch; sizes: what each needs.
 */
static void plan_scratch(gnn_model_t *m, int slot[], size_t need[2], int use[2], size_t *tmax,
                         int *tuse)
{
    int cur = -1; /* the buffer holding the gradient of the layer's output */
    need[0] = need[1] = 0;
    use[0] = use[1] = 0;
    *tmax = 0;
    *tuse = 0;
    for (int l = m->cfg.layers - 1; l >= 0; l--) {
        const gnn_layer_t *L = &m->layer[l];
        gnn_layer_scratch_t s;
        L->kind->scratch(L, l > 0 || m->want_dx0, &s);
        if (s.uses_t) {
            *tuse = 1;
            *tmax = s.t_bytes > *tmax ? s.t_bytes : *tmax;
        }
        slot[l] = -1;
        if (l == 0 && !m->want_dx0) continue;
        int b = cur == 0 ? 1 : 0;
        const int64_t br = block_rows(m, L);
        int64_t rows = s.dx_blockwise && L->n_src > br ? br : L->n_src;
        size_t a = gnn_layer_fbytes(rows, L->fin);
        need[b] = a > need[b] ? a : need[b];
        use[b] = 1;
        slot[l] = b;
        cur = s.dx_blockwise ? -1 : b;
    }
}

int gnn_model_backward(gnn_model_t *m, float *dlogits)
{
    int rc = 0;
    GNN_CHECK(m && dlogits, GNN_EINVAL, "model backward: NULL argument");
    gnn_backend_t *be = m->be;
    for (int l = 0; l < m->cfg.layers; l++)
        GNN_CHECK(m->layer[l].graph && m->layer[l].trained, GNN_EINVAL,
                  "model backward: no training forward before it");

    int slot[GNN_MODEL_MAX_LAYERS], use[2], tuse;
    size_t need[2], tmax;
    plan_scratch(m, slot, need, use, &tmax, &tuse);
    for (int b = 0; b < 2; b++)
        if (use[b])
            GNN_TRY(gnn_layer_ensure(be, (void **)&m->gbuf[b], &m->gbuf_bytes[b], need[b]));
    if (tuse) GNN_TRY(gnn_layer_ensure(be, (void **)&m->dt, &m->dt_bytes, tmax));

    gnn_layer_env_t env = env_of(m);
    float *dz = dlogits;
    for (int l = m->cfg.layers - 1; l >= 0; l--) {
        gnn_layer_t *L = &m->layer[l];
        float *dx = NULL;
        env.blk = env.dx = slot[l] >= 0 ? m->gbuf[slot[l]] : NULL;
        env.block_rows = block_rows(m, L);
        GNN_TRY(L->kind->backward(L, &env, dz, l > 0 || m->want_dx0 ? &dx : NULL));
        if (l == 0) {
            m->dx0 = dx;
            break;
        }
        if (m->halo.forward && L->kind->reads_halo)
            GNN_TRY(m->halo.backward(m->halo.ctx, l - 1, dx, L->fin));
        dz = dx;
    }
    return 0;
fail:
    return rc;
}
