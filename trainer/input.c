/*
 * The model's input when nodes have learnable rows (--embed-dim D,
 * trainer/embed.h): each input row is the node's features (when the graph
 * file has any and --embed all) followed by its D-wide row of the table,
 * or the row alone. The model forms the gradient of its input; the table
 * takes the gradient of its columns in a row-sparse step after every
 * backward, on exactly the rows the step's input read.
 *
 * Which nodes get a row: "all" gives every node a row, beside its
 * features when there are some. "featureless": on a graph of one type,
 * every node of a file without features; on a typed graph (format version
 * 2), the nodes of the types without features, whose rows then take the
 * first D columns of their input rows (their features there are zeros,
 * the input D or the widest type's features wide, whichever is more), so
 * the table holds no row for a node with features.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include "graph/base/mpiutil.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static double gib(size_t b) { return (double)b / (double)(1u << 30); }

/* A typed graph with --embed featureless: the featureless types' nodes
 * among the rows held (graph-file ids gid, NULL: row = id) into
 * j->emb_tab and j->emb_gid; *count: how many. Without --embed-dim a
 * featureless type is an error naming them. */
static int typed_rows(gnn_job_t *j, int64_t rows, const int64_t *gid, int64_t *count)
{
    int rc = 0;
    const gnn_graph_types_t *t = j->g.types;
    char names[256] = "";
    size_t at = 0;
    int nfl = 0;
    for (int i = 0; i < t->n_ntypes; i++)
        if (!t->feat_dim[i]) {
            nfl++;
            if (at < sizeof names)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "",
                                       t->ntype[i]);
        }
    *count = 0;
    if (!j->o->embed_dim) {
        GNN_CHECK(nfl == 0, GNN_EINVAL,
                  "%s: node type%s %s %s no features: give %s learnable input rows with "
                  "--embed-dim D",
                  j->o->data, nfl > 1 ? "s" : "", names, nfl > 1 ? "have" : "has",
                  nfl > 1 ? "them" : "it");
        return 0;
    }
    GNN_CHECK(nfl > 0, GNN_EUSAGE,
              "--embed-dim: every node type of %s has features, so none is featureless "
              "(--embed all gives every node a learnable row beside its features)",
              j->o->data);
    j->emb_tab = gnn_malloc_array((size_t)rows + 1, sizeof *j->emb_tab);
    GNN_CHECK(j->emb_tab, GNN_ENOMEM, "input rows of %" PRId64 " nodes", rows);
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t v = gid ? gid[r] : r;
        j->emb_tab[r] = t->feat_dim[gnn_graph_types_of(t, v)] ? -1 : n++;
    }
    j->emb_gid = gnn_malloc_array((size_t)n + 1, sizeof *j->emb_gid);
    GNN_CHECK(j->emb_gid, GNN_ENOMEM, "input rows of %" PRId64 " nodes", n);
    for (int64_t r = 0; r < rows; r++)
        if (j->emb_tab[r] >= 0) j->emb_gid[j->emb_tab[r]] = gid ? gid[r] : r;
    j->emb_typed = 1;
    *count = n;
fail:
    return rc;
}

void gnn__input_typed_free(gnn_job_t *j)
{
    gnn_free(j->emb_tab);
    gnn_free(j->emb_gid);
    gnn_free(j->emb_hsel);
    gnn_free(j->emb_htrow);
    gnn_free(j->emb_hbuf);
    j->emb_hbuf = NULL;
    j->emb_hbuf_cap = 0;
    if (j->be) {
        gnn_be_free(j->be, j->emb_sel);
        gnn_be_free(j->be, j->emb_trow);
        gnn_be_free(j->be, j->emb_buf);
    }
    j->emb_tab = j->emb_gid = j->emb_hsel = j->emb_htrow = NULL;
    j->emb_sel = j->emb_trow = NULL;
    j->emb_buf = NULL;
}

int gnn__input_setup(gnn_job_t *j, int64_t rows, const int64_t *gid)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    const char *path = o->data;
    int64_t f = j->g.feat_dim;
    j->in_dim = f;
    if (j->g.types && strcmp(o->embed, "all")) { /* rows for the featureless types only */
        int64_t n_fl = 0;
        GNN_TRY(typed_rows(j, rows, gid, &n_fl));
        if (!o->embed_dim) return 0;
        rows = n_fl;
        gid = j->emb_gid;
    }
    if (!o->embed_dim) {
        GNN_CHECK(f > 0, GNN_EINVAL,
                  "%s has no node features: give its nodes learnable input rows with "
                  "--embed-dim D",
                  path);
        return 0;
    }
    GNN_CHECK(f == 0 || j->emb_typed || !strcmp(o->embed, "all"), GNN_EUSAGE,
              "--embed-dim: every node of %s has features, so none is featureless (--embed all "
              "gives every node a learnable row beside its features)",
              path);
    GNN_CHECK(strcmp(o->sparse_features, "on"), GNN_EUSAGE,
              "--sparse-features on: not with --embed-dim (the input rows are dense)");
    gnn_sparse_opt_kind_t kind =
        !strcmp(o->embed_optimizer, "adagrad") ? GNN_SPARSE_ADAGRAD : GNN_SPARSE_ADAM;
    int keep_best = o->save_predictions || o->save_embeddings || o->save_model || o->checkpoint;
    /* What the table needs on this process, against what holds it: the
     * backend, or on a device backend host memory when asked (--embed-on
     * host) or when the device lacks room (auto). */
    size_t row = gnn_embed_row_bytes(o->embed_dim, kind) +
                 (keep_best ? (size_t)o->embed_dim * sizeof(float) : 0);
    size_t need = (size_t)rows * row, avail = 0;
    GNN_CHECK(rows == 0 || need / (size_t)rows == row, GNN_ENOMEM,
              "--embed-dim %" PRId64 ": the table of %" PRId64 " rows overflows", o->embed_dim,
              rows);
    gnn_backend_t *where = j->be;
    GNN_TRY(gnn_be_mem_available(j->be, &avail));
    /* auto: on the device when the table and the features take at most
     * three quarters of its free memory, the rest left to the model. */
    size_t feat = (size_t)rows * (size_t)f * sizeof(float);
    if (!gnn_be_host_memory(j->be) &&
        (!strcmp(o->embed_on, "host") ||
         (!strcmp(o->embed_on, "auto") && (need + feat) / 3 > avail / 4))) {
        GNN_TRY(gnn_backend_open("cpu", &j->emb_be));
        where = j->emb_be;
        GNN_TRY(gnn_be_mem_available(where, &avail));
    }
    GNN_CHECK(need <= avail, GNN_ENOMEM,
              "--embed-dim %" PRId64 ": the table of %" PRId64 " rows needs %.2f GiB (%zu bytes "
              "a row: values, %s state%s), %s has %.2f GiB available",
              o->embed_dim, rows, gib(need), row, o->embed_optimizer,
              keep_best ? " and the best epoch's copy" : "", gnn_backend_describe(where),
              gib(avail));
    gnn_embed_config_t ec = {
        .rows = rows,
        .dim = o->embed_dim,
        .opt = {.kind = kind, .lr = (float)(o->embed_lr > 0.0 ? o->embed_lr : o->lr)},
        .seed = (uint64_t)o->seed,
        .gid = gid,
        .keep_best = keep_best,
    };
    GNN_TRY(gnn_embed_create(where, &ec, &j->emb));
    j->in_dim = j->emb_typed ? (f > o->embed_dim ? f : o->embed_dim) : f + o->embed_dim;
    GNN_INFO("learnable input rows: %" PRId64 " x %" PRId64 " (%s, lr %g), %.1f MB in %s%s",
             rows, o->embed_dim, o->embed_optimizer, (double)ec.opt.lr, (double)need / 1e6,
             j->emb_be ? "host memory" : gnn_backend_describe(j->be),
             f ? ", beside the features" : "");
fail:
    return rc;
}

int gnn__input_start_run(gnn_job_t *j, int restore)
{
    int rc = 0;
    if (!j->emb) return 0;
    gnn_checkpoint_t *c = &j->ck;
    GNN_TRY(gnn_model_set_input_grad(j->model, 1));
    if (restore && c->embed_w) { /* every node's rows by graph-file id: this process's */
        int64_t n = gnn_embed_rows(j->emb), D = gnn_embed_dim(j->emb);
        int64_t N = j->dist ? j->dist->n_global : j->emb_typed ? j->g.csr.n_rows : n;
        GNN_CHECK(c->embed_rows == N, GNN_EINVAL,
                  "%s: %" PRId64 " input rows in the checkpoint, the graph has %" PRId64,
                  j->o->checkpoint, c->embed_rows, N);
        if (!j->dist && !j->emb_typed) {
            GNN_TRY(gnn_embed_upload(j->emb, c->embed_w, c->embed_s1, c->embed_s2,
                                     c->embed_best));
        } else { /* this process's rows, by their graph-file ids */
            const float *src[4] = {c->embed_w, c->embed_s1, c->embed_s2, c->embed_best};
            GNN_CHECK(j->dist || j->emb_typed, GNN_EINVAL, "input rows: no ids");
            float *mine[4] = {NULL, NULL, NULL, NULL};
            for (int k = 0; k < 4 && rc == 0; k++) {
                if (!src[k]) continue;
                mine[k] = gnn_alloc_large(((size_t)n * (size_t)D + 1) * sizeof(float));
                if (!mine[k]) {
                    rc = GNN_FAIL(GNN_ENOMEM, "input rows of the checkpoint");
                    break;
                }
                const int64_t *rg = j->emb_typed ? j->emb_gid : j->dist->gid;
                for (int64_t r = 0; r < n; r++)
                    memcpy(mine[k] + r * D, src[k] + rg[r] * D, (size_t)D * sizeof(float));
            }
            if (rc == 0) rc = gnn_embed_upload(j->emb, mine[0], mine[1], mine[2], mine[3]);
            for (int k = 0; k < 4; k++) gnn_free(mine[k]);
            if (rc < 0) goto fail;
        }
        if (!c->embed_best) GNN_TRY(gnn_embed_keep_best(j->emb)); /* a file without it */
        gnn_embed_set_step_count(j->emb, c->embed_step);
        /* The host copies go: rank 0 makes them again at its next save. */
        float **a[4] = {&c->embed_w, &c->embed_s1, &c->embed_s2, &c->embed_best};
        for (int k = 0; k < 4; k++) {
            gnn_free(*a[k]);
            *a[k] = NULL;
        }
        return 0;
    }
    GNN_TRY(gnn_embed_reset(j->emb, (uint64_t)j->o->seed + (uint64_t)c->run));
fail:
    return rc;
}

/* The table is in host memory apart from the model's device (emb_be):
 * its rows go through host buffers (the paths of a partition directory). */
static int host_table(const gnn_job_t *j) { return j->emb_be != NULL; }

static int host_build(gnn_job_t *j, int64_t n, const float *feat, const int64_t *rows_host,
                      const float **x);
static int host_step(gnn_job_t *j);

/* The input rows among n (node ids ids, host; NULL: 0 .. n - 1, indexes
 * of j->emb_tab) that hold a table row: their positions and table rows,
 * on the host (j->emb_hsel, emb_htrow) and the backend; *k how many. The
 * whole graph's selection (ids NULL) is made once and kept. */
static int typed_select(gnn_job_t *j, int64_t n, const int64_t *ids, int64_t *k)
{
    int rc = 0;
    if (!ids && j->emb_whole == n + 1) { /* the whole graph's, as last time */
        *k = j->emb_whole_k;
        return 0;
    }
    j->emb_whole = 0;
    gnn_free(j->emb_hsel);
    gnn_free(j->emb_htrow);
    j->emb_hsel = gnn_malloc_array((size_t)n + 1, sizeof *j->emb_hsel);
    j->emb_htrow = gnn_malloc_array((size_t)n + 1, sizeof *j->emb_htrow);
    GNN_CHECK(j->emb_hsel && j->emb_htrow, GNN_ENOMEM, "input rows: %" PRId64 " inputs", n);
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = j->emb_tab[ids ? ids[i] : i];
        if (t < 0) continue;
        j->emb_hsel[c] = i;
        j->emb_htrow[c++] = t;
    }
    size_t b = ((size_t)c + 1) * sizeof(int64_t);
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->emb_sel, &j->emb_sel_bytes, b));
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->emb_trow, &j->emb_trow_bytes, b));
    if (c) {
        GNN_TRY(gnn_be_upload(j->be, j->emb_sel, j->emb_hsel, (size_t)c * sizeof(int64_t)));
        /* positions in increasing order: in range, none twice */
        GNN_TRY(gnn_be_trust_buffer(j->be, j->emb_sel, c, n, 1));
        GNN_TRY(gnn_be_upload(j->be, j->emb_trow, j->emb_htrow, (size_t)c * sizeof(int64_t)));
    }
    *k = c;
    if (!ids) {
        j->emb_whole = n + 1;
        j->emb_whole_k = c;
    }
fail:
    return rc;
}

/* Typed rows: dst (n x in_dim) = the features feat (backend, n x
 * feat_dim, or NULL: dst already holds them), zeros beyond them, and the
 * selected rows' table rows (typed_select) over their first D columns. */
static int typed_place(gnn_job_t *j, int64_t n, const float *feat, int64_t k, float *dst)
{
    int rc = 0;
    int64_t f = j->g.feat_dim, w = j->in_dim, D = gnn_embed_dim(j->emb);
    if (feat || w > f) {
        if (w > f) GNN_TRY(gnn_be_zero(j->be, dst, (size_t)n * (size_t)w * sizeof(float)));
        if (feat && f > 0) GNN_TRY(gnn_be_copy_rows(j->be, n, f, feat, f, n, NULL, dst, w));
    }
    if (!k) return 0;
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->emb_buf, &j->emb_buf_bytes,
                            (size_t)k * (size_t)D * sizeof(float)));
    if (host_table(j)) { /* gathered in host memory by the host table rows, then up */
        GNN_TRY(gnn_grow((void **)&j->emb_hbuf, &j->emb_hbuf_cap, (size_t)(k * D),
                         sizeof *j->emb_hbuf));
        GNN_TRY(gnn_embed_gather(j->emb, k, j->emb_htrow, j->emb_hbuf, D));
        GNN_TRY(gnn_be_upload(j->be, j->emb_buf, j->emb_hbuf,
                              (size_t)k * (size_t)D * sizeof(float)));
    } else {
        GNN_TRY(gnn_embed_gather(j->emb, k, j->emb_trow, j->emb_buf, D));
    }
    GNN_TRY(gnn_be_scatter_rows(j->be, k, D, j->emb_buf, D, j->emb_sel, dst, w, n));
fail:
    return rc;
}

int gnn__input_build(gnn_job_t *j, int64_t n, const float *feat, const int64_t *rows,
                     const int64_t *rows_host, const float **x)
{
    int rc = 0;
    if (!j->emb) {
        *x = feat;
        return 0;
    }
    if (j->emb_typed) {
        int64_t k = 0;
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->xin, &j->xin_bytes,
                                (size_t)n * (size_t)j->in_dim * sizeof(float)));
        GNN_TRY(typed_select(j, n, rows_host, &k));
        GNN_TRY(typed_place(j, n, feat, k, j->xin));
        j->emb_n = k;
        j->emb_n_in = n;
        j->emb_rows = j->emb_trow;
        *x = j->xin;
        return 0;
    }
    if (host_table(j)) return host_build(j, n, feat, rows_host, x);
    int64_t f = j->g.feat_dim, w = j->in_dim;
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->xin, &j->xin_bytes,
                            (size_t)n * (size_t)w * sizeof(float)));
    if (f > 0) GNN_TRY(gnn_be_copy_rows(j->be, n, f, feat, f, n, NULL, j->xin, w));
    GNN_TRY(gnn_embed_gather(j->emb, n, rows, j->xin + f, w));
    j->emb_n = n;
    j->emb_rows = rows;
    *x = j->xin;
fail:
    return rc;
}

int gnn__input_gather(gnn_job_t *j, int64_t n, const int64_t *idx, const int64_t *idx_host,
                      float *dst)
{
    int rc = 0;
    int64_t f = j->g.feat_dim, w = j->in_dim, all = j->emb ? gnn_embed_rows(j->emb) : 0;
    if (!j->emb) return gnn_be_gather_rows(j->be, n, f, j->x, j->g.csr.n_rows, idx, dst);
    if (j->emb_typed) { /* features of the nodes, then the featureless ones' rows */
        int64_t k = 0;
        if (w > f) GNN_TRY(gnn_be_zero(j->be, dst, (size_t)n * (size_t)w * sizeof(float)));
        if (f > 0) GNN_TRY(gnn_be_copy_rows(j->be, n, f, j->x, f, j->g.csr.n_rows, idx, dst, w));
        GNN_TRY(typed_select(j, n, idx_host, &k));
        GNN_TRY(typed_place(j, n, NULL, k, dst));
        j->emb_n = 0; /* not a training input */
        return 0;
    }
    if (f > 0) GNN_TRY(gnn_be_copy_rows(j->be, n, f, j->x, f, all, idx, dst, w));
    if (host_table(j)) { /* the rows through host memory */
        const float *x;
        GNN_TRY(host_build(j, n, NULL, idx_host, &x));
        GNN_TRY(gnn_be_copy_rows(j->be, n, gnn_embed_dim(j->emb), x + f, w, n, NULL, dst + f, w));
        j->emb_n = 0;
    } else {
        GNN_TRY(gnn_embed_gather(j->emb, n, idx, dst + f, w));
    }
fail:
    return rc;
}

int gnn__input_step(gnn_job_t *j)
{
    if (!j->emb) return 0;
    if (host_table(j) && !j->emb_typed) return host_step(j);
    const float *g = j->emb_n ? gnn_model_input_grad(j->model) : NULL;
    if (j->emb_n && !g)
        return GNN_FAIL(GNN_EINVAL, "input rows: the backward formed no input gradient");
    if (j->emb_typed) { /* the selected rows' first D columns, gathered */
        int rc = 0;
        int64_t k = j->emb_n, D = gnn_embed_dim(j->emb);
        if (k) {
            GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->emb_buf, &j->emb_buf_bytes,
                                    (size_t)k * (size_t)D * sizeof(float)));
            GNN_TRY(gnn_be_copy_rows(j->be, k, D, g, j->in_dim, j->emb_n_in, j->emb_sel,
                                     j->emb_buf, D));
        }
        if (host_table(j)) { /* the gradients down, the step in host memory */
            GNN_TRY(gnn_grow((void **)&j->emb_hbuf, &j->emb_hbuf_cap, (size_t)(k * D) + 1,
                             sizeof *j->emb_hbuf));
            if (k)
                GNN_TRY(gnn_be_download(j->be, j->emb_hbuf, j->emb_buf,
                                        (size_t)k * (size_t)D * sizeof(float)));
            GNN_TRY(gnn_embed_step(j->emb, k, k ? j->emb_htrow : NULL, k ? j->emb_hbuf : NULL,
                                   D));
        } else {
            GNN_TRY(gnn_embed_step(j->emb, k, k ? j->emb_trow : NULL, k ? j->emb_buf : NULL, D));
        }
        j->emb_n = 0;
        j->emb_rows = NULL;
    fail:
        return rc;
    }
    int rc = gnn_embed_step(j->emb, j->emb_n, j->emb_rows, g ? g + j->g.feat_dim : NULL,
                            j->in_dim);
    j->emb_n = 0;
    j->emb_rows = NULL;
    return rc;
}

/* Host copy of the table's arrays (k: 0 values, 1 and 2 the state, 3 the
 * best copy) into dst, rows x dim. */
static int table_array(gnn_job_t *j, int k, float *dst)
{
    int rc = 0;
    float *tmp = NULL, *to = dst;
    int64_t D = gnn_embed_dim(j->emb), n = gnn_embed_rows(j->emb);
    if (j->emb_typed) { /* the held nodes' rows, zeros for those with features */
        tmp = gnn_alloc_large(((size_t)n * (size_t)D + 1) * sizeof(float));
        GNN_CHECK(tmp, GNN_ENOMEM, "input rows");
        to = tmp;
    }
    float *a[4] = {k == 0 ? to : NULL, k == 1 ? to : NULL, k == 2 ? to : NULL,
                   k == 3 ? to : NULL};
    GNN_TRY(gnn_embed_download(j->emb, a[0], a[1], a[2], a[3]));
    if (j->emb_typed) {
        int64_t held = j->dist ? j->dist->n_owned : j->g.csr.n_rows;
        for (int64_t r = 0; r < held; r++) {
            int64_t t = j->emb_tab[r];
            if (t < 0)
                memset(dst + r * D, 0, (size_t)D * sizeof(float));
            else
                memcpy(dst + r * D, tmp + t * D, (size_t)D * sizeof(float));
        }
    }
fail:
    gnn_free(tmp);
    return rc;
}

/* Array k of the table (table_array) of every node by graph-file id into
 * dst (N x D, rank 0's; over a partition directory gathered from every
 * rank: collective, failures agreed). */
int gnn__input_gather_array(gnn_job_t *j, int k, float *dst)
{
    int rc = 0;
    if (!j->dist) return table_array(j, k, dst);
    int64_t D = gnn_embed_dim(j->emb), n = j->emb_typed ? j->dist->n_owned : gnn_embed_rows(j->emb);
    float *mine = gnn_alloc_large(((size_t)n * (size_t)D + 1) * sizeof(float));
    int local = mine ? table_array(j, k, mine) : GNN_FAIL(GNN_ENOMEM, "input rows");
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn__dist_gather_rows(j, mine, D, dst));
fail:
    gnn_free(mine);
    return rc;
}

int gnn__input_save(gnn_job_t *j)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    if (!j->emb) return 0;
    int64_t D = gnn_embed_dim(j->emb), N = c->embed_rows;
    int adam = !strcmp(c->embed_opt, "adam");
    float **dst[4] = {&c->embed_w, &c->embed_s1, &c->embed_s2, &c->embed_best};
    int want[4] = {1, 1, adam, (int)c->embed_best_kept};
    int local = 0;
    if (j->rank == 0)
        for (int k = 0; k < 4 && local == 0; k++)
            if (want[k] && !*dst[k]) {
                *dst[k] = gnn_alloc_large(((size_t)N * (size_t)D + 1) * sizeof(float));
                if (!*dst[k]) local = GNN_FAIL(GNN_ENOMEM, "checkpoint: %" PRId64 " input rows", N);
            }
    GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, local) : local);
    c->embed_step = gnn_embed_step_count(j->emb);
    for (int k = 0; k < 4; k++)
        if (want[k]) GNN_TRY(gnn__input_gather_array(j, k, j->rank == 0 ? *dst[k] : NULL));
fail:
    return rc;
}

int gnn__input_keep_best(gnn_job_t *j) { return j->emb ? gnn_embed_keep_best(j->emb) : 0; }
int gnn__input_restore_best(gnn_job_t *j) { return j->emb ? gnn_embed_restore_best(j->emb) : 0; }

/* ---- Over a partition directory --------------------------------------------- */

/* What moving rows between ranks keeps (host buffers grow as needed). */
typedef struct gnn_input_dist {
    float *rows; size_t rows_cap;     /* a step's input rows (n x D) */
    float *grad; size_t grad_cap;     /* their gradients */
    float *pack; size_t pack_cap;     /* rows served or stepped, packed */
    float *dev; size_t dev_bytes;     /* backend staging of rows */
    int64_t *idx; size_t idx_bytes;   /* backend row ids */
    int64_t *list; size_t list_cap;   /* host row ids */
    int64_t *rem; size_t rem_cap;     /* positions of remote rows in the input */
    int64_t *nodes; size_t nodes_cap; /* the step's input rows (sampler ids) */
    int64_t n_in;                     /* input rows of the step */
    int64_t n_rem;
    /* A typed graph's step: the input rows of featureless types alone hold
     * table rows; nodes, rows, rem and the gradients then list those. */
    int64_t *sel; size_t sel_cap;     /* their positions in the input (host) */
    int64_t *sel_dev; size_t sel_dev_bytes; /* ... on the backend */
    int64_t n_sel;
    int64_t *trow; size_t trow_cap;   /* table rows of owned rows (typed), host */
    gnn_dist_rows_t plan;             /* the step's remote rows */
    float *acc;                       /* table rows x D: gradients summed per row */
    unsigned char *mark;              /* table rows: in acc this step */
} gnn_input_dist_t;

void gnn__input_dist_free(gnn_job_t *j)
{
    gnn_input_dist_t *s = j->emb_dist;
    if (!s) return;
    gnn_free(s->rows);
    gnn_free(s->grad);
    gnn_free(s->pack);
    if (j->be) {
        gnn_be_free(j->be, s->dev);
        gnn_be_free(j->be, s->idx);
    }
    gnn_free(s->list);
    gnn_free(s->rem);
    gnn_free(s->nodes);
    gnn_free(s->sel);
    gnn_free(s->trow);
    if (j->be) gnn_be_free(j->be, s->sel_dev);
    gnn_dist_rows_free(&s->plan);
    gnn_free(s->acc);
    gnn_free(s->mark);
    gnn_free(s);
    j->emb_dist = NULL;
}

/* Room for n floats at *p (contents not kept). */
static int host_ensure(float **p, size_t *cap, size_t n)
{
    if (*cap >= n + 1) return 0;
    gnn_free(*p);
    *p = gnn_alloc_large((n + 1) * sizeof(float));
    *cap = *p ? n + 1 : 0;
    return *p ? 0 : GNN_FAIL(GNN_ENOMEM, "input rows: %zu floats", n);
}

static int ids_ensure(int64_t **p, size_t *cap, size_t n)
{
    if (*cap >= n + 1) return 0;
    gnn_free(*p);
    *p = gnn_malloc_array(n + 1, sizeof **p);
    *cap = *p ? n + 1 : 0;
    return *p ? 0 : GNN_FAIL(GNN_ENOMEM, "input rows: %zu ids", n);
}

static int state_of(gnn_job_t *j, gnn_input_dist_t **out)
{
    if (!j->emb_dist) {
        j->emb_dist = gnn_calloc(1, sizeof *j->emb_dist);
        if (!j->emb_dist) return GNN_FAIL(GNN_ENOMEM, "input rows");
    }
    *out = j->emb_dist;
    return 0;
}

/* The backend staging buffer for n rows of D and the ids (when ids). */
static int stage(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const int64_t *ids,
                 const int64_t **dev_ids)
{
    int rc = 0;
    int64_t D = gnn_embed_dim(j->emb);
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&s->dev, &s->dev_bytes,
                            (size_t)n * (size_t)D * sizeof(float)));
    if (ids) {
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&s->idx, &s->idx_bytes,
                                (size_t)n * sizeof(int64_t)));
        GNN_TRY(gnn_be_upload(j->be, s->idx, ids, (size_t)n * sizeof(int64_t)));
        *dev_ids = s->idx;
    }
fail:
    return rc;
}

/* Table rows ids[i] (host; NULL: 0 .. n - 1) into host out (n x D). */
static int rows_to_host(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const int64_t *ids,
                        float *out)
{
    int rc = 0;
    int64_t D = gnn_embed_dim(j->emb);
    if (n == 0) return 0;
    if (gnn_be_host_memory(gnn_embed_backend(j->emb))) /* straight from host memory */
        return gnn_embed_gather(j->emb, n, ids, out, D);
    const int64_t *di = NULL;
    GNN_TRY(stage(j, s, n, ids, &di));
    GNN_TRY(gnn_embed_gather(j->emb, n, di, s->dev, D));
    GNN_TRY(gnn_be_download(j->be, out, s->dev, (size_t)n * (size_t)D * sizeof(float)));
fail:
    return rc;
}

/* The table's step on rows ids (host; NULL: 0 .. n - 1) with host
 * gradients g (n x D). */
static int step_from_host(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const int64_t *ids,
                          const float *g)
{
    int rc = 0;
    int64_t D = gnn_embed_dim(j->emb);
    const int64_t *di = NULL;
    if (gnn_be_host_memory(gnn_embed_backend(j->emb))) /* straight into host memory */
        return gnn_embed_step(j->emb, n, ids, g, D);
    if (n > 0) {
        GNN_TRY(stage(j, s, n, ids, &di));
        GNN_TRY(gnn_be_upload(j->be, s->dev, g, (size_t)n * (size_t)D * sizeof(float)));
    }
    GNN_TRY(gnn_embed_step(j->emb, n, di, s->dev, D));
fail:
    return rc;
}

/* The model's input for n rows: feat beside the host rows e (n x D). */
static int input_from_host(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const float *feat,
                           const float *e, const float **x)
{
    int rc = 0;
    int64_t f = j->g.feat_dim, w = j->in_dim, D = gnn_embed_dim(j->emb);
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->xin, &j->xin_bytes,
                            (size_t)n * (size_t)w * sizeof(float)));
    if (n > 0) {
        if (f > 0 && feat) /* (none: an inference batch's rows alone, input_gather) */
            GNN_TRY(gnn_be_copy_rows(j->be, n, f, feat, f, n, NULL, j->xin, w));
        GNN_TRY(stage(j, s, n, NULL, NULL));
        GNN_TRY(gnn_be_upload(j->be, s->dev, e, (size_t)n * (size_t)D * sizeof(float)));
        GNN_TRY(gnn_be_copy_rows(j->be, n, D, s->dev, D, n, NULL, j->xin + f, w));
    }
    j->emb_n = n;
    j->emb_rows = NULL;
    *x = j->xin;
fail:
    return rc;
}

/* The gradient of the input's learnable columns, n rows, into host g. */
static int grad_to_host(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, float *g)
{
    int rc = 0;
    int64_t f = j->g.feat_dim, D = gnn_embed_dim(j->emb);
    if (n == 0) return 0;
    const float *dx = gnn_model_input_grad(j->model);
    GNN_CHECK(dx, GNN_EINVAL, "input rows: the backward formed no input gradient");
    GNN_TRY(stage(j, s, n, NULL, NULL));
    GNN_TRY(gnn_be_copy_rows(j->be, n, D, dx + f, j->in_dim, n, NULL, s->dev, D));
    GNN_TRY(gnn_be_download(j->be, g, s->dev, (size_t)n * (size_t)D * sizeof(float)));
fail:
    return rc;
}

static int host_build(gnn_job_t *j, int64_t n, const float *feat, const int64_t *rows_host,
                      const float **x)
{
    int rc = 0;
    gnn_input_dist_t *s = NULL;
    int64_t D = gnn_embed_dim(j->emb);
    GNN_TRY(state_of(j, &s));
    GNN_TRY(host_ensure(&s->rows, &s->rows_cap, (size_t)(n * D)));
    GNN_TRY(ids_ensure(&s->nodes, &s->nodes_cap, (size_t)n));
    if (rows_host && n > 0) memcpy(s->nodes, rows_host, (size_t)n * sizeof *rows_host);
    s->n_in = rows_host ? n : -1; /* -1: rows 0 .. n - 1 */
    GNN_TRY(rows_to_host(j, s, n, rows_host, s->rows));
    GNN_TRY(input_from_host(j, s, n, feat, s->rows, x));
fail:
    return rc;
}

static int host_step(gnn_job_t *j)
{
    int rc = 0;
    gnn_input_dist_t *s = j->emb_dist;
    int64_t D = gnn_embed_dim(j->emb), n = j->emb_n;
    GNN_CHECK(s || n == 0, GNN_EINVAL, "input rows: a step without an input");
    if (n > 0) {
        GNN_TRY(host_ensure(&s->grad, &s->grad_cap, (size_t)(n * D)));
        GNN_TRY(grad_to_host(j, s, n, s->grad));
    }
    GNN_TRY(step_from_host(j, s, n, n > 0 && s->n_in >= 0 ? s->nodes : NULL,
                           n > 0 ? s->grad : NULL));
    j->emb_n = 0;
fail:
    return rc;
}

/* Over ranks, a typed graph's featureless rows: the part's local rows
 * (owned and halo) of featureless types, on the host (j->emb_hsel) and the
 * backend (j->emb_sel), made once; *k how many. */
static int typed_local_rows(gnn_job_t *j, int64_t *k)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    const gnn_graph_types_t *t = j->g.types;
    if (!j->emb_hsel) {
        j->emb_hsel = gnn_malloc_array((size_t)d->n_local + 1, sizeof *j->emb_hsel);
        GNN_CHECK(j->emb_hsel, GNN_ENOMEM, "input rows");
        int64_t c = 0;
        for (int64_t r = 0; r < d->n_local; r++)
            if (!t->feat_dim[gnn_graph_types_of(t, d->gid[r])]) j->emb_hsel[c++] = r;
        j->emb_n_in = c; /* (the count, kept here) */
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->emb_sel, &j->emb_sel_bytes,
                                ((size_t)c + 1) * sizeof(int64_t)));
        if (c) {
            GNN_TRY(gnn_be_upload(j->be, j->emb_sel, j->emb_hsel, (size_t)c * sizeof(int64_t)));
            GNN_TRY(gnn_be_trust_buffer(j->be, j->emb_sel, c, d->n_local, 1)); /* rows in order */
        }
    }
    *k = j->emb_n_in;
fail:
    return rc;
}

/* Typed, over ranks: the input from the host rows s->rows (n_local x D,
 * the featureless rows' table rows, zeros elsewhere). */
static int typed_dist_input(gnn_job_t *j, gnn_input_dist_t *s, const float **x)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t D = gnn_embed_dim(j->emb), nl = d->n_local, f = j->g.feat_dim, w = j->in_dim, k = 0;
    GNN_TRY(typed_local_rows(j, &k));
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->xin, &j->xin_bytes,
                            (size_t)nl * (size_t)w * sizeof(float)));
    if (w > f) GNN_TRY(gnn_be_zero(j->be, j->xin, (size_t)nl * (size_t)w * sizeof(float)));
    if (f > 0) GNN_TRY(gnn_be_copy_rows(j->be, nl, f, j->x, f, nl, NULL, j->xin, w));
    GNN_TRY(host_ensure(&s->pack, &s->pack_cap, (size_t)(k * D)));
    for (int64_t i = 0; i < k; i++)
        memcpy(s->pack + i * D, s->rows + j->emb_hsel[i] * D, (size_t)D * sizeof(float));
    if (k) {
        GNN_TRY(stage(j, s, k, NULL, NULL));
        GNN_TRY(gnn_be_upload(j->be, s->dev, s->pack, (size_t)k * (size_t)D * sizeof(float)));
        GNN_TRY(gnn_be_scatter_rows(j->be, k, D, s->dev, D, j->emb_sel, j->xin, w, nl));
    }
    j->emb_n = k;
    *x = j->xin;
fail:
    return rc;
}

/* Typed, over ranks, after the backward: the featureless rows' gradients
 * (their first D columns) to the host, into their owners' rows, and the
 * owned rows' step. Collective. */
static int typed_dist_step(gnn_job_t *j, gnn_input_dist_t *s)
{
    int rc = 0, local = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t D = gnn_embed_dim(j->emb), nl = d->n_local, k = 0, n = gnn_embed_rows(j->emb);
    const float *g = gnn_model_input_grad(j->model);
    local = typed_local_rows(j, &k);
    if (local == 0 && !g) local = GNN_FAIL(GNN_EINVAL, "input rows: no input gradient");
    if (local == 0) local = host_ensure(&s->grad, &s->grad_cap, (size_t)(nl * D));
    if (local == 0) local = host_ensure(&s->pack, &s->pack_cap, (size_t)((k > n ? k : n) * D));
    if (local == 0 && k) local = stage(j, s, k, NULL, NULL);
    if (local == 0 && k)
        local = gnn_be_copy_rows(j->be, k, D, g, j->in_dim, nl, j->emb_sel, s->dev, D);
    if (local == 0 && k)
        local = gnn_be_download(j->be, s->pack, s->dev, (size_t)k * (size_t)D * sizeof(float));
    if (local == 0) {
        memset(s->grad, 0, (size_t)nl * (size_t)D * sizeof(float));
        for (int64_t i = 0; i < k; i++)
            memcpy(s->grad + j->emb_hsel[i] * D, s->pack + i * D, (size_t)D * sizeof(float));
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn_dist_halo_backward(d, NULL, s->grad, D)); /* into the owners' rows */
    for (int64_t r = 0; r < d->n_owned; r++) /* the owned rows, in table order */
        if (j->emb_tab[r] >= 0)
            memcpy(s->pack + j->emb_tab[r] * D, s->grad + r * D, (size_t)D * sizeof(float));
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, step_from_host(j, s, n, NULL, s->pack)));
    j->emb_n = 0;
fail:
    return rc;
}

int gnn__input_dist_full(gnn_job_t *j, const float **x)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_input_dist_t *s = NULL;
    if (!j->emb) {
        *x = j->x;
        return 0;
    }
    int64_t D = gnn_embed_dim(j->emb);
    int local = state_of(j, &s);
    if (local == 0) local = host_ensure(&s->rows, &s->rows_cap, (size_t)(d->n_local * D));
    if (j->emb_typed) { /* the owned featureless rows at their places, zeros elsewhere */
        int64_t n = gnn_embed_rows(j->emb);
        if (local == 0) local = host_ensure(&s->pack, &s->pack_cap, (size_t)(n * D));
        if (local == 0) local = rows_to_host(j, s, n, NULL, s->pack);
        if (local == 0) {
            memset(s->rows, 0, (size_t)d->n_local * (size_t)D * sizeof(float));
            for (int64_t r = 0; r < d->n_owned; r++)
                if (j->emb_tab[r] >= 0)
                    memcpy(s->rows + r * D, s->pack + j->emb_tab[r] * D,
                           (size_t)D * sizeof(float));
        }
    } else if (local == 0) {
        local = rows_to_host(j, s, d->n_owned, NULL, s->rows);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn_dist_halo_forward(d, NULL, s->rows, D)); /* the halo rows from their owners */
    if (j->emb_typed)
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, typed_dist_input(j, s, x)));
    else
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD,
                               input_from_host(j, s, d->n_local, j->x, s->rows, x)));
fail:
    return rc;
}

int gnn__input_dist_full_step(gnn_job_t *j)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_input_dist_t *s = j->emb_dist;
    if (!j->emb) return 0;
    if (j->emb_typed && s) return typed_dist_step(j, s);
    int64_t D = gnn_embed_dim(j->emb);
    int local = s ? host_ensure(&s->grad, &s->grad_cap, (size_t)(d->n_local * D))
                  : GNN_FAIL(GNN_EINVAL, "input rows: a step without an input");
    if (local == 0) local = grad_to_host(j, s, d->n_local, s->grad);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn_dist_halo_backward(d, NULL, s->grad, D)); /* into the owners' rows */
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, step_from_host(j, s, d->n_owned, NULL, s->grad)));
fail:
    return rc;
}

/* Table rows of the n owned rows r[i] into s->trow (typed: j->emb_tab;
 * every owned row of a featureless type has one). */
static int typed_table_rows(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const int64_t *r,
                            const int64_t **out)
{
    if (!j->emb_typed) {
        *out = r;
        return 0;
    }
    int rc = ids_ensure(&s->trow, &s->trow_cap, (size_t)n);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        s->trow[i] = j->emb_tab[r[i]];
        if (s->trow[i] < 0)
            rc = GNN_FAIL(GNN_EINVAL, "input rows: owned row %" PRId64 " has no table row", r[i]);
    }
    *out = s->trow;
    return rc;
}

/* A typed graph's step input: the positions of its nodes of featureless
 * types into s->sel and those nodes into s->nodes (s->n_sel of them). */
static int typed_step_rows(gnn_job_t *j, gnn_input_dist_t *s, const int64_t *nodes, int64_t n)
{
    int rc = 0;
    const gnn_dist_part_t *d = j->dist;
    const gnn_graph_types_t *t = j->g.types;
    GNN_TRY(ids_ensure(&s->sel, &s->sel_cap, (size_t)n));
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t gid = d->p2g[gnn_dist_pid(d, nodes[i])];
        if (t->feat_dim[gnn_graph_types_of(t, gid)]) continue;
        s->sel[k] = i;
        s->nodes[k++] = nodes[i];
    }
    s->n_sel = k;
fail:
    return rc;
}

int gnn__input_dist_fetch(gnn_job_t *j, const int64_t *nodes, int64_t n)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_input_dist_t *s = NULL;
    if (!j->emb) return 0;
    int64_t D = gnn_embed_dim(j->emb), no = d->n_owned, n_all = n;
    const int64_t *tr = NULL;
    int local = state_of(j, &s);
    /* The owned rows from the table here, the others' ids to ask for
     * (typed: of the featureless types' rows alone). */
    if (local == 0) local = ids_ensure(&s->list, &s->list_cap, (size_t)n);
    if (local == 0) local = ids_ensure(&s->rem, &s->rem_cap, (size_t)n);
    if (local == 0) local = ids_ensure(&s->nodes, &s->nodes_cap, (size_t)n);
    if (local == 0 && j->emb_typed) {
        local = typed_step_rows(j, s, nodes, n);
        nodes = s->nodes;
        n = s->n_sel;
    } else if (local == 0 && n > 0) {
        memcpy(s->nodes, nodes, (size_t)n * sizeof *nodes);
    }
    if (local == 0) local = host_ensure(&s->rows, &s->rows_cap, (size_t)(n * D));
    if (local == 0) local = host_ensure(&s->pack, &s->pack_cap, (size_t)(n * D));
    int64_t no_in = 0, nr = 0;
    for (int64_t i = 0; local == 0 && i < n; i++)
        if (nodes[i] < no)
            s->list[no_in++] = nodes[i];
        else
            s->rem[nr++] = i;
    if (local == 0) local = typed_table_rows(j, s, no_in, s->list, &tr);
    if (local == 0) local = rows_to_host(j, s, no_in, tr, s->pack);
    for (int64_t i = 0, k = 0; local == 0 && i < n; i++)
        if (nodes[i] < no) memcpy(s->rows + i * D, s->pack + (k++) * D, (size_t)D * sizeof(float));
    if (local == 0) { /* partition ids of the remote rows, in input order */
        for (int64_t k = 0; k < nr; k++) s->list[k] = gnn_dist_pid(d, nodes[s->rem[k]]);
        s->n_in = n_all;
        s->n_rem = nr;
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn_dist_rows_plan(d, s->list, nr, &s->plan));
    /* What the others asked of this rank, from the table, packed. */
    local = host_ensure(&s->pack, &s->pack_cap, (size_t)(s->plan.n_serve * D));
    if (local == 0) local = typed_table_rows(j, s, s->plan.n_serve, s->plan.serve, &tr);
    if (local == 0) local = rows_to_host(j, s, s->plan.n_serve, tr, s->pack);
    if (local == 0) local = host_ensure(&s->grad, &s->grad_cap, (size_t)(nr * D));
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn_dist_rows_get_packed(d, &s->plan, s->pack, 1, D, s->grad));
    for (int64_t k = 0; k < nr; k++)
        memcpy(s->rows + s->rem[k] * D, s->grad + k * D, (size_t)D * sizeof(float));
fail:
    return rc;
}

/* Typed, a step's input of n rows: the features feat (backend, n x
 * feat_dim), zeros beyond them, and the fetched table rows s->rows of the
 * featureless rows s->sel over their first D columns. */
static int typed_batch_input(gnn_job_t *j, gnn_input_dist_t *s, int64_t n, const float *feat,
                             const float **x)
{
    int rc = 0;
    int64_t f = j->g.feat_dim, w = j->in_dim, D = gnn_embed_dim(j->emb), k = s->n_sel;
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->xin, &j->xin_bytes,
                            (size_t)n * (size_t)w * sizeof(float)));
    if (w > f) GNN_TRY(gnn_be_zero(j->be, j->xin, (size_t)n * (size_t)w * sizeof(float)));
    if (f > 0 && n > 0) GNN_TRY(gnn_be_copy_rows(j->be, n, f, feat, f, n, NULL, j->xin, w));
    if (k) {
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&s->sel_dev, &s->sel_dev_bytes,
                                (size_t)k * sizeof(int64_t)));
        GNN_TRY(gnn_be_upload(j->be, s->sel_dev, s->sel, (size_t)k * sizeof(int64_t)));
        GNN_TRY(gnn_be_trust_buffer(j->be, s->sel_dev, k, n, 1)); /* positions in order */
        GNN_TRY(stage(j, s, k, NULL, NULL));
        GNN_TRY(gnn_be_upload(j->be, s->dev, s->rows, (size_t)k * (size_t)D * sizeof(float)));
        GNN_TRY(gnn_be_scatter_rows(j->be, k, D, s->dev, D, s->sel_dev, j->xin, w, n));
    }
    j->emb_n = k;
    j->emb_rows = NULL;
    *x = j->xin;
fail:
    return rc;
}

int gnn__input_dist_build(gnn_job_t *j, int64_t n, const float *feat, const float **x)
{
    gnn_input_dist_t *s = j->emb_dist;
    if (!j->emb) {
        *x = feat;
        return 0;
    }
    if (!s || s->n_in != n)
        return GNN_FAIL(GNN_EINVAL, "input rows: %" PRId64 " fetched for %" PRId64 " inputs",
                        s ? s->n_in : 0, n);
    if (j->emb_typed) return typed_batch_input(j, s, n, feat, x);
    return input_from_host(j, s, n, feat, s->rows, x);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Typed: the gradient of the first D columns of the k featureless input
 * rows s->sel (positions in the step's input of s->n_in rows), into host
 * g (k x D). */
static int typed_grad_to_host(gnn_job_t *j, gnn_input_dist_t *s, int64_t k, float *g)
{
    int rc = 0;
    int64_t D = gnn_embed_dim(j->emb);
    if (k == 0) return 0;
    const float *dx = gnn_model_input_grad(j->model);
    GNN_CHECK(dx, GNN_EINVAL, "input rows: the backward formed no input gradient");
    GNN_TRY(stage(j, s, k, NULL, NULL));
    GNN_TRY(gnn_be_copy_rows(j->be, k, D, dx, j->in_dim, s->n_in, s->sel_dev, s->dev, D));
    GNN_TRY(gnn_be_download(j->be, g, s->dev, (size_t)k * (size_t)D * sizeof(float)));
fail:
    return rc;
}

int gnn__input_dist_step(gnn_job_t *j, int had_batch)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_input_dist_t *s = j->emb_dist;
    if (!j->emb) return 0;
    int64_t D = gnn_embed_dim(j->emb), no = d->n_owned, n = 0;
    /* Sums per table row: the owned rows, or (typed) those of the
     * featureless types alone. */
    int64_t nr = j->emb_typed ? gnn_embed_rows(j->emb) : no;
    if (had_batch && s) n = j->emb_typed ? s->n_sel : s->n_in;
    int local = s ? 0 : GNN_FAIL(GNN_EINVAL, "input rows: a step without a fetch");
    if (local == 0 && !s->acc) {
        s->acc = gnn_alloc_large(((size_t)nr * (size_t)D + 1) * sizeof(float));
        s->mark = gnn_calloc((size_t)nr + 1, 1);
        if (!s->acc || !s->mark) local = GNN_FAIL(GNN_ENOMEM, "input rows: gradients");
        else memset(s->acc, 0, (size_t)nr * (size_t)D * sizeof(float));
    }
    /* This rank's input rows' gradients: remote ones packed in plan order. */
    if (local == 0) local = host_ensure(&s->grad, &s->grad_cap, (size_t)(n * D));
    if (local == 0) local = host_ensure(&s->pack, &s->pack_cap, (size_t)(s->n_rem * D));
    if (local == 0 && j->emb_typed)
        local = typed_grad_to_host(j, s, n, s->grad);
    else if (local == 0)
        local = grad_to_host(j, s, n, s->grad);
    for (int64_t k = 0; local == 0 && k < s->n_rem; k++)
        if (n)
            memcpy(s->pack + k * D, s->grad + s->rem[k] * D, (size_t)D * sizeof(float));
        else
            memset(s->pack + k * D, 0, (size_t)D * sizeof(float));
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    const float *got = NULL;
    GNN_TRY(gnn_dist_rows_put_packed(d, &s->plan, s->pack, D, &got));
    /* Summed per table row in a fixed order: this rank's input, then the
     * askers' in rank and request order; the rows any rank read step. */
    local = ids_ensure(&s->list, &s->list_cap, (size_t)(n + s->plan.n_serve));
    int64_t nt = 0;
    for (int64_t i = 0; local == 0 && i < n + s->plan.n_serve; i++) {
        int64_t r = i < n ? s->nodes[i] : s->plan.serve[i - n];
        if (r >= no) continue; /* a remote row of this rank's input: its owner's */
        int64_t t = j->emb_typed ? j->emb_tab[r] : r;
        if (t < 0) {
            local = GNN_FAIL(GNN_EINVAL, "input rows: owned row %" PRId64 " has no table row", r);
            break;
        }
        const float *g = i < n ? s->grad + i * D : got + (i - n) * D;
        if (!s->mark[t]) {
            s->mark[t] = 1;
            s->list[nt++] = t;
        }
        float *a = s->acc + t * D;
        for (int64_t k = 0; k < D; k++) a[k] += g[k];
    }
    if (local == 0)
        local = host_ensure(&s->pack, &s->pack_cap, (size_t)(nt * D));
    if (local == 0) {
        qsort(s->list, (size_t)nt, sizeof *s->list, cmp_i64);
        for (int64_t t = 0; t < nt; t++) {
            int64_t r = s->list[t];
            memcpy(s->pack + t * D, s->acc + r * D, (size_t)D * sizeof(float));
            memset(s->acc + r * D, 0, (size_t)D * sizeof(float));
            s->mark[r] = 0;
        }
        local = step_from_host(j, s, nt, s->list, s->pack);
    }
    s->n_in = s->n_rem = s->n_sel = 0;
    j->emb_n = 0;
    rc = gnn_dist_agree(MPI_COMM_WORLD, local);
fail:
    return rc;
}
