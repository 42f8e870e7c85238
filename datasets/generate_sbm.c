/*
 * The SBM generator: a learnable graph with planted classes (generate.h).
 *
 * The model is a degree-corrected stochastic block model drawn the
 * Chung-Lu way:
 *   - classes: node v gets class v mod C, then the classes are shuffled, so
 *     class sizes differ by at most one;
 *   - degrees: each node draws a propensity theta_v from a Pareto law
 *     (shape degree_shape), capped at sqrt(N) times its minimum so no node
 *     wants more than a few percent of the edges; expected degrees are
 *     proportional to theta (power-law-ish tail, no isolated-by-design nodes);
 *   - edges: M = round(N D / 2) edges. Each picks its first end u with
 *     probability proportional to theta (class by its theta mass, then node
 *     within the class, each by an alias table); with probability H the
 *     second end is drawn the same way inside u's class, otherwise inside
 *     another class (a class drawn by theta mass until it differs). So a
 *     fraction H of the generated edges joins two nodes of one class. The
 *     builder symmetrises them, drops self loops and duplicates; both are
 *     rare (the loss is logged), so the stored mean degree is close to D;
 *   - features: class centroid + N(0, feat_noise^2) noise per entry, with
 *     centroids random unit vectors;
 *   - split: a random train_frac / valid_frac / rest of the nodes, each
 *     split listed in ascending node order.
 *
 * Edges are made in batches of SBM_BATCH, batch i from random stream
 * (seed, i); feature row v from stream (seed, v): the graph depends only on
 * the options. Memory besides the builder's budget: 20 bytes per node for
 * the model while edges are made (28 while it is built), then 4 for the
 * classes plus, at the end, 9 for the split.
 */
#include "datasets/builder.h"
#include "datasets/generate.h"
#include "datasets/generate_rng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define SBM_BATCH ((int64_t)1 << 20)
#define ROW_BLOCK_FLOATS ((int64_t)1 << 22) /* 16 MiB of features per put */
#define LABEL_BLOCK ((gnn_vid_t)1 << 20)

/*
 * The demo graph. Sized to generate in about 0.1 s; tuned so that a 2-layer
 * GCN has something to learn but cannot be perfect. Measured on seed 1 with
 * nearest-class-centroid classifiers (centroids from the train nodes,
 * accuracy on the test nodes, chance 0.10): raw features 0.45; features
 * averaged over node and neighbours 0.79 (one hop) and 0.91 (two hops).
 * Homophily 0.7 and mean degree 10 keep the two-hop figure below 0.92; at
 * 0.8 or 15 it passes 0.95. Noise 0.7 puts raw features near 0.45. Shape
 * 1.5 gives a heavy tail (degree sd about 19, max about 450) with one node
 * in ten of degree 2 or less, as in real graphs.
 */
void gnn_sbm_defaults(gnn_sbm_opts_t *o)
{
    o->nodes = 20000;
    o->classes = 10;
    o->feat_dim = 64;
    o->avg_degree = 10.0;
    o->homophily = 0.7;
    o->seed = 1;
    o->degree_shape = 1.5;
    o->feat_noise = 0.7;
    o->train_frac = 0.1;
    o->valid_frac = 0.1;
}

int gnn_sbm_check(const gnn_sbm_opts_t *o)
{
    if (o->classes < 2) return GNN_FAIL(GNN_EUSAGE, "--classes must be at least 2 (got %d)", o->classes);
    if (o->nodes < o->classes)
        return GNN_FAIL(GNN_EUSAGE, "--nodes must be at least --classes (got %lld < %d)",
                        (long long)o->nodes, o->classes);
    if (o->nodes > GNN_GENERATE_MAX_NODES)
        return GNN_FAIL(GNN_EUSAGE, "--nodes %lld is beyond the limit of %lld", (long long)o->nodes,
                        (long long)GNN_GENERATE_MAX_NODES);
    if (o->feat_dim < 0)
        return GNN_FAIL(GNN_EUSAGE, "--feat-dim must not be negative (got %d)", o->feat_dim);
    if (!(o->avg_degree > 0) || !(o->avg_degree < (double)o->nodes))
        return GNN_FAIL(GNN_EUSAGE, "--avg-degree must be in (0, --nodes) (got %g with %lld nodes)",
                        o->avg_degree, (long long)o->nodes);
    if (!((double)o->nodes * o->avg_degree / 2 < 0x1p62))
        return GNN_FAIL(GNN_EUSAGE, "--avg-degree %g with %lld nodes: too many edges",
                        o->avg_degree, (long long)o->nodes);
    if (!(o->homophily >= 0 && o->homophily <= 1))
        return GNN_FAIL(GNN_EUSAGE, "--homophily must be in [0, 1] (got %g)", o->homophily);
    if (!(o->degree_shape > 1))
        return GNN_FAIL(GNN_EUSAGE, "degree shape must be above 1 (got %g)", o->degree_shape);
    if (!(o->feat_noise >= 0))
        return GNN_FAIL(GNN_EUSAGE, "feature noise must not be negative (got %g)", o->feat_noise);
    if (!(o->train_frac >= 0 && o->valid_frac >= 0 && o->train_frac + o->valid_frac <= 1))
        return GNN_FAIL(GNN_EUSAGE, "split fractions must be in [0, 1] and sum to at most 1");
    return 0;
}

/* ---- The model -------------------------------------------------------------- */

/*
 * Nodes grouped by class: class c owns slots [off[c], off[c + 1]) of an
 * alias table for its theta-proportional draw. A slot packs what one draw
 * needs into 16 aligned bytes, so a draw costs one cache miss: node id (40
 * bits, N <= 2^40) and acceptance probability (24-bit fixed point) in a,
 * the alias's node id in b.
 */
typedef struct {
    uint64_t a, b;
} slot_t;

#define SLOT_ID_BITS 40
#define SLOT_ID_MASK (((uint64_t)1 << SLOT_ID_BITS) - 1)
#define SLOT_P_ONE ((uint64_t)1 << 24)

typedef struct {
    gnn_vid_t n;
    int c;
    int32_t *cls;       /* n: class of each node */
    gnn_vid_t *off;     /* c + 1 */
    slot_t *slot;       /* n */
    float *cprob;       /* c: the class draw, by theta mass */
    gnn_vid_t *calias;  /* c */
} sbm_model_t;

static void model_free_tables(sbm_model_t *m)
{
    gnn_free(m->slot);
    gnn_free(m->cprob);
    gnn_free(m->calias);
    m->slot = NULL;
    m->cprob = NULL;
    m->calias = NULL;
}

static void model_free(sbm_model_t *m)
{
    model_free_tables(m);
    gnn_free(m->cls);
    gnn_free(m->off);
    m->cls = NULL;
    m->off = NULL;
}

/*
 * Vose's alias table for weights w[0..n) (overwritten): a draw picks i
 * uniformly and keeps it with probability prob[i], else takes alias[i].
 * work holds n entries: small items grow from the front, large from the back.
 */
static void alias_build(double *w, gnn_vid_t n, float *prob, gnn_vid_t *alias, gnn_vid_t *work)
{
    double sum = 0;
    for (gnn_vid_t i = 0; i < n; i++) sum += w[i];
    gnn_vid_t ns = 0, nl = 0;
    for (gnn_vid_t i = 0; i < n; i++) {
        w[i] = sum > 0 ? w[i] * (double)n / sum : 1.0;
        if (w[i] < 1.0)
            work[ns++] = i;
        else
            work[n - 1 - nl++] = i;
    }
    while (ns > 0 && nl > 0) {
        gnn_vid_t s = work[--ns], l = work[n - nl];
        prob[s] = (float)w[s];
        alias[s] = l;
        w[l] += w[s] - 1.0;
        if (w[l] < 1.0) {
            nl--;
            work[ns++] = l;
        }
    }
    while (nl > 0) {
        gnn_vid_t l = work[n - nl--];
        prob[l] = 1.0f;
        alias[l] = l;
    }
    while (ns > 0) { /* only from rounding */
        gnn_vid_t s = work[--ns];
        prob[s] = 1.0f;
        alias[s] = s;
    }
}

static inline gnn_vid_t alias_draw(const float *prob, const gnn_vid_t *alias, gnn_vid_t n, double u)
{
    double x = u * (double)n;
    gnn_vid_t i = (gnn_vid_t)x;
    if (i >= n) i = n - 1;
    return x - (double)i < (double)prob[i] ? i : alias[i];
}

static int model_build(const gnn_sbm_opts_t *o, sbm_model_t *m)
{
    int rc = 0;
    gnn_vid_t n = o->nodes;
    int c = o->classes;
    double *w = NULL, *cw = NULL;
    gnn_vid_t *work = NULL, *fill = NULL, *alias = NULL;
    float *prob = NULL;
    memset(m, 0, sizeof *m);
    m->n = n;
    m->c = c;
    m->cls = gnn_malloc_array((size_t)n, sizeof *m->cls);
    m->off = gnn_calloc((size_t)c + 1, sizeof *m->off);
    m->slot = gnn_malloc_array((size_t)n, sizeof *m->slot);
    m->cprob = gnn_malloc_array((size_t)c, sizeof *m->cprob);
    m->calias = gnn_malloc_array((size_t)c, sizeof *m->calias);
    w = gnn_malloc_array((size_t)n, sizeof *w);
    cw = gnn_calloc((size_t)c, sizeof *cw);
    fill = gnn_malloc_array((size_t)c, sizeof *fill);
    GNN_CHECK(m->cls && m->off && m->slot && m->cprob && m->calias && w && cw && fill, GNN_ENOMEM,
              "out of memory for the SBM model of %lld nodes", (long long)n);

    /* Balanced classes, shuffled (Fisher-Yates). */
    gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_CLASS, 0);
    for (gnn_vid_t v = 0; v < n; v++) m->cls[v] = (int32_t)(v % c);
    for (gnn_vid_t v = n - 1; v > 0; v--) {
        gnn_vid_t j = (gnn_vid_t)(gnn__rng_unit(&r) * (double)(v + 1));
        if (j > v) j = v;
        int32_t t = m->cls[v];
        m->cls[v] = m->cls[j];
        m->cls[j] = t;
    }
    for (gnn_vid_t v = 0; v < n; v++) m->off[m->cls[v] + 1]++;
    for (int k = 0; k < c; k++) m->off[k + 1] += m->off[k];
    memcpy(fill, m->off, (size_t)c * sizeof *fill);
    for (gnn_vid_t v = 0; v < n; v++) m->slot[fill[m->cls[v]]++].a = (uint64_t)v;

    /* Pareto propensities, minimum 1, capped at sqrt(N), drawn in slot order. */
    double cap = sqrt((double)n);
    r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_THETA, 0);
    for (gnn_vid_t j = 0; j < n; j++) {
        double t = pow(1.0 - gnn__rng_unit(&r), -1.0 / o->degree_shape);
        w[j] = t < cap ? t : cap;
    }

    gnn_vid_t maxsize = c;
    for (int k = 0; k < c; k++) {
        gnn_vid_t sz = m->off[k + 1] - m->off[k];
        if (sz > maxsize) maxsize = sz;
        for (gnn_vid_t j = m->off[k]; j < m->off[k + 1]; j++) cw[k] += w[j];
    }
    work = gnn_malloc_array((size_t)maxsize, sizeof *work);
    alias = gnn_malloc_array((size_t)maxsize, sizeof *alias);
    prob = gnn_malloc_array((size_t)maxsize, sizeof *prob);
    GNN_CHECK(work && alias && prob, GNN_ENOMEM, "out of memory for the SBM model of %lld nodes",
              (long long)n);
    for (int k = 0; k < c; k++) {
        gnn_vid_t lo = m->off[k], sz = m->off[k + 1] - lo;
        slot_t *s = m->slot + lo;
        alias_build(w + lo, sz, prob, alias, work);
        for (gnn_vid_t i = 0; i < sz; i++) s[i].b = s[alias[i]].a; /* ids only so far */
        for (gnn_vid_t i = 0; i < sz; i++) {
            uint64_t p = (uint64_t)((double)prob[i] * (double)SLOT_P_ONE);
            if (p >= SLOT_P_ONE) p = SLOT_P_ONE - 1;
            s[i].a |= p << SLOT_ID_BITS;
        }
    }
    alias_build(cw, c, m->cprob, m->calias, work);
fail:
    gnn_free(w);
    gnn_free(cw);
    gnn_free(work);
    gnn_free(alias);
    gnn_free(prob);
    gnn_free(fill);
    if (rc < 0) model_free(m);
    return rc;
}

/* A draw inside class k, as a key: slot << 24 | 24-bit fraction. */
static inline uint64_t draw_key(const sbm_model_t *m, int k, double u)
{
    gnn_vid_t lo = m->off[k], sz = m->off[k + 1] - lo;
    double x = u * (double)sz;
    gnn_vid_t i = (gnn_vid_t)x;
    if (i >= sz) i = sz - 1;
    uint64_t frac = (uint64_t)((x - (double)i) * (double)SLOT_P_ONE);
    if (frac >= SLOT_P_ONE) frac = SLOT_P_ONE - 1;
    return ((uint64_t)(lo + i) << 24) | frac;
}

/* The node of a key: the slot's own node when the fraction is below its
 * probability, else its alias. */
static inline gnn_vid_t key_node(const slot_t *slot, uint64_t key)
{
    const slot_t *s = slot + (key >> 24);
    return (key & (SLOT_P_ONE - 1)) < (s->a >> SLOT_ID_BITS) ? (gnn_vid_t)(s->a & SLOT_ID_MASK)
                                                           : (gnn_vid_t)s->b;
}

/*
 * Batch `batch` of n edges from its own stream; counts those that join two
 * nodes of one class. Two passes: the first draws keys (slot and fraction)
 * into src and dst, the second resolves them to nodes. The loads of the
 * second pass are independent of one another, so the processor overlaps
 * their cache misses instead of waiting for each.
 */
typedef struct {
    const gnn_sbm_opts_t *o;
    const sbm_model_t *m;
    int64_t same; /* edges joining two nodes of one class, over the batches */
} sbm_ctx_t;

static void make_batch(void *ctx, int64_t batch, int64_t n, gnn_vid_t *src, gnn_vid_t *dst)
{
    sbm_ctx_t *c = ctx;
    const gnn_sbm_opts_t *o = c->o;
    const sbm_model_t *m = c->m;
    gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_EDGES, (uint64_t)batch);
    int64_t same = 0;
    for (int64_t i = 0; i < n; i++) {
        int cu = (int)alias_draw(m->cprob, m->calias, m->c, gnn__rng_unit(&r));
        int cv = cu;
        src[i] = (gnn_vid_t)draw_key(m, cu, gnn__rng_unit(&r));
        if (gnn__rng_unit(&r) < o->homophily)
            same++;
        else
            while (cv == cu) cv = (int)alias_draw(m->cprob, m->calias, m->c, gnn__rng_unit(&r));
        dst[i] = (gnn_vid_t)draw_key(m, cv, gnn__rng_unit(&r));
    }
    for (int64_t i = 0; i < n; i++) {
        src[i] = key_node(m->slot, (uint64_t)src[i]);
        dst[i] = key_node(m->slot, (uint64_t)dst[i]);
    }
    c->same += same;
}

/* ---- Writing ------------------------------------------------------------------ */

/* Unit-norm class centroids (c x f) from their own stream. */
static void make_centroids(const gnn_sbm_opts_t *o, float *mu)
{
    int64_t f = o->feat_dim;
    gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_CENTROID, 0);
    for (int k = 0; k < o->classes; k++) {
        float *row = mu + (int64_t)k * f;
        gnn__rng_normal_fill(&r, row, f, 1.0);
        double norm = 0;
        for (int64_t j = 0; j < f; j++) norm += (double)row[j] * row[j];
        norm = norm > 0 ? sqrt(norm) : 1.0;
        for (int64_t j = 0; j < f; j++) row[j] = (float)(row[j] / norm);
    }
}

static int write_features(const gnn_sbm_opts_t *o, const int32_t *cls, gnn_graph_writer_t *w)
{
    int rc = 0;
    int64_t f = o->feat_dim;
    gnn_vid_t n = o->nodes;
    gnn_vid_t block = ROW_BLOCK_FLOATS / f > 0 ? ROW_BLOCK_FLOATS / f : 1;
    if (block > n) block = n;
    float *mu = gnn_malloc_array((size_t)o->classes, (size_t)f * sizeof *mu);
    float *buf = gnn_malloc_array((size_t)block, (size_t)f * sizeof *buf);
    gnn_progress_t *prog = NULL;
    GNN_CHECK(mu && buf, GNN_ENOMEM, "out of memory for a block of %lld feature rows",
              (long long)block);
    make_centroids(o, mu);
    prog = gnn_progress_start("writing features", n, "rows");
    for (gnn_vid_t r0 = 0; r0 < n; r0 += block) {
        gnn_vid_t nr = n - r0 < block ? n - r0 : block;
        for (gnn_vid_t i = 0; i < nr; i++) {
            float *row = buf + i * f;
            const float *c = mu + (int64_t)cls[r0 + i] * f;
            gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_FEAT, (uint64_t)(r0 + i));
            gnn__rng_normal_fill(&r, row, f, o->feat_noise);
            for (int64_t j = 0; j < f; j++) row[j] += c[j];
        }
        GNN_TRY(gnn_graph_writer_put_feat(w, r0, nr, buf));
        gnn_progress_add(prog, nr);
    }
fail:
    gnn_progress_finish(prog);
    gnn_free(mu);
    gnn_free(buf);
    return rc;
}

static int write_labels(const sbm_model_t *m, gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_vid_t block = m->n < LABEL_BLOCK ? m->n : LABEL_BLOCK;
    int64_t *buf = gnn_malloc_array((size_t)block, sizeof *buf);
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory");
    for (gnn_vid_t r0 = 0; r0 < m->n; r0 += block) {
        gnn_vid_t nr = m->n - r0 < block ? m->n - r0 : block;
        for (gnn_vid_t i = 0; i < nr; i++) buf[i] = m->cls[r0 + i];
        GNN_TRY(gnn_graph_writer_put_labels(w, r0, nr, buf));
    }
fail:
    gnn_free(buf);
    return rc;
}

/* A random train_frac / valid_frac / rest split of exact sizes, each in
 * ascending node order. */
static int write_splits(const gnn_sbm_opts_t *o, gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_vid_t n = o->nodes;
    int64_t size[GNN_NUM_SPLITS];
    size[GNN_SPLIT_TRAIN] = (int64_t)llround(o->train_frac * (double)n);
    size[GNN_SPLIT_VALID] = (int64_t)llround(o->valid_frac * (double)n);
    if (size[GNN_SPLIT_TRAIN] + size[GNN_SPLIT_VALID] > n)
        size[GNN_SPLIT_VALID] = n - size[GNN_SPLIT_TRAIN];
    size[GNN_SPLIT_TEST] = n - size[GNN_SPLIT_TRAIN] - size[GNN_SPLIT_VALID];
    int64_t *perm = gnn_malloc_array((size_t)n, sizeof *perm);
    uint8_t *which = gnn_malloc((size_t)n);
    int64_t *idx = NULL;
    GNN_CHECK(perm && which, GNN_ENOMEM, "out of memory for the split of %lld nodes", (long long)n);
    /* Partial Fisher-Yates: perm[0..k) becomes a uniform random k-subset. */
    int64_t k = size[GNN_SPLIT_TRAIN] + size[GNN_SPLIT_VALID];
    gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_SBM_SPLIT, 0);
    for (gnn_vid_t v = 0; v < n; v++) perm[v] = v;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + (int64_t)(gnn__rng_unit(&r) * (double)(n - i));
        if (j >= n) j = n - 1;
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memset(which, GNN_SPLIT_TEST, (size_t)n);
    for (int64_t i = 0; i < k; i++)
        which[perm[i]] = i < size[GNN_SPLIT_TRAIN] ? GNN_SPLIT_TRAIN : GNN_SPLIT_VALID;
    gnn_free(perm);
    perm = NULL;
    idx = gnn_malloc_array((size_t)(size[GNN_SPLIT_TEST] > k ? size[GNN_SPLIT_TEST] : k) + 1,
                           sizeof *idx);
    GNN_CHECK(idx, GNN_ENOMEM, "out of memory for the split of %lld nodes", (long long)n);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        int64_t cnt = 0;
        for (gnn_vid_t v = 0; v < n; v++)
            if (which[v] == s) idx[cnt++] = v;
        GNN_TRY(gnn_graph_writer_put_split(w, (gnn_split_t)s, idx, cnt));
    }
fail:
    gnn_free(perm);
    gnn_free(which);
    gnn_free(idx);
    return rc;
}

int gnn_generate_sbm(const gnn_sbm_opts_t *o, const gnn_output_opts_t *out)
{
    int rc = 0;
    sbm_model_t m;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;
    memset(&m, 0, sizeof m);

    GNN_TRY(gnn_sbm_check(o));
    GNN_TRY(gnn_output_check(out));
    double t0 = gnn_now();
    gnn_vid_t n = o->nodes;
    gnn_eid_t edges = (gnn_eid_t)llround((double)n * o->avg_degree / 2);
    if (edges < 1) edges = 1;

    GNN_TRY(model_build(o, &m));
    sbm_ctx_t c = {.o = o, .m = &m};
    GNN_TRY(gnn_builder_generate(n, edges, SBM_BATCH, make_batch, &c, out->mem_budget,
                                 out->tmpdir, &b));
    const int64_t same = c.same;
    model_free_tables(&m); /* keep only the classes while the CSR is built */

    gnn_graph_header_t h = {
        .num_nodes = n,
        .num_edges = -1,
        .directed = 0,
        .csr_flags = gnn_builder_csr_flags(b) | GNN_CSR_SYMMETRIC,
        .feat_dim = o->feat_dim,
        .has_labels = 1,
        .num_classes = o->classes,
    };
    GNN_TRY(gnn_graph_writer_open(out->path, &h, out->force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    gnn_builder_free(b);
    b = NULL;
    if (o->feat_dim > 0) GNN_TRY(write_features(o, m.cls, w));
    GNN_TRY(write_labels(&m, w));
    GNN_TRY(write_splits(o, w));
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    GNN_TRY(rc);
    GNN_INFO("%s: SBM of %lld nodes, %d classes, %d features: %lld stored edges "
             "(mean degree %.2f; %lld generated, %.2f%% lost as duplicates or loops), "
             "homophily %.3f of generated edges, %.2f s",
             out->path, (long long)n, o->classes, o->feat_dim, (long long)st.num_edges,
             (double)st.num_edges / (double)n, (long long)edges,
             100.0 * (1.0 - (double)st.num_edges / (2.0 * (double)edges)),
             (double)same / (double)edges, gnn_now() - t0);
fail:
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    model_free(&m);
    return rc;
}
