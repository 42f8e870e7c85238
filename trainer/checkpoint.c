/*
 * Checkpoint and prediction files (trainer/checkpoint.h); both layouts are
 * described in docs/FORMAT.md.
 *
 * Every scalar member of gnn_checkpoint_t is a root attribute of the same
 * name. One table per attribute type lists them, and the writer, the reader
 * and the value checks all walk those tables, so they cannot disagree about
 * a name. uint64 members are stored as uint64 attributes. An entry names
 * the format version that added it and its value in older files (the data
 * trained on, version 3: -1; the attention settings, version 4: 0; the
 * graph's fingerprint, version 7: -1 edges, hashes 0; the initialisation,
 * version 8: "glorot"): every member is
 * written, and read only from files that have it. The six
 * arrays are contiguous 1-D datasets written and read whole.
 *
 * Both files are written under "<path>.tmp-<pid>", flushed, closed, synced
 * to disk and only then renamed over path; on any failure the temporary
 * file is removed and path is left as it was. The reader trusts nothing:
 * each attribute must exist with its type and one value, each dataset with
 * its shape, and the values must pass check_fields, the same check the
 * writer applies to its input, so save refuses what load would refuse.
 */
#include "trainer/checkpoint.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/tmpclean.h"
#include "graph/h5util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREDICTIONS_FORMAT "gnn-predictions"
#define PREDICTIONS_VERSION 1

#define CHUNK_1D ((hsize_t)1 << 18)       /* entries per chunk of a 1-D dataset */
#define CHUNK_2D_BYTES ((hsize_t)4 << 20) /* bytes per chunk of a float32 matrix */
#define ID_BLOCK ((int64_t)1 << 20)       /* generated node ids written at a time */
#define STR_ATTR_MAX 256                  /* longest string attribute read */

/* ---- The layout: one entry per member -------------------------------------- */

#define OLDEST_VERSION 2 /* the oldest version read */

typedef struct {
    const char *name; /* attribute name = member name */
    size_t off, size;
    int since;        /* the format version that added it */
    int64_t absent;   /* its value read from an older file */
    const char *absent_s; /* ... for a string */
} field_t;

#define SIZE_OF(m) sizeof(((gnn_checkpoint_t *)0)->m)
#define MEMBER(m) {#m, offsetof(gnn_checkpoint_t, m), SIZE_OF(m), OLDEST_VERSION, 0, NULL}
#define MEMBER_SINCE(m, v, absent)                                                                \
    {#m, offsetof(gnn_checkpoint_t, m), SIZE_OF(m), v, absent, NULL}
#define MEMBER_STR_SINCE(m, v, absent)                                                            \
    {#m, offsetof(gnn_checkpoint_t, m), SIZE_OF(m), v, 0, absent}
#define COUNT_OF(a) (sizeof(a) / sizeof(a)[0])

static const field_t str_fields[] = {
    MEMBER(model), MEMBER(aggr), MEMBER(decay_scope), MEMBER(mode), MEMBER(fanouts),
    /* the task and link prediction's settings */
    MEMBER_STR_SINCE(task, 5, "node"), MEMBER_STR_SINCE(decoder, 5, "-"),
    MEMBER_STR_SINCE(hits, 5, "-"),
    /* learnable input rows */
    MEMBER_STR_SINCE(embed_opt, 6, "-"),
    /* the weights' initialisation */
    MEMBER_STR_SINCE(init, 8, "glorot"),
};
static const field_t i64_fields[] = {
    MEMBER(layers), MEMBER(in_dim),     MEMBER(hidden),     MEMBER(classes),
    MEMBER(normalize_features),         MEMBER(runs),       MEMBER(run),
    MEMBER(epoch),  MEMBER(step),       MEMBER(best_epoch), MEMBER(bad_evals),
    MEMBER(runs_done),                  MEMBER(n_params),   MEMBER(batch_size),
    /* the data trained on (-1: unknown) */
    MEMBER_SINCE(num_nodes, 3, -1), MEMBER_SINCE(parts, 3, -1), MEMBER_SINCE(train_nodes, 3, -1),
    /* attention settings (0: none) */
    MEMBER_SINCE(heads, 4, 0), MEMBER_SINCE(out_heads, 4, 0),
    /* the task's metrics (0: older files, which hold the summary ones only) */
    MEMBER_SINCE(n_metrics, 5, 0), MEMBER_SINCE(negatives, 5, 0),
    /* learnable input rows (0: none) */
    MEMBER_SINCE(embed_dim, 6, 0), MEMBER_SINCE(embed_all, 6, 0), MEMBER_SINCE(embed_rows, 6, 0),
    MEMBER_SINCE(embed_step, 6, 0), MEMBER_SINCE(embed_best_kept, 6, 0),
    /* the graph's fingerprint (-1: unknown) */
    MEMBER_SINCE(num_edges, 7, -1),
};
static const field_t f64_fields[] = {
    MEMBER(dropout),        MEMBER(lr),              MEMBER(weight_decay),
    MEMBER(best_valid_acc), MEMBER(best_valid_loss), MEMBER(best_test_acc),
    MEMBER(best_train_acc), MEMBER(min_valid_loss),
    MEMBER_SINCE(attn_dropout, 4, 0), MEMBER_SINCE(negative_slope, 4, 0),
    MEMBER_SINCE(embed_lr, 6, 0),
};
static const field_t u64_fields[] = {
    MEMBER(seed), MEMBER(rng_offset),
    /* the graph's fingerprint and the training nodes' layout (0: unknown) */
    MEMBER_SINCE(edge_hash, 7, 0), MEMBER_SINCE(train_hash, 7, 0),
    MEMBER_SINCE(train_layout, 7, 0),
};

/* The arrays, in this order: float32 x n_params, float64 x runs_done, then
 * float64 x n_metrics and x runs_done * n_metrics (version 5). */
enum {
    T_PARAMS,
    T_ADAM_M,
    T_ADAM_V,
    T_BEST,
    T_RUN_TEST,
    T_RUN_VALID,
    T_BEST_METRICS,
    T_RUN_METRICS,
    T_EMBED_W,
    T_EMBED_S1,
    T_EMBED_S2,
    T_EMBED_BEST,
    N_TENSORS
};
static const char *const tensor_names[N_TENSORS] = {
    "params",       "adam_m",        "adam_v",       "best_params",
    "run_test_acc", "run_valid_acc", "best_metrics", "run_metrics",
    "embed",        "embed_state1",  "embed_state2", "embed_best",
};
static const int tensor_since[N_TENSORS] = {2, 2, 2, 2, 2, 2, 5, 5, 6, 6, 6, 6};

/* A member added to gnn_checkpoint_t without an entry above fails here. */
_Static_assert(sizeof(gnn_checkpoint_t) ==
                   SIZE_OF(model) + SIZE_OF(aggr) + SIZE_OF(decay_scope) + SIZE_OF(mode) +
                       SIZE_OF(fanouts) + SIZE_OF(task) + SIZE_OF(decoder) + SIZE_OF(hits) +
                       SIZE_OF(embed_opt) + SIZE_OF(init) +
                       8 * (COUNT_OF(i64_fields) + COUNT_OF(f64_fields) + COUNT_OF(u64_fields)) +
                       N_TENSORS * sizeof(void *),
               "every member of gnn_checkpoint_t needs a table entry");

static int tensor_is_f64(int t) { return t >= T_RUN_TEST && t <= T_RUN_METRICS; }

static int64_t tensor_len(const gnn_checkpoint_t *c, int t)
{
    int64_t table = c->embed_dim > 0 ? c->embed_rows * c->embed_dim : 0;
    if (t == T_EMBED_W || t == T_EMBED_S1) return table;
    if (t == T_EMBED_S2) return strcmp(c->embed_opt, "adam") ? 0 : table;
    if (t == T_EMBED_BEST) return c->embed_best_kept ? table : 0;
    if (t == T_BEST_METRICS) return c->n_metrics;
    if (t == T_RUN_METRICS) return c->runs_done * c->n_metrics;
    return tensor_is_f64(t) ? c->runs_done : c->n_params;
}

static const void *tensor_get(const gnn_checkpoint_t *c, int t)
{
    switch (t) {
    case T_PARAMS: return c->params;
    case T_ADAM_M: return c->adam_m;
    case T_ADAM_V: return c->adam_v;
    case T_BEST: return c->best_params;
    case T_RUN_TEST: return c->run_test_acc;
    case T_BEST_METRICS: return c->best_metrics;
    case T_RUN_METRICS: return c->run_metrics;
    case T_EMBED_W: return c->embed_w;
    case T_EMBED_S1: return c->embed_s1;
    case T_EMBED_S2: return c->embed_s2;
    case T_EMBED_BEST: return c->embed_best;
    default: return c->run_valid_acc;
    }
}

static void tensor_set(gnn_checkpoint_t *c, int t, void *p)
{
    switch (t) {
    case T_PARAMS: c->params = p; break;
    case T_ADAM_M: c->adam_m = p; break;
    case T_ADAM_V: c->adam_v = p; break;
    case T_BEST: c->best_params = p; break;
    case T_RUN_TEST: c->run_test_acc = p; break;
    case T_BEST_METRICS: c->best_metrics = p; break;
    case T_RUN_METRICS: c->run_metrics = p; break;
    case T_EMBED_W: c->embed_w = p; break;
    case T_EMBED_S1: c->embed_s1 = p; break;
    case T_EMBED_S2: c->embed_s2 = p; break;
    case T_EMBED_BEST: c->embed_best = p; break;
    default: c->run_valid_acc = p; break;
    }
}

/* ---- Value checks shared by writer and reader ------------------------------ */

/* Name path in a failure just recorded by a helper that does not. */
static int at(const char *path, int rc)
{
    if (rc < 0) gnn_error_prefix("%s", path);
    return rc;
}

static int check_i64(const char *path, int code, const char *name, int64_t v, int64_t lo,
                     int64_t hi)
{
    if (v >= lo && v <= hi) return 0;
    if (hi == INT64_MAX)
        return GNN_FAIL(code, "%s: %s = %lld, expected at least %lld", path, name, (long long)v,
                        (long long)lo);
    return GNN_FAIL(code, "%s: %s = %lld is outside [%lld, %lld]", path, name, (long long)v,
                    (long long)lo, (long long)hi);
}

/*
 * The checks every checkpoint passes; code is GNN_EINVAL for the writer's
 * input and GNN_EFORMAT for a file, version the file's (the writer's:
 * GNN_CHECKPOINT_VERSION). Names are not checked against the known models
 * and aggregators: a resume compares them with its options.
 */
static int check_fields(const gnn_checkpoint_t *c, const char *path, int code, int64_t version)
{
    int rc = 0;
    for (size_t i = 0; i < COUNT_OF(str_fields); i++) {
        const field_t *f = &str_fields[i];
        const char *s = (const char *)c + f->off;
        GNN_CHECK(memchr(s, '\0', f->size), code,
                  "%s: %s is not NUL-terminated within its %zu bytes", path, f->name, f->size);
        GNN_CHECK(s[0], code, "%s: %s is empty", path, f->name);
    }
    GNN_TRY(check_i64(path, code, "layers", c->layers, 1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "in_dim", c->in_dim, 1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "hidden", c->hidden, 1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "classes", c->classes, 1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "normalize_features", c->normalize_features, 0, 1));
    GNN_TRY(check_i64(path, code, "batch_size", c->batch_size, 0, INT64_MAX));
    GNN_CHECK(c->dropout >= 0 && c->dropout < 1, code, "%s: dropout = %g is outside [0, 1)", path,
              c->dropout);
    GNN_CHECK(isfinite(c->lr) && c->lr > 0, code, "%s: lr = %g must be positive", path, c->lr);
    GNN_CHECK(isfinite(c->weight_decay) && c->weight_decay >= 0, code,
              "%s: weight_decay = %g must not be negative", path, c->weight_decay);
    GNN_TRY(check_i64(path, code, "runs", c->runs, 1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "run", c->run, 0, c->runs - 1));
    GNN_TRY(check_i64(path, code, "runs_done", c->runs_done, 0, c->runs));
    GNN_TRY(check_i64(path, code, "epoch", c->epoch, 0, INT64_MAX));
    GNN_TRY(check_i64(path, code, "step", c->step, 0, INT64_MAX));
    GNN_TRY(check_i64(path, code, "best_epoch", c->best_epoch, -1, INT64_MAX));
    GNN_TRY(check_i64(path, code, "bad_evals", c->bad_evals, 0, INT64_MAX));
    GNN_TRY(check_i64(path, code, "n_params", c->n_params, 0, INT64_MAX));
    GNN_TRY(check_i64(path, code, "n_metrics", c->n_metrics, 0, 64));
    GNN_TRY(check_i64(path, code, "negatives", c->negatives, 0, 1000));
    GNN_CHECK(!strcmp(c->init, "glorot") || !strcmp(c->init, "fan-in"), code,
              "%s: init = \"%s\" (expected glorot or fan-in)", path, c->init);
    if (version >= 6) {
        GNN_TRY(check_i64(path, code, "embed_dim", c->embed_dim, 0, (int64_t)1 << 20));
        GNN_TRY(check_i64(path, code, "embed_all", c->embed_all, 0, 1));
        GNN_TRY(check_i64(path, code, "embed_rows", c->embed_rows, 0,
                          c->embed_dim ? INT64_MAX / c->embed_dim : INT64_MAX));
        GNN_TRY(check_i64(path, code, "embed_step", c->embed_step, 0, INT64_MAX));
        GNN_TRY(check_i64(path, code, "embed_best_kept", c->embed_best_kept, 0, 1));
        GNN_CHECK(c->embed_dim == 0 || !strcmp(c->embed_opt, "adam") ||
                      !strcmp(c->embed_opt, "adagrad"),
                  code, "%s: embed_opt = \"%s\" (expected adam or adagrad)", path, c->embed_opt);
        GNN_CHECK(c->embed_dim == 0 || (isfinite(c->embed_lr) && c->embed_lr > 0), code,
                  "%s: embed_lr = %g must be positive", path, c->embed_lr);
    }
    if (version >= 7) GNN_TRY(check_i64(path, code, "num_edges", c->num_edges, 0, INT64_MAX));
    if (version >= 4) {
        GNN_TRY(check_i64(path, code, "heads", c->heads, 0, 64));
        GNN_TRY(check_i64(path, code, "out_heads", c->out_heads, 0, 64));
        GNN_CHECK(c->attn_dropout >= 0 && c->attn_dropout < 1, code,
                  "%s: attn_dropout = %g is outside [0, 1)", path, c->attn_dropout);
        GNN_CHECK(c->negative_slope >= 0 && c->negative_slope < 1, code,
                  "%s: negative_slope = %g is outside [0, 1)", path, c->negative_slope);
    }
    if (version >= 3) {
        GNN_TRY(check_i64(path, code, "num_nodes", c->num_nodes, 1, INT64_MAX));
        GNN_TRY(check_i64(path, code, "parts", c->parts, 0, INT64_MAX));
        /* Training targets: nodes (at most all of them) or, for link
         * prediction, edges. */
        GNN_TRY(check_i64(path, code, "train_nodes", c->train_nodes, 1,
                          strcmp(c->task, "link") ? c->num_nodes : INT64_MAX));
    }
fail:
    return rc;
}

/* ---- Writing under a temporary name ----------------------------------------- */

/* The temporary file being written, for removal on a signal (0: none). */
static int tmp_clean;

/* Create "<path>.tmp-<pid>" (*tmp, freed by the caller) as a new HDF5 file. */
static int tmp_create(const char *path, char **tmp, hid_t *file)
{
    size_t len = strlen(path) + 32;
    *file = -1;
    *tmp = gnn_malloc(len);
    if (!*tmp) return GNN_FAIL(GNN_ENOMEM, "%s: out of memory", path);
    snprintf(*tmp, len, "%s.tmp-%ld", path, (long)getpid());
    *file = H5Fcreate(*tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (*file < 0)
        return GNN_H5_FAIL(GNN_EIO, "%s: cannot create the temporary file %s", path, *tmp);
    tmp_clean = gnn_tmp_register(*tmp, 0);
    return 0;
}

/* Flush and close *file, sync it and rename tmp to path. */
static int tmp_commit(const char *path, const char *tmp, hid_t *file)
{
    if (H5Fflush(*file, H5F_SCOPE_GLOBAL) < 0)
        return GNN_H5_FAIL(GNN_EIO, "%s: cannot flush %s", path, tmp);
    herr_t closed = H5Fclose(*file);
    *file = -1;
    if (closed < 0) return GNN_H5_FAIL(GNN_EIO, "%s: cannot close %s", path, tmp);
    /* The data must be on disk before the name is: a crash after the
     * rename must not leave an empty file under path. */
    int fd = open(tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return GNN_FAIL(GNN_EIO, "%s: cannot sync %s: %s", path, tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0)
        return GNN_FAIL(GNN_EIO, "%s: cannot rename %s into place: %s", path, tmp,
                        strerror(errno));
    gnn_tmp_unregister(tmp_clean);
    tmp_clean = 0;
    /* Persist the rename too. Best effort: path is already replaced, so a
     * failure here is no reason to report the save as failed. */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    return 0;
}

/* After a failure: close what is open and remove the temporary file. */
static void tmp_abort(char *tmp, hid_t *file)
{
    gnn__h5_close(file);
    H5Eclear2(H5E_DEFAULT);
    if (tmp) unlink(tmp);
    gnn_tmp_unregister(tmp_clean);
    tmp_clean = 0;
}

/* Write path atomically: write(file, ctx) fills a temporary file beside it,
 * which then takes path's name; on failure neither name holds a new file
 * and path is unchanged. Errors name path. */
static int write_atomic(const char *path, int (*write)(hid_t file, const void *ctx),
                        const void *ctx)
{
    int rc = 0;
    char *tmp = NULL;
    hid_t file = -1;
    GNN_TRY(tmp_create(path, &tmp, &file));
    GNN_TRY(at(path, write(file, ctx)));
    GNN_TRY(tmp_commit(path, tmp, &file));
    gnn_free(tmp);
    return 0;
fail:
    tmp_abort(tmp, &file);
    gnn_free(tmp);
    return rc;
}

/* Write buf (n values of memory type mtype) as a new contiguous 1-D
 * dataset of file type ftype; an empty one when n is 0. */
static int write_vector(hid_t file, const char *name, hid_t ftype, hid_t mtype, int64_t n,
                        const void *buf)
{
    int rc = 0;
    hid_t space = -1, dcpl = -1, d = -1;
    hsize_t dims[1] = {(hsize_t)n};
    space = H5Screate_simple(1, dims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    /* No modification times: the same checkpoint gives the same bytes. */
    if (space < 0 || dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot set up dataset '%s'", name);
        goto fail;
    }
    d = H5Dcreate2(file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot create dataset '%s'", name);
        goto fail;
    }
    if (n > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        rc = GNN_H5_FAIL(GNN_EIO, "cannot write dataset '%s'", name);
        goto fail;
    }
    herr_t closed = H5Dclose(d);
    d = -1;
    if (closed < 0) rc = GNN_H5_FAIL(GNN_EIO, "cannot close dataset '%s'", name);
fail:
    gnn__h5_close(&d);
    gnn__h5_close(&dcpl);
    gnn__h5_close(&space);
    return rc;
}

/* ---- Checkpoint ------------------------------------------------------------- */

static int write_checkpoint(hid_t file, const void *ctx)
{
    const gnn_checkpoint_t *c = ctx;
    int rc = 0;
    GNN_TRY(gnn__h5_set_attr_str(file, "format", GNN_CHECKPOINT_FORMAT));
    GNN_TRY(gnn__h5_set_attr_i64(file, "version", GNN_CHECKPOINT_VERSION));
    for (size_t i = 0; i < COUNT_OF(str_fields); i++)
        GNN_TRY(gnn__h5_set_attr_str(file, str_fields[i].name,
                                     (const char *)c + str_fields[i].off));
    for (size_t i = 0; i < COUNT_OF(i64_fields); i++) {
        int64_t v;
        memcpy(&v, (const char *)c + i64_fields[i].off, sizeof v);
        GNN_TRY(gnn__h5_set_attr_i64(file, i64_fields[i].name, v));
    }
    for (size_t i = 0; i < COUNT_OF(f64_fields); i++) {
        double v;
        memcpy(&v, (const char *)c + f64_fields[i].off, sizeof v);
        GNN_TRY(gnn__h5_set_attr_f64(file, f64_fields[i].name, v));
    }
    for (size_t i = 0; i < COUNT_OF(u64_fields); i++) {
        uint64_t v;
        memcpy(&v, (const char *)c + u64_fields[i].off, sizeof v);
        GNN_TRY(gnn__h5_set_attr_u64(file, u64_fields[i].name, v));
    }
    for (int t = 0; t < N_TENSORS; t++) {
        int f64 = tensor_is_f64(t);
        GNN_TRY(write_vector(file, tensor_names[t], f64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                             f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT, tensor_len(c, t),
                             tensor_get(c, t)));
    }
fail:
    return rc;
}

int gnn_checkpoint_save(const char *path, const gnn_checkpoint_t *c)
{
    int rc = 0;
    gnn__h5_init();
    GNN_TRY(check_fields(c, path, GNN_EINVAL, GNN_CHECKPOINT_VERSION));
    for (int t = 0; t < N_TENSORS; t++)
        GNN_CHECK(tensor_len(c, t) == 0 || tensor_get(c, t), GNN_EINVAL,
                  "%s: %s is NULL but holds %lld values", path, tensor_names[t],
                  (long long)tensor_len(c, t));
    return write_atomic(path, write_checkpoint, c);
fail:
    return rc;
}

/* Attribute format must be want; else "not a WHAT file". */
static int check_format(hid_t file, const char *path, const char *want, const char *what)
{
    char format[STR_ATTR_MAX];
    int rc = gnn__h5_check_attr_single(file, "format");
    if (rc == 0) rc = gnn__h5_get_attr_str(file, "format", format, sizeof format);
    if (rc < 0)
        return GNN_FAIL(GNN_EFORMAT, "%s: not a %s file (no 'format' attribute)", path, what);
    if (strcmp(format, want) != 0)
        return GNN_FAIL(GNN_EFORMAT, "%s: not a %s file (format is '%s', expected '%s')", path,
                        what, format, want);
    return 0;
}

static int read_scalars(hid_t file, const char *path, int64_t version, gnn_checkpoint_t *c)
{
    int rc = 0;
    for (size_t i = 0; i < COUNT_OF(str_fields); i++) {
        const field_t *f = &str_fields[i];
        char buf[STR_ATTR_MAX];
        if (version < f->since) {
            snprintf((char *)c + f->off, f->size, "%s", f->absent_s);
            continue;
        }
        GNN_TRY(at(path, gnn__h5_check_attr_single(file, f->name)));
        GNN_TRY(at(path, gnn__h5_get_attr_str(file, f->name, buf, sizeof buf)));
        size_t len = strlen(buf);
        GNN_CHECK(len < f->size, GNN_EFORMAT,
                  "%s: attribute '%s' is longer than %zu characters", path, f->name, f->size - 1);
        memcpy((char *)c + f->off, buf, len + 1);
    }
    for (size_t i = 0; i < COUNT_OF(i64_fields); i++) {
        const field_t *f = &i64_fields[i];
        int64_t v = f->absent;
        if (version >= f->since) {
            GNN_TRY(at(path, gnn__h5_check_attr_single(file, f->name)));
            GNN_TRY(at(path, gnn__h5_get_attr_i64(file, f->name, 0, &v)));
        }
        memcpy((char *)c + f->off, &v, sizeof v);
    }
    for (size_t i = 0; i < COUNT_OF(f64_fields); i++) {
        const field_t *f = &f64_fields[i];
        double v = (double)f->absent;
        if (version >= f->since) GNN_TRY(at(path, gnn__h5_get_attr_f64(file, f->name, 0, &v)));
        memcpy((char *)c + f->off, &v, sizeof v);
    }
    for (size_t i = 0; i < COUNT_OF(u64_fields); i++) {
        const field_t *f = &u64_fields[i];
        uint64_t v = (uint64_t)f->absent;
        if (version >= f->since) GNN_TRY(at(path, gnn__h5_get_attr_u64(file, f->name, 0, &v)));
        memcpy((char *)c + f->off, &v, sizeof v);
    }
fail:
    return rc;
}

/* Read array t, whose length the attributes already gave, into c. */
static int read_tensor(hid_t file, const char *path, int t, gnn_checkpoint_t *c)
{
    int rc = 0;
    hid_t d = -1;
    hsize_t dims[1];
    void *buf = NULL;
    int f64 = tensor_is_f64(t);
    int64_t n = tensor_len(c, t);
    GNN_TRY(gnn__h5_open_dataset(file, path, tensor_names[t], GNN_H5_FLOAT, 1, 0, dims, &d));
    GNN_CHECK(dims[0] == (hsize_t)n, GNN_EFORMAT,
              "%s: dataset '%s' has %llu entries, expected %s = %lld", path, tensor_names[t],
              (unsigned long long)dims[0],
              t == T_BEST_METRICS ? "n_metrics"
              : t == T_RUN_METRICS ? "runs_done x n_metrics"
              : t >= T_EMBED_W    ? "embed_rows x embed_dim"
              : f64               ? "runs_done"
                                  : "n_params",
              (long long)n);
    if (n > 0) {
        buf = gnn_malloc_array((size_t)n, f64 ? sizeof(double) : sizeof(float));
        GNN_CHECK(buf, GNN_ENOMEM, "%s: out of memory reading dataset '%s'", path,
                  tensor_names[t]);
        if (H5Dread(d, f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                    buf) < 0) {
            rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: cannot read dataset '%s'", path, tensor_names[t]);
            goto fail;
        }
    }
    tensor_set(c, t, buf);
    buf = NULL;
fail:
    gnn_free(buf);
    gnn__h5_close(&d);
    return rc;
}

int gnn_checkpoint_load(const char *path, gnn_checkpoint_t *c)
{
    int rc = 0;
    hid_t file = -1;
    struct stat st;
    int64_t version = 0;
    memset(c, 0, sizeof *c);
    gnn__h5_init();
    if (stat(path, &st) != 0)
        return GNN_FAIL(errno == ENOENT ? GNN_ENOENT : GNN_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return GNN_FAIL(GNN_EFORMAT, "%s: not a regular file", path);
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return GNN_FAIL(GNN_EFORMAT, "%s: not an HDF5 file", path);
    }
    file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: cannot open HDF5 file", path);
        goto fail;
    }
    GNN_TRY(check_format(file, path, GNN_CHECKPOINT_FORMAT, "checkpoint"));
    GNN_TRY(at(path, gnn__h5_check_attr_single(file, "version")));
    GNN_TRY(at(path, gnn__h5_get_attr_i64(file, "version", 0, &version)));
    GNN_CHECK(version >= OLDEST_VERSION && version <= GNN_CHECKPOINT_VERSION, GNN_EVERSION,
              "%s: checkpoint format version %lld is not supported (this build reads versions "
              "%d to %d)",
              path, (long long)version, OLDEST_VERSION, GNN_CHECKPOINT_VERSION);
    GNN_TRY(read_scalars(file, path, version, c));
    GNN_TRY(check_fields(c, path, GNN_EFORMAT, version));
    for (int t = 0; t < N_TENSORS; t++)
        if (version >= tensor_since[t]) GNN_TRY(read_tensor(file, path, t, c));
    herr_t closed = H5Fclose(file);
    file = -1;
    if (closed < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot close", path);
        goto fail;
    }
    return 0;
fail:
    gnn__h5_close(&file);
    H5Eclear2(H5E_DEFAULT);
    gnn_checkpoint_free(c);
    return rc;
}

void gnn_checkpoint_free(gnn_checkpoint_t *c)
{
    if (!c) return;
    gnn_free(c->embed_w);
    gnn_free(c->embed_s1);
    gnn_free(c->embed_s2);
    gnn_free(c->embed_best);
    gnn_free(c->params);
    gnn_free(c->adam_m);
    gnn_free(c->adam_v);
    gnn_free(c->best_params);
    gnn_free(c->run_test_acc);
    gnn_free(c->run_valid_acc);
    gnn_free(c->best_metrics);
    gnn_free(c->run_metrics);
    memset(c, 0, sizeof *c);
}

/* ---- Predictions ------------------------------------------------------------ */

/* A chunked n-row dataset of ncols columns (rank 1 when ncols is 0):
 * chunks of CHUNK_1D entries or CHUNK_2D_BYTES of rows, never more rows
 * than the dataset has, so a small file stays small. */
static int create_rows(hid_t file, const char *name, hid_t ftype, int64_t n, int64_t ncols,
                       hid_t *d)
{
    int rank = ncols ? 2 : 1;
    hsize_t rows = ncols ? CHUNK_2D_BYTES / (4 * (hsize_t)ncols) : CHUNK_1D;
    if (rows < 1) rows = 1;
    if (rows > (hsize_t)n) rows = n > 0 ? (hsize_t)n : 1;
    hsize_t dims[2] = {(hsize_t)n, (hsize_t)ncols}, chunk[2] = {rows, (hsize_t)ncols};
    return gnn__h5_create_dataset(file, name, ftype, rank, dims, chunk, d);
}

/* Close dataset *d, checking that its chunks were written. */
static int close_dataset(hid_t *d, const char *name)
{
    herr_t closed = H5Dclose(*d);
    *d = -1;
    if (closed < 0) return GNN_H5_FAIL(GNN_EIO, "cannot close dataset '%s'", name);
    return 0;
}

typedef struct {
    int64_t n, classes, hidden_dim;
    const int64_t *node_id, *pred;
    const float *logits, *hidden;
} predictions_t;

static int write_predictions(hid_t file, const void *ctx)
{
    const predictions_t *p = ctx;
    int64_t n = p->n, classes = p->classes, hidden_dim = p->hidden_dim;
    const int64_t *node_id = p->node_id, *pred = p->pred;
    const float *logits = p->logits, *hidden = p->hidden;
    int rc = 0;
    hid_t d = -1;
    int64_t *ids = NULL;
    GNN_TRY(gnn__h5_set_attr_str(file, "format", PREDICTIONS_FORMAT));
    GNN_TRY(gnn__h5_set_attr_i64(file, "version", PREDICTIONS_VERSION));
    GNN_TRY(gnn__h5_set_attr_i64(file, "num_nodes", n));
    GNN_TRY(gnn__h5_set_attr_i64(file, "num_classes", classes));
    GNN_TRY(gnn__h5_set_attr_i64(file, "hidden_dim", hidden_dim));

    GNN_TRY(create_rows(file, "node_id", H5T_STD_I64LE, n, 0, &d));
    if (node_id) {
        GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, 0, n, node_id));
    } else {
        int64_t block = n < ID_BLOCK ? n : ID_BLOCK;
        ids = gnn_malloc_array((size_t)block, sizeof *ids);
        GNN_CHECK(ids, GNN_ENOMEM, "out of memory");
        for (int64_t r0 = 0; r0 < n; r0 += block) {
            int64_t nr = n - r0 < block ? n - r0 : block;
            for (int64_t i = 0; i < nr; i++) ids[i] = r0 + i;
            GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, r0, nr, ids));
        }
    }
    GNN_TRY(close_dataset(&d, "node_id"));

    GNN_TRY(create_rows(file, "logits", H5T_IEEE_F32LE, n, classes, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_FLOAT, 2, (hsize_t)classes, 0, n, logits));
    GNN_TRY(close_dataset(&d, "logits"));

    GNN_TRY(create_rows(file, "pred", H5T_STD_I64LE, n, 0, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, 0, n, pred));
    GNN_TRY(close_dataset(&d, "pred"));

    GNN_TRY(create_rows(file, "hidden", H5T_IEEE_F32LE, n, hidden_dim, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_FLOAT, 2, (hsize_t)hidden_dim, 0, n, hidden));
    GNN_TRY(close_dataset(&d, "hidden"));
fail:
    gnn_free(ids);
    gnn__h5_close(&d);
    return rc;
}

int gnn_predictions_write(const char *path, int64_t n, const int64_t *node_id, int64_t classes,
                          const float *logits, const int64_t *pred, int64_t hidden_dim,
                          const float *hidden)
{
    int rc = 0;
    gnn__h5_init();
    GNN_TRY(check_i64(path, GNN_EINVAL, "node count", n, 0, INT64_MAX));
    GNN_TRY(check_i64(path, GNN_EINVAL, "classes", classes, 1, INT64_MAX));
    GNN_TRY(check_i64(path, GNN_EINVAL, "hidden_dim", hidden_dim, 1, INT64_MAX));
    GNN_CHECK(n == 0 || (logits && pred && hidden), GNN_EINVAL,
              "%s: logits, pred and hidden are required", path);
    for (int64_t i = 0; i < n; i++)
        GNN_CHECK(pred[i] >= 0 && pred[i] < classes, GNN_EINVAL,
                  "%s: pred[%lld] = %lld is outside [0, %lld)", path, (long long)i,
                  (long long)pred[i], (long long)classes);
    const predictions_t p = {n, classes, hidden_dim, node_id, pred, logits, hidden};
    return write_atomic(path, write_predictions, &p);
fail:
    return rc;
}

/* ---- Embeddings ---------------------------------------------------------------- */

#define EMBEDDINGS_FORMAT "gnn-embeddings"
#define EMBEDDINGS_VERSION 1

typedef struct {
    int64_t n, dim;
    const int64_t *node_id;
    const float *emb;
    int64_t in_dim;        /* learnable input rows (0: none) */
    const float *input;
} embeddings_t;

static int write_embeddings(hid_t file, const void *ctx)
{
    const embeddings_t *e = ctx;
    int64_t n = e->n, dim = e->dim;
    int rc = 0;
    hid_t d = -1;
    GNN_TRY(gnn__h5_set_attr_str(file, "format", EMBEDDINGS_FORMAT));
    GNN_TRY(gnn__h5_set_attr_i64(file, "version", EMBEDDINGS_VERSION));
    GNN_TRY(gnn__h5_set_attr_i64(file, "num_nodes", n));
    GNN_TRY(gnn__h5_set_attr_i64(file, "dim", dim));
    GNN_TRY(create_rows(file, "node_id", H5T_STD_I64LE, n, 0, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, 0, n, e->node_id));
    GNN_TRY(close_dataset(&d, "node_id"));
    GNN_TRY(create_rows(file, "embedding", H5T_IEEE_F32LE, n, dim, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_FLOAT, 2, (hsize_t)dim, 0, n, e->emb));
    GNN_TRY(close_dataset(&d, "embedding"));
    if (e->in_dim > 0) {
        GNN_TRY(gnn__h5_set_attr_i64(file, "input_dim", e->in_dim));
        GNN_TRY(create_rows(file, "input_embedding", H5T_IEEE_F32LE, n, e->in_dim, &d));
        GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_FLOAT, 2, (hsize_t)e->in_dim, 0, n, e->input));
        GNN_TRY(close_dataset(&d, "input_embedding"));
    }
fail:
    gnn__h5_close(&d);
    return rc;
}

int gnn_embeddings_write(const char *path, int64_t n, const int64_t *node_id, int64_t dim,
                         const float *emb, int64_t in_dim, const float *input)
{
    int rc = 0;
    gnn__h5_init();
    GNN_TRY(check_i64(path, GNN_EINVAL, "node count", n, 0, INT64_MAX));
    GNN_TRY(check_i64(path, GNN_EINVAL, "dim", dim, 1, INT64_MAX));
    GNN_TRY(check_i64(path, GNN_EINVAL, "input dim", in_dim, 0, INT64_MAX));
    GNN_CHECK(n == 0 || (node_id && emb && (!in_dim || input)), GNN_EINVAL,
              "%s: node ids and rows are required", path);
    const embeddings_t e = {n, dim, node_id, emb, in_dim, input};
    return write_atomic(path, write_embeddings, &e);
fail:
    return rc;
}
