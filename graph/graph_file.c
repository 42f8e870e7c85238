/*
 * Reader and writer of the graph file, format versions 1 and 2 (typed
 * nodes and relations; docs/FORMAT.md).
 *
 * Layout: root attributes (format, version, counts, directedness, CSR
 * flags, num_classes), datasets indptr, indices, optional weights, feat,
 * label, orig_id, group split/ with train, valid, test, group node_data/,
 * and group link/ with the four link-prediction sets (n x 2 pairs) and
 * their neg_per_pos attribute. 1-D datasets are chunked by 256 Ki
 * entries, pair lists by 128 Ki pairs, feat by about 4 MiB of rows, so a
 * range read touches only the chunks that hold it.
 *
 * The reader trusts nothing: open checks the layout and shapes against the
 * attributes, and every range read checks its values before returning them.
 * The writer creates datasets at their final size under "<path>.tmp-<pid>",
 * counts what is put, and renames only a complete file.
 */
#include "graph/graph_file.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/tmpclean.h"
#include "graph/base/progress.h"
#include "graph/h5util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const gnn_split_names[GNN_NUM_SPLITS] = {"train", "valid", "test"};
const char *const gnn_link_set_names[GNN_NUM_LINK_SETS] = {"valid_pos", "valid_neg", "test_pos",
                                                           "test_neg"};
/* Paths of the link sets in the file, in gnn_link_set_t order. */
static const char *const link_paths[GNN_NUM_LINK_SETS] = {"link/valid_pos", "link/valid_neg",
                                                         "link/test_pos", "link/test_neg"};

#define CHUNK_1D ((hsize_t)1 << 18)
#define FEAT_CHUNK_BYTES ((hsize_t)4 << 20)
#define LOAD_BLOCK ((int64_t)1 << 22) /* entries per read when loading */

/* Attribute names of the CSR flags, in GNN_CSR_* bit order. */
static const char *const flag_attrs[] = {"sorted", "deduplicated", "no_self_loops", "symmetric"};
#define N_FLAG_ATTRS 4

struct gnn_graph_file {
    char *path;
    hid_t file;
    hid_t d_indptr, d_indices, d_weights, d_feat, d_label, d_orig;
    hid_t d_split[GNN_NUM_SPLITS];
    hid_t d_link[GNN_NUM_LINK_SETS];
    hid_t d_etype, d_tfeat[GNN_MAX_NODE_TYPES]; /* version 2 */
    gnn_graph_info_t info;
};

/* ---- Types ------------------------------------------------------------------ */

#define TYPE_LIST_MAX (GNN_MAX_RELATIONS * 3 * GNN_TYPE_NAME_MAX)

int gnn_graph_types_of(const gnn_graph_types_t *t, int64_t v)
{
    int lo = 0, hi = t->n_ntypes - 1;
    while (lo < hi) { /* the last type whose start is <= v */
        int mid = (lo + hi + 1) / 2;
        if (t->off[mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int gnn_graph_types_find(const gnn_graph_types_t *t, const char *name)
{
    for (int i = 0; i < t->n_ntypes; i++)
        if (!strcmp(t->ntype[i], name)) return i;
    return -1;
}

int64_t gnn_graph_types_max_feat(const gnn_graph_types_t *t)
{
    int64_t m = 0;
    for (int i = 0; i < t->n_ntypes; i++)
        if (t->feat_dim[i] > m) m = t->feat_dim[i];
    return m;
}

int gnn_graph_type_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= GNN_TYPE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int types_check(const gnn_graph_types_t *t, int64_t num_nodes, const char *what, int code)
{
    int T = t->n_ntypes, R = t->n_rels;
    if (T < 1 || T > GNN_MAX_NODE_TYPES)
        return GNN_FAIL(code, "%s: %d node types, expected 1 to %d", what, T,
                        GNN_MAX_NODE_TYPES);
    if (R < 1 || R > GNN_MAX_RELATIONS)
        return GNN_FAIL(code, "%s: %d relations, expected 1 to %d", what, R,
                        GNN_MAX_RELATIONS);
    if (t->off[0] != 0 || t->off[T] != num_nodes)
        return GNN_FAIL(code,
                        "%s: node types cover [%lld, %lld), expected [0, num_nodes = %lld)", what,
                        (long long)t->off[0], (long long)t->off[T], (long long)num_nodes);
    for (int i = 0; i < T; i++) {
        if (t->off[i + 1] < t->off[i])
            return GNN_FAIL(code, "%s: node type %d ends (%lld) before it starts (%lld)",
                            what, i, (long long)t->off[i + 1], (long long)t->off[i]);
        if (!gnn_graph_type_name_ok(t->ntype[i], strnlen(t->ntype[i], GNN_TYPE_NAME_MAX)))
            return GNN_FAIL(code,
                            "%s: node type %d has the name '%.*s' (expected 1 to %d characters "
                            "of A-Z a-z 0-9 _ -)",
                            what, i, GNN_TYPE_NAME_MAX - 1, t->ntype[i], GNN_TYPE_NAME_MAX - 1);
        for (int k = 0; k < i; k++)
            if (!strcmp(t->ntype[k], t->ntype[i]))
                return GNN_FAIL(code, "%s: two node types are called '%s'", what,
                                t->ntype[i]);
        if (t->feat_dim[i] < 0 || t->feat_dim[i] >= ((int64_t)1 << 31))
            return GNN_FAIL(code, "%s: node type '%s' has a feature width of %lld", what,
                            t->ntype[i], (long long)t->feat_dim[i]);
    }
    for (int r = 0; r < R; r++) {
        if (!gnn_graph_type_name_ok(t->rel[r], strnlen(t->rel[r], GNN_TYPE_NAME_MAX)))
            return GNN_FAIL(code,
                            "%s: relation %d has the name '%.*s' (expected 1 to %d characters "
                            "of A-Z a-z 0-9 _ -)",
                            what, r, GNN_TYPE_NAME_MAX - 1, t->rel[r], GNN_TYPE_NAME_MAX - 1);
        if (t->rel_src[r] < 0 || t->rel_src[r] >= T || t->rel_dst[r] < 0 || t->rel_dst[r] >= T)
            return GNN_FAIL(code, "%s: relation '%s' joins node types %d and %d of %d",
                            what, t->rel[r], t->rel_src[r], t->rel_dst[r], T);
        for (int k = 0; k < r; k++)
            if (!strcmp(t->rel[k], t->rel[r]) && t->rel_src[k] == t->rel_src[r] &&
                t->rel_dst[k] == t->rel_dst[r])
                return GNN_FAIL(code, "%s: relation %s -%s-> %s is named twice", what,
                                t->ntype[t->rel_src[r]], t->rel[r], t->ntype[t->rel_dst[r]]);
    }
    if (t->target < -1 || t->target >= T)
        return GNN_FAIL(code, "%s: target type %d of %d", what, t->target, T);
    return 0;
}

int gnn_graph_types_check(const gnn_graph_types_t *t, int64_t num_nodes, const char *what)
{
    return types_check(t, num_nodes, what, GNN_EINVAL);
}

/* The relation of edge e (in row v, from source u) joins their types. */
static int check_edge_types(const char *path, const gnn_graph_types_t *t, gnn_vid_t v,
                            gnn_vid_t u, int32_t r, gnn_eid_t e)
{
    int tu = gnn_graph_types_of(t, u), tv = gnn_graph_types_of(t, v);
    if (t->rel_src[r] != tu || t->rel_dst[r] != tv)
        return GNN_FAIL(GNN_EFORMAT,
                        "%s: edge %lld (%lld -> %lld) is a %s -> %s edge, but its relation '%s' "
                        "joins %s -> %s",
                        path, (long long)e, (long long)u, (long long)v, t->ntype[tu], t->ntype[tv],
                        t->rel[r], t->ntype[t->rel_src[r]], t->ntype[t->rel_dst[r]]);
    return 0;
}

/* "a,b,c" into names (at most max); GNN_EFORMAT naming attr otherwise. */
static int split_list(const char *path, const char *attr, char *s, char **parts, int max, int *n)
{
    *n = 0;
    if (!*s) return 0;
    for (char *p = s;;) {
        if (*n == max)
            return GNN_FAIL(GNN_EFORMAT, "%s: attribute '%s' lists more than %d entries", path,
                            attr, max);
        parts[(*n)++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return 0;
}

/* A fixed-length string attribute's size counts its terminator: reading
 * the longest list written (TYPE_LIST_MAX - 1 characters) takes one more. */
#define TYPE_LIST_READ (TYPE_LIST_MAX + 1)

int gnn__h5_read_types(hid_t loc, const char *path, int64_t num_nodes, void *types)
{
    int rc = 0;
    char *buf = gnn_malloc(TYPE_LIST_READ), *parts[GNN_MAX_RELATIONS];
    hid_t d = -1;
    hsize_t dims[1];
    gnn_graph_types_t *t = types;
    memset(t, 0, sizeof *t);
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory");
    t->target = -1;
    rc = gnn__h5_get_attr_str(loc, "node_types", buf, TYPE_LIST_READ);
    if (rc < 0) {
        gnn_error_prefix("%s", path);
        goto fail;
    }
    GNN_TRY(split_list(path, "node_types", buf, parts, GNN_MAX_NODE_TYPES, &t->n_ntypes));
    GNN_CHECK(t->n_ntypes >= 1, GNN_EFORMAT, "%s: attribute 'node_types' is empty", path);
    for (int i = 0; i < t->n_ntypes; i++) {
        GNN_CHECK(strlen(parts[i]) < GNN_TYPE_NAME_MAX, GNN_EFORMAT,
                  "%s: node type name '%s' is longer than %d characters", path, parts[i],
                  GNN_TYPE_NAME_MAX - 1);
        snprintf(t->ntype[i], GNN_TYPE_NAME_MAX, "%s", parts[i]);
    }
    rc = gnn__h5_get_attr_str(loc, "relations", buf, TYPE_LIST_READ);
    if (rc < 0) {
        gnn_error_prefix("%s", path);
        goto fail;
    }
    GNN_TRY(split_list(path, "relations", buf, parts, GNN_MAX_RELATIONS, &t->n_rels));
    GNN_CHECK(t->n_rels >= 1, GNN_EFORMAT, "%s: attribute 'relations' is empty", path);
    for (int r = 0; r < t->n_rels; r++) {
        char *x = parts[r], *b = strchr(x, ':'), *c = b ? strchr(b + 1, ':') : NULL;
        GNN_CHECK(c && !strchr(c + 1, ':'), GNN_EFORMAT,
                  "%s: relation '%s' is not SRC:NAME:DST", path, x);
        *b = *c = '\0';
        t->rel_src[r] = gnn_graph_types_find(t, x);
        t->rel_dst[r] = gnn_graph_types_find(t, c + 1);
        GNN_CHECK(t->rel_src[r] >= 0 && t->rel_dst[r] >= 0, GNN_EFORMAT,
                  "%s: relation '%s' names an unknown node type ('%s' or '%s')", path, b + 1, x,
                  c + 1);
        GNN_CHECK(strlen(b + 1) < GNN_TYPE_NAME_MAX, GNN_EFORMAT,
                  "%s: relation name '%s' is longer than %d characters", path, b + 1,
                  GNN_TYPE_NAME_MAX - 1);
        snprintf(t->rel[r], GNN_TYPE_NAME_MAX, "%s", b + 1);
    }
    if (H5Aexists(loc, "target_type") > 0) {
        rc = gnn__h5_get_attr_str(loc, "target_type", buf, TYPE_LIST_READ);
        if (rc < 0) {
            gnn_error_prefix("%s", path);
            goto fail;
        }
        t->target = gnn_graph_types_find(t, buf);
        GNN_CHECK(t->target >= 0, GNN_EFORMAT, "%s: target_type '%s' is not a node type", path,
                  buf);
    }
    H5Eclear2(H5E_DEFAULT);
    GNN_TRY(gnn__h5_open_dataset(loc, path, "node_type_offsets", GNN_H5_INT, 1, 0, dims, &d));
    GNN_CHECK(dims[0] == (hsize_t)t->n_ntypes + 1, GNN_EFORMAT,
              "%s: dataset 'node_type_offsets' has %llu entries, expected %d node types + 1",
              path, (unsigned long long)dims[0], t->n_ntypes);
    GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_INT64, 1, 1, 0, t->n_ntypes + 1, t->off));
    GNN_TRY(types_check(t, num_nodes, path, GNN_EFORMAT));
fail:
    gnn__h5_close(&d);
    gnn_free(buf);
    return rc;
}

int gnn__h5_write_types(hid_t loc, const char *path, const void *types)
{
    int rc = 0;
    const gnn_graph_types_t *t = types;
    hid_t d = -1;
    char *buf = gnn_malloc(TYPE_LIST_MAX);
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory");
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_ntypes; i++)
        at += (size_t)snprintf(buf + at, TYPE_LIST_MAX - at, "%s%s", i ? "," : "", t->ntype[i]);
    GNN_TRY(gnn__h5_set_attr_str(loc, "node_types", buf));
    at = 0;
    for (int r = 0; r < t->n_rels; r++)
        at += (size_t)snprintf(buf + at, TYPE_LIST_MAX - at, "%s%s:%s:%s", r ? "," : "",
                               t->ntype[t->rel_src[r]], t->rel[r], t->ntype[t->rel_dst[r]]);
    GNN_TRY(gnn__h5_set_attr_str(loc, "relations", buf));
    if (t->target >= 0) GNN_TRY(gnn__h5_set_attr_str(loc, "target_type", t->ntype[t->target]));
    hsize_t dims[1] = {(hsize_t)t->n_ntypes + 1}, chunk[1] = {CHUNK_1D};
    GNN_TRY(gnn__h5_create_dataset(loc, "node_type_offsets", H5T_STD_I64LE, 1, dims, chunk, &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, 0, t->n_ntypes + 1, t->off));
    (void)path;
fail:
    gnn__h5_close(&d);
    gnn_free(buf);
    return rc;
}

/* The root attributes and node_type_offsets of a version 2 file. */
static int read_types(gnn_graph_file_t *f)
{
    gnn_graph_types_t *t = gnn_calloc(1, sizeof *t);
    if (!t) return GNN_FAIL(GNN_ENOMEM, "out of memory");
    f->info.types = t;
    return gnn__h5_read_types(f->file, f->path, f->info.num_nodes, t);
}

/* edge_type and node_feat/TYPE of a version 2 file. */
static int open_typed_data(gnn_graph_file_t *f)
{
    int rc = 0;
    const char *path = f->path;
    gnn_graph_types_t *t = f->info.types;
    hsize_t dims[2];
    char name[GNN_TYPE_NAME_MAX + 16];
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "edge_type", GNN_H5_INT, 1, 0, dims, &f->d_etype));
    GNN_CHECK(dims[0] == (hsize_t)f->info.num_edges, GNN_EFORMAT,
              "%s: dataset 'edge_type' has %llu entries, expected num_edges = %lld", path,
              (unsigned long long)dims[0], (long long)f->info.num_edges);
    GNN_CHECK(f->d_feat < 0, GNN_EFORMAT,
              "%s: a typed graph keeps its features per node type (node_feat/TYPE), not in "
              "'feat'",
              path);
    for (int i = 0; i < t->n_ntypes; i++) {
        snprintf(name, sizeof name, "node_feat/%s", t->ntype[i]);
        if (H5Lexists(f->file, "node_feat", H5P_DEFAULT) <= 0) break;
        GNN_TRY(gnn__h5_open_dataset(f->file, path, name, GNN_H5_FLOAT, 2, 1, dims,
                                     &f->d_tfeat[i]));
        if (f->d_tfeat[i] < 0) continue;
        int64_t n = t->off[i + 1] - t->off[i];
        GNN_CHECK(dims[0] == (hsize_t)n && dims[1] >= 1 && dims[1] < ((hsize_t)1 << 31),
                  GNN_EFORMAT, "%s: dataset '%s' has shape (%llu, %llu), expected %lld rows",
                  path, name, (unsigned long long)dims[0], (unsigned long long)dims[1],
                  (long long)n);
        t->feat_dim[i] = (int64_t)dims[1];
    }
    H5Eclear2(H5E_DEFAULT);
    f->info.feat_dim = gnn_graph_types_max_feat(t);
fail:
    return rc;
}

void gnn_graph_init(gnn_graph_t *g)
{
    memset(g, 0, sizeof *g);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) g->split_size[s] = -1;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) g->link_size[s] = -1;
}

void gnn_graph_free(gnn_graph_t *g)
{
    gnn_csr_free(&g->csr);
    gnn_free(g->feat);
    gnn_free(g->label);
    gnn_free(g->orig_id);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_free(g->split[s]);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) gnn_free(g->link[s]);
    gnn_free(g->types);
    gnn_free(g->etype);
    gnn_graph_init(g);
}

/* ---- Value checks shared by reader and writer ---------------------------- */

/* v[0..n) are indptr entries starting at index first: monotone, in [0, ne]. */
static int check_offsets(const char *path, const gnn_eid_t *v, int64_t n, int64_t first,
                         gnn_eid_t ne)
{
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] > ne)
            return GNN_FAIL(GNN_EFORMAT, "%s: indptr[%lld] = %lld is outside [0, %lld]", path,
                            (long long)(first + i), (long long)v[i], (long long)ne);
        if (i > 0 && v[i] < v[i - 1])
            return GNN_FAIL(GNN_EFORMAT, "%s: indptr is not monotone at row %lld (%lld > %lld)",
                            path, (long long)(first + i - 1), (long long)v[i - 1],
                            (long long)v[i]);
    }
    return 0;
}

/* v[0..n) are node ids at positions first..: each in [0, nn). */
static int check_ids(const char *path, const char *what, const int64_t *v, int64_t n,
                     int64_t first, gnn_vid_t nn)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= nn)
            return GNN_FAIL(GNN_EFORMAT, "%s: %s[%lld] = %lld is outside [0, %lld)", path, what,
                            (long long)(first + i), (long long)v[i], (long long)nn);
    return 0;
}

/*
 * The grouping of a negative set: negative i * k + j of neg (n_pos * k
 * pairs) has the src of positive i of pos and a dst other than that src.
 * what names the negative set in messages.
 */
static int check_link_negatives(const char *path, const char *what, const int64_t *pos,
                                int64_t n_pos, const int64_t *neg, int64_t k, int code)
{
    for (int64_t i = 0; i < n_pos; i++)
        for (int64_t j = i * k; j < (i + 1) * k; j++) {
            if (neg[2 * j] != pos[2 * i])
                return GNN_FAIL(code,
                                "%s: %s[%lld] has src %lld, not the src %lld of its positive %lld",
                                path, what, (long long)j, (long long)neg[2 * j],
                                (long long)pos[2 * i], (long long)i);
            if (neg[2 * j + 1] == neg[2 * j])
                return GNN_FAIL(code, "%s: %s[%lld] pairs node %lld with itself", path, what,
                                (long long)j, (long long)neg[2 * j]);
        }
    return 0;
}

/*
 * Check the flags a file claims for rows [row0, row0 + nrows) whose rebased
 * offsets are ip and sources idx. Deduplication is checked on sorted rows.
 */
static int check_row_flags(const char *path, unsigned flags, const gnn_eid_t *ip,
                           const gnn_vid_t *idx, gnn_vid_t row0, gnn_vid_t nrows)
{
    for (gnn_vid_t r = 0; r < nrows; r++) {
        gnn_vid_t v = row0 + r;
        for (gnn_eid_t e = ip[r]; e < ip[r + 1]; e++) {
            if ((flags & GNN_CSR_NO_SELF_LOOPS) && idx[e] == v)
                return GNN_FAIL(GNN_EFORMAT,
                                "%s: row %lld has a self loop although flagged free of them", path,
                                (long long)v);
            if (e == ip[r] || !(flags & GNN_CSR_SORTED)) continue;
            if (idx[e] < idx[e - 1])
                return GNN_FAIL(GNN_EFORMAT, "%s: row %lld is not sorted although flagged sorted",
                                path, (long long)v);
            if ((flags & GNN_CSR_DEDUPED) && idx[e] == idx[e - 1])
                return GNN_FAIL(GNN_EFORMAT,
                                "%s: row %lld repeats source %lld although flagged deduplicated",
                                path, (long long)v, (long long)idx[e]);
        }
    }
    return 0;
}

/* ---- Reading -------------------------------------------------------------- */

static int check_range(const char *path, const char *what, int64_t first, int64_t n, int64_t size)
{
    if (first < 0 || n < 0 || first > size || n > size - first)
        return GNN_FAIL(GNN_ERANGE, "%s: %s range [%lld, %lld) is outside [0, %lld)", path, what,
                        (long long)first, (long long)(first + n), (long long)size);
    return 0;
}

/* The names of the arrays under node_data/ into the info. */
static int list_node_data(gnn_graph_file_t *f)
{
    int rc = 0;
    gnn_graph_info_t *in = &f->info;
    H5G_info_t gi;
    hid_t g = H5Gopen2(f->file, "node_data", H5P_DEFAULT);
    if (g < 0 || H5Gget_info(g, &gi) < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: 'node_data' is not a readable group", f->path);
        goto fail;
    }
    if (gi.nlinks == 0) goto fail;
    in->node_data = gnn_calloc((size_t)gi.nlinks, sizeof *in->node_data);
    GNN_CHECK(in->node_data, GNN_ENOMEM, "out of memory");
    for (hsize_t i = 0; i < gi.nlinks; i++) {
        ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, NULL, 0,
                                         H5P_DEFAULT);
        char *nm = len >= 0 ? gnn_malloc((size_t)len + 1) : NULL;
        if (len < 0 || (nm && H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nm,
                                                 (size_t)len + 1, H5P_DEFAULT) < 0)) {
            gnn_free(nm);
            rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: cannot list group 'node_data'", f->path);
            goto fail;
        }
        GNN_CHECK(nm, GNN_ENOMEM, "out of memory");
        in->node_data[in->n_node_data++] = nm;
    }
fail:
    gnn__h5_close(&g);
    return rc;
}

/* Group link/: the four sets of shape (n, 2), or none of them, with an
 * attribute neg_per_pos K >= 1 and K negatives per positive. */
static int open_link(gnn_graph_file_t *f)
{
    int rc = 0;
    const char *path = f->path;
    gnn_graph_info_t *in = &f->info;
    hid_t g = -1;
    hsize_t dims[2];
    int present = 0, missing = -1;
    int64_t k = 0;

    g = H5Gopen2(f->file, "link", H5P_DEFAULT);
    if (g < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: 'link' is not a group", path);
        goto fail;
    }
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        GNN_TRY(gnn__h5_open_dataset(f->file, path, link_paths[s], GNN_H5_INT, 2, 1, dims,
                                     &f->d_link[s]));
        if (f->d_link[s] < 0) {
            if (missing < 0) missing = s;
            continue;
        }
        GNN_CHECK(dims[1] == 2, GNN_EFORMAT,
                  "%s: dataset '%s' has %llu columns, expected 2 (src, dst)", path, link_paths[s],
                  (unsigned long long)dims[1]);
        GNN_CHECK(dims[0] < (hsize_t)GNN_GRAPH_MAX_COUNT, GNN_EFORMAT,
                  "%s: dataset '%s' has 2^62 or more pairs", path, link_paths[s]);
        in->link_size[s] = (int64_t)dims[0];
        present++;
    }
    if (present == 0) goto fail; /* an empty group: no link sets */
    GNN_CHECK(missing < 0, GNN_EFORMAT,
              "%s: missing dataset '%s' (a file holds all four link sets or none)", path,
              link_paths[missing]);
    rc = gnn__h5_get_attr_i64(g, "neg_per_pos", 0, &k);
    if (rc < 0) {
        gnn_error_prefix("%s: group 'link'", path);
        goto fail;
    }
    GNN_CHECK(k >= 1 && k < GNN_GRAPH_MAX_COUNT, GNN_EFORMAT,
              "%s: link neg_per_pos = %lld, expected at least 1", path, (long long)k);
    for (int s = GNN_LINK_VALID_POS; s <= GNN_LINK_TEST_POS; s += 2) {
        int64_t np = in->link_size[s], nn = in->link_size[s + 1];
        GNN_CHECK(nn % k == 0 && nn / k == np, GNN_EFORMAT,
                  "%s: '%s' has %lld pairs, expected neg_per_pos x %lld = %lld x %lld", path,
                  link_paths[s + 1], (long long)nn, (long long)np, (long long)k, (long long)np);
    }
    in->link_neg_per_pos = k;
fail:
    if (rc < 0 || in->link_neg_per_pos == 0)
        for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
            gnn__h5_close(&f->d_link[s]);
            in->link_size[s] = -1;
        }
    gnn__h5_close(&g);
    return rc;
}

static int open_layout(gnn_graph_file_t *f)
{
    int rc = 0;
    const char *path = f->path;
    gnn_graph_info_t *in = &f->info;
    hid_t split = -1;
    hsize_t dims[2];
    char format[64];
    int64_t v;

    if (H5Aexists(f->file, "format") <= 0) {
        H5Eclear2(H5E_DEFAULT);
        rc = GNN_FAIL(GNN_EFORMAT, "%s: not a graph file (no 'format' attribute)", path);
        goto fail;
    }
    rc = gnn__h5_get_attr_str(f->file, "format", format, sizeof format);
    if (rc < 0) {
        gnn_error_prefix("%s: not a graph file", path);
        goto fail;
    }
    GNN_CHECK(strcmp(format, GNN_GRAPH_FORMAT) == 0, GNN_EFORMAT,
              "%s: not a graph file (format is '%s', expected '%s')", path, format,
              GNN_GRAPH_FORMAT);
    GNN_TRY(gnn__h5_get_attr_i64(f->file, "version", 0, &in->version));
    GNN_CHECK(in->version == GNN_GRAPH_VERSION || in->version == GNN_GRAPH_VERSION_TYPED,
              GNN_EVERSION,
              "%s: graph file format version %lld is not supported (this build reads versions "
              "%d and %d)",
              path, (long long)in->version, GNN_GRAPH_VERSION, GNN_GRAPH_VERSION_TYPED);
    GNN_TRY(gnn__h5_get_attr_i64(f->file, "num_nodes", 0, &in->num_nodes));
    GNN_TRY(gnn__h5_get_attr_i64(f->file, "num_edges", 0, &in->num_edges));
    GNN_CHECK(in->num_nodes >= 0 && in->num_edges >= 0, GNN_EFORMAT,
              "%s: negative node or edge count", path);
    GNN_CHECK(in->num_nodes < GNN_GRAPH_MAX_COUNT && in->num_edges < GNN_GRAPH_MAX_COUNT,
              GNN_EFORMAT, "%s: node or edge count of 2^62 or more (%lld, %lld)", path,
              (long long)in->num_nodes, (long long)in->num_edges);
    v = 1;
    GNN_TRY(gnn__h5_get_attr_i64(f->file, "directed", 0, &v));
    GNN_CHECK(v == 0 || v == 1, GNN_EFORMAT, "%s: attribute 'directed' is %lld, expected 0 or 1",
              path, (long long)v);
    in->directed = v != 0;
    for (int b = 0; b < N_FLAG_ATTRS; b++) {
        v = 0;
        GNN_TRY(gnn__h5_get_attr_i64(f->file, flag_attrs[b], 1, &v));
        if (v) in->csr_flags |= 1u << b;
    }

    GNN_TRY(gnn__h5_open_dataset(f->file, path, "indptr", GNN_H5_INT, 1, 0, dims, &f->d_indptr));
    GNN_CHECK(dims[0] == (hsize_t)in->num_nodes + 1, GNN_EFORMAT,
              "%s: dataset 'indptr' has %llu entries, expected num_nodes + 1 = %lld", path,
              (unsigned long long)dims[0], (long long)in->num_nodes + 1);
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "indices", GNN_H5_INT, 1, 0, dims, &f->d_indices));
    GNN_CHECK(dims[0] == (hsize_t)in->num_edges, GNN_EFORMAT,
              "%s: dataset 'indices' has %llu entries, expected num_edges = %lld", path,
              (unsigned long long)dims[0], (long long)in->num_edges);
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "weights", GNN_H5_FLOAT, 1, 1, dims, &f->d_weights));
    if (f->d_weights >= 0) {
        in->has_weights = 1;
        GNN_CHECK(dims[0] == (hsize_t)in->num_edges, GNN_EFORMAT,
                  "%s: dataset 'weights' has %llu entries, expected %lld", path,
                  (unsigned long long)dims[0], (long long)in->num_edges);
    }
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "feat", GNN_H5_FLOAT, 2, 1, dims, &f->d_feat));
    if (f->d_feat >= 0) {
        GNN_CHECK(dims[0] == (hsize_t)in->num_nodes, GNN_EFORMAT,
                  "%s: dataset 'feat' has %llu rows, expected num_nodes = %lld", path,
                  (unsigned long long)dims[0], (long long)in->num_nodes);
        in->feat_dim = (int64_t)dims[1];
    }
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "label", GNN_H5_INT, 1, 1, dims, &f->d_label));
    if (f->d_label >= 0) {
        in->has_labels = 1;
        GNN_CHECK(dims[0] == (hsize_t)in->num_nodes, GNN_EFORMAT,
                  "%s: dataset 'label' has %llu entries, expected num_nodes = %lld", path,
                  (unsigned long long)dims[0], (long long)in->num_nodes);
        GNN_TRY(gnn__h5_get_attr_i64(f->file, "num_classes", 0, &in->num_classes));
        GNN_CHECK(in->num_classes >= 0, GNN_EFORMAT, "%s: negative num_classes", path);
        /* An output layer that wide is a damaged attribute, not a dataset. */
        GNN_CHECK(in->num_classes <= GNN_GRAPH_MAX_CLASSES, GNN_EFORMAT,
                  "%s: num_classes %lld is above the limit of %lld", path,
                  (long long)in->num_classes, (long long)GNN_GRAPH_MAX_CLASSES);
    }
    GNN_TRY(gnn__h5_open_dataset(f->file, path, "orig_id", GNN_H5_INT, 1, 1, dims, &f->d_orig));
    if (f->d_orig >= 0) {
        in->has_orig_ids = 1;
        GNN_CHECK(dims[0] == (hsize_t)in->num_nodes, GNN_EFORMAT,
                  "%s: dataset 'orig_id' has %llu entries, expected num_nodes = %lld", path,
                  (unsigned long long)dims[0], (long long)in->num_nodes);
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) in->split_size[s] = -1;
    if (H5Lexists(f->file, "split", H5P_DEFAULT) > 0) {
        split = H5Gopen2(f->file, "split", H5P_DEFAULT);
        if (split < 0) {
            rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: 'split' is not a group", path);
            goto fail;
        }
        for (int s = 0; s < GNN_NUM_SPLITS; s++) {
            GNN_TRY(gnn__h5_open_dataset(split, path, gnn_split_names[s], GNN_H5_INT, 1, 1, dims,
                                         &f->d_split[s]));
            if (f->d_split[s] >= 0) in->split_size[s] = (int64_t)dims[0];
        }
    }
    if (H5Lexists(f->file, "node_data", H5P_DEFAULT) > 0) GNN_TRY(list_node_data(f));
    if (in->version == GNN_GRAPH_VERSION_TYPED) {
        GNN_TRY(read_types(f));
        GNN_TRY(open_typed_data(f));
        GNN_CHECK(!in->has_labels || in->types->target >= 0, GNN_EFORMAT,
                  "%s: a typed graph with labels needs a target_type", path);
    }
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) in->link_size[s] = -1;
    if (H5Lexists(f->file, "link", H5P_DEFAULT) > 0) GNN_TRY(open_link(f));
    H5Eclear2(H5E_DEFAULT);

    /* The two ends of indptr pin the CSR to the edge count. */
    gnn_eid_t ends[2];
    GNN_TRY(gnn__h5_read_rows(f->d_indptr, H5T_NATIVE_INT64, 1, 1, 0, 1, &ends[0]));
    GNN_TRY(gnn__h5_read_rows(f->d_indptr, H5T_NATIVE_INT64, 1, 1, in->num_nodes, 1, &ends[1]));
    GNN_CHECK(ends[0] == 0, GNN_EFORMAT, "%s: indptr[0] = %lld, expected 0", path,
              (long long)ends[0]);
    GNN_CHECK(ends[1] == in->num_edges, GNN_EFORMAT,
              "%s: indptr[num_nodes] = %lld, expected num_edges = %lld", path, (long long)ends[1],
              (long long)in->num_edges);
fail:
    gnn__h5_close(&split);
    /* Messages of the attribute readers do not name the file. */
    if (rc < 0 && (strncmp(gnn_error_message(), path, strlen(path)) != 0 ||
                   gnn_error_message()[strlen(path)] != ':'))
        gnn_error_prefix("%s", path);
    return rc;
}

int gnn_graph_open(const char *path, gnn_graph_file_t **out)
{
    int rc = 0;
    gnn_graph_file_t *f = NULL;
    struct stat st;
    *out = NULL;
    gnn__h5_init();
    if (stat(path, &st) != 0)
        return GNN_FAIL(errno == ENOENT ? GNN_ENOENT : GNN_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return GNN_FAIL(GNN_EFORMAT, "%s: not a regular file", path);
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return GNN_FAIL(GNN_EFORMAT, "%s: not an HDF5 file", path);
    }
    f = gnn_calloc(1, sizeof *f);
    GNN_CHECK(f, GNN_ENOMEM, "out of memory");
    f->file = f->d_indptr = f->d_indices = f->d_weights = f->d_feat = f->d_label = f->d_orig = -1;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) f->d_split[s] = -1;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) f->d_link[s] = -1;
    f->d_etype = -1;
    for (int i = 0; i < GNN_MAX_NODE_TYPES; i++) f->d_tfeat[i] = -1;
    f->path = gnn_strdup(path);
    GNN_CHECK(f->path, GNN_ENOMEM, "out of memory");
    f->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f->file < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: cannot open HDF5 file", path);
        goto fail;
    }
    GNN_TRY(open_layout(f));
    *out = f;
    return 0;
fail:
    gnn_graph_close(f);
    return rc;
}

void gnn_graph_close(gnn_graph_file_t *f)
{
    if (!f) return;
    gnn__h5_close(&f->d_indptr);
    gnn__h5_close(&f->d_indices);
    gnn__h5_close(&f->d_weights);
    gnn__h5_close(&f->d_feat);
    gnn__h5_close(&f->d_label);
    gnn__h5_close(&f->d_orig);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn__h5_close(&f->d_split[s]);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) gnn__h5_close(&f->d_link[s]);
    gnn__h5_close(&f->d_etype);
    for (int i = 0; i < GNN_MAX_NODE_TYPES; i++) gnn__h5_close(&f->d_tfeat[i]);
    gnn__h5_close(&f->file);
    gnn_free(f->info.types);
    for (int64_t i = 0; i < f->info.n_node_data; i++) gnn_free(f->info.node_data[i]);
    gnn_free(f->info.node_data);
    gnn_free(f->path);
    gnn_free(f);
}

const gnn_graph_info_t *gnn_graph_file_info(const gnn_graph_file_t *f) { return &f->info; }
const char *gnn_graph_file_path(const gnn_graph_file_t *f) { return f->path; }

int gnn_graph_read_indptr(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_eid_t *out)
{
    int rc = 0;
    GNN_TRY(check_range(f->path, "row", row0, nrows, f->info.num_nodes));
    GNN_TRY(gnn__h5_read_rows(f->d_indptr, H5T_NATIVE_INT64, 1, 1, row0, nrows + 1, out));
    GNN_TRY(check_offsets(f->path, out, nrows + 1, row0, f->info.num_edges));
fail:
    return rc;
}

int gnn_graph_read_indices(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, gnn_vid_t *out)
{
    int rc = 0;
    GNN_TRY(check_range(f->path, "edge", e0, n, f->info.num_edges));
    GNN_TRY(gnn__h5_read_rows(f->d_indices, H5T_NATIVE_INT64, 1, 1, e0, n, out));
    GNN_TRY(check_ids(f->path, "indices", out, n, e0, f->info.num_nodes));
fail:
    return rc;
}

int gnn_graph_read_weights(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, float *out)
{
    int rc = 0;
    GNN_CHECK(f->info.has_weights, GNN_EINVAL, "%s: the graph has no edge weights", f->path);
    GNN_TRY(check_range(f->path, "edge", e0, n, f->info.num_edges));
    GNN_TRY(gnn__h5_read_rows(f->d_weights, H5T_NATIVE_FLOAT, 1, 1, e0, n, out));
    for (gnn_eid_t e = 0; e < n; e++)
        GNN_CHECK(isfinite(out[e]), GNN_EFORMAT,
                  "%s: edge weight %" GNN_PRIeid " is %s (weights must be finite)", f->path,
                  e0 + e, isnan(out[e]) ? "NaN" : "infinite");
fail:
    return rc;
}

int gnn_graph_read_rows(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_csr_t *out)
{
    int rc = 0;
    gnn_csr_t a = {0};
    memset(out, 0, sizeof *out);
    GNN_TRY(check_range(f->path, "row", row0, nrows, f->info.num_nodes));
    a.n_rows = nrows;
    a.n_cols = f->info.num_nodes;
    a.flags = f->info.csr_flags & ~(unsigned)GNN_CSR_SYMMETRIC;
    a.indptr = (uint64_t)nrows < SIZE_MAX / 16
                   ? gnn_alloc_large(((size_t)nrows + 1) * sizeof *a.indptr)
                   : NULL;
    GNN_CHECK(a.indptr, GNN_ENOMEM, "out of memory reading %lld rows", (long long)nrows);
    GNN_TRY(gnn_graph_read_indptr(f, row0, nrows, a.indptr));
    gnn_eid_t base = a.indptr[0];
    a.nnz = a.indptr[nrows] - base;
    for (gnn_vid_t r = 0; r <= nrows; r++) a.indptr[r] -= base;
    a.indices = (uint64_t)a.nnz < SIZE_MAX / 16
                    ? gnn_alloc_large(((size_t)a.nnz + 1) * sizeof *a.indices)
                    : NULL;
    GNN_CHECK(a.indices, GNN_ENOMEM, "out of memory reading %lld edges", (long long)a.nnz);
    GNN_TRY(gnn_graph_read_indices(f, base, a.nnz, a.indices));
    if (f->info.has_weights) {
        a.weights = gnn_malloc_array((size_t)a.nnz, sizeof *a.weights);
        GNN_CHECK(a.weights, GNN_ENOMEM, "out of memory reading %lld weights", (long long)a.nnz);
        GNN_TRY(gnn_graph_read_weights(f, base, a.nnz, a.weights));
    }
    GNN_TRY(check_row_flags(f->path, a.flags, a.indptr, a.indices, row0, nrows));
    *out = a;
    return 0;
fail:
    gnn_csr_free(&a);
    return rc;
}

int gnn_graph_read_feat(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, float *out)
{
    int rc = 0;
    GNN_CHECK(f->info.feat_dim > 0, GNN_EINVAL, "%s: the graph has no node features", f->path);
    GNN_TRY(check_range(f->path, "row", row0, nrows, f->info.num_nodes));
    if (!f->info.types) {
        GNN_TRY(gnn__h5_read_rows(f->d_feat, H5T_NATIVE_FLOAT, 2, (hsize_t)f->info.feat_dim, row0,
                                  nrows, out));
        return 0;
    }
    /* Typed: each type's rows of the range from its own dataset, padded. */
    const gnn_graph_types_t *t = f->info.types;
    int64_t F = f->info.feat_dim;
    memset(out, 0, (size_t)nrows * (size_t)F * sizeof *out);
    for (int i = 0; i < t->n_ntypes && nrows > 0; i++) {
        int64_t a = t->off[i] > row0 ? t->off[i] : row0;
        int64_t b = t->off[i + 1] < row0 + nrows ? t->off[i + 1] : row0 + nrows;
        int64_t w = t->feat_dim[i];
        if (a >= b || w == 0) continue;
        float *out_a = out + (a - row0) * F;
        GNN_TRY(gnn__h5_read_rows(f->d_tfeat[i], H5T_NATIVE_FLOAT, 2, (hsize_t)w, a - t->off[i],
                                  b - a, out_a));
        if (w < F) /* spread the compact rows to their padded places, last first */
            for (int64_t r = b - a - 1; r >= 0; r--) {
                memmove(out_a + r * F, out_a + r * w, (size_t)w * sizeof *out);
                memset(out_a + r * F + w, 0, (size_t)(F - w) * sizeof *out);
            }
    }
fail:
    return rc;
}

int gnn_graph_read_etypes(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, int32_t *out)
{
    int rc = 0;
    GNN_CHECK(f->info.types, GNN_EINVAL, "%s: the graph has no edge types", f->path);
    GNN_TRY(check_range(f->path, "edge", e0, n, f->info.num_edges));
    GNN_TRY(gnn__h5_read_rows(f->d_etype, H5T_NATIVE_INT32, 1, 1, e0, n, out));
    for (gnn_eid_t i = 0; i < n; i++)
        GNN_CHECK(out[i] >= 0 && out[i] < f->info.types->n_rels, GNN_EFORMAT,
                  "%s: edge_type[%lld] = %d is outside [0, %d)", f->path, (long long)(e0 + i),
                  out[i], f->info.types->n_rels);
fail:
    return rc;
}

int gnn_graph_read_labels(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, int64_t *out)
{
    int rc = 0;
    GNN_CHECK(f->info.has_labels, GNN_EINVAL, "%s: the graph has no labels", f->path);
    GNN_TRY(check_range(f->path, "row", row0, nrows, f->info.num_nodes));
    GNN_TRY(gnn__h5_read_rows(f->d_label, H5T_NATIVE_INT64, 1, 1, row0, nrows, out));
    for (gnn_vid_t i = 0; i < nrows; i++)
        GNN_CHECK(out[i] >= -1 && out[i] < f->info.num_classes, GNN_EFORMAT,
                  "%s: label[%lld] = %lld is outside [-1, %lld)", f->path, (long long)(row0 + i),
                  (long long)out[i], (long long)f->info.num_classes);
fail:
    return rc;
}

int gnn_graph_read_orig_ids(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_vid_t *out)
{
    int rc = 0;
    GNN_CHECK(f->info.has_orig_ids, GNN_EINVAL, "%s: the graph has no original ids", f->path);
    GNN_TRY(check_range(f->path, "row", row0, nrows, f->info.num_nodes));
    GNN_TRY(gnn__h5_read_rows(f->d_orig, H5T_NATIVE_INT64, 1, 1, row0, nrows, out));
fail:
    return rc;
}

int gnn_graph_splits_disjoint(const char *where, const char *what, int64_t *const split[],
                              const int64_t size[], int64_t n)
{
    int rc = 0;
    uint8_t *in = gnn_calloc((size_t)n + 1, 1); /* bit s: in split s */
    GNN_CHECK(in, GNN_ENOMEM, "%s: splits of %lld nodes", where, (long long)n);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        for (int64_t i = 0; split[s] && i < size[s]; i++) {
            const int64_t v = split[s][i];
            if (v < 0 || v >= n) continue; /* the readers refuse those */
            if (in[v]) {
                int t = 0;
                while (!(in[v] & (1u << t))) t++;
                rc = t == s ? GNN_FAIL(GNN_EFORMAT, "%s: split/%s names %s %lld twice", where,
                                       gnn_split_names[s], what, (long long)v)
                            : GNN_FAIL(GNN_EFORMAT,
                                       "%s: %s %lld is in both split/%s and split/%s (the "
                                       "splits must not share nodes)",
                                       where, what, (long long)v, gnn_split_names[t],
                                       gnn_split_names[s]);
                goto fail;
            }
            in[v] |= (uint8_t)(1u << s);
        }
    }
fail:
    gnn_free(in);
    return rc;
}

int gnn_graph_read_split(gnn_graph_file_t *f, gnn_split_t which, int64_t **out, int64_t *n)
{
    int rc = 0;
    int64_t *v = NULL;
    unsigned char *seen = NULL;
    *out = NULL;
    *n = 0;
    GNN_CHECK(which >= 0 && which < GNN_NUM_SPLITS, GNN_EINVAL, "no split %d", (int)which);
    int64_t len = f->info.split_size[which];
    GNN_CHECK(len >= 0, GNN_EINVAL, "%s: the graph has no '%s' split", f->path,
              gnn_split_names[which]);
    v = gnn_malloc_array((size_t)len, sizeof *v);
    GNN_CHECK(v, GNN_ENOMEM, "out of memory reading split '%s'", gnn_split_names[which]);
    GNN_TRY(gnn__h5_read_rows(f->d_split[which], H5T_NATIVE_INT64, 1, 1, 0, len, v));
    GNN_TRY(check_ids(f->path, gnn_split_names[which], v, len, 0, f->info.num_nodes));
    /* A node named twice would be trained on or scored twice: refused. */
    seen = gnn_calloc((size_t)f->info.num_nodes / 8 + 1, 1);
    GNN_CHECK(seen, GNN_ENOMEM, "out of memory reading split '%s'", gnn_split_names[which]);
    for (int64_t i = 0; i < len; i++) {
        int64_t x = v[i];
        GNN_CHECK(!(seen[x >> 3] & (1u << (x & 7))), GNN_EFORMAT,
                  "%s: split/%s names node %" PRId64 " twice", f->path, gnn_split_names[which], x);
        seen[x >> 3] |= (unsigned char)(1u << (x & 7));
    }
    gnn_free(seen);
    *out = v;
    *n = len;
    return 0;
fail:
    gnn_free(seen);
    gnn_free(v);
    return rc;
}

int gnn_graph_read_link(gnn_graph_file_t *f, gnn_link_set_t which, int64_t **out, int64_t *n)
{
    int rc = 0;
    int64_t *v = NULL;
    *out = NULL;
    *n = 0;
    GNN_CHECK(which >= 0 && which < GNN_NUM_LINK_SETS, GNN_EINVAL, "no link set %d", (int)which);
    int64_t len = f->info.link_size[which];
    GNN_CHECK(len >= 0, GNN_EINVAL, "%s: the graph has no link sets (see gnn-dataset split-edges)",
              f->path);
    v = gnn_malloc_array((size_t)len * 2 + 1, sizeof *v);
    GNN_CHECK(v, GNN_ENOMEM, "out of memory reading link set '%s'", gnn_link_set_names[which]);
    GNN_TRY(gnn__h5_read_rows(f->d_link[which], H5T_NATIVE_INT64, 2, 2, 0, len, v));
    GNN_TRY(check_ids(f->path, link_paths[which], v, 2 * len, 0, f->info.num_nodes));
    *out = v;
    *n = len;
    return 0;
fail:
    gnn_free(v);
    return rc;
}

int gnn_graph_read_node_data(gnn_graph_file_t *f, const char *name, int *is_int, int64_t *ncols,
                             void **out)
{
    int rc = 0;
    hid_t d = -1, type = -1, space = -1;
    void *v = NULL;
    char dpath[512];
    hsize_t dims[2] = {0, 1};
    *out = NULL;
    *is_int = 0;
    *ncols = 0;
    int known = 0;
    for (int64_t i = 0; i < f->info.n_node_data; i++) known |= !strcmp(f->info.node_data[i], name);
    GNN_CHECK(known, GNN_EINVAL, "%s: the graph has no node data array '%s'", f->path, name);
    GNN_CHECK(strlen(name) < sizeof dpath - 16, GNN_EINVAL, "%s: node data name too long",
              f->path);
    snprintf(dpath, sizeof dpath, "node_data/%s", name);
    d = H5Dopen2(f->file, dpath, H5P_DEFAULT);
    if (d < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: '%s' is not a readable dataset", f->path, dpath);
        goto fail;
    }
    type = H5Dget_type(d);
    space = H5Dget_space(d);
    H5T_class_t tc = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    GNN_CHECK(tc == H5T_INTEGER || tc == H5T_FLOAT, GNN_EFORMAT,
              "%s: dataset '%s' must hold integers or floats", f->path, dpath);
    GNN_CHECK(rank == 1 || rank == 2, GNN_EFORMAT, "%s: dataset '%s' has %d dimensions, expected 1 or 2",
              f->path, dpath, rank);
    H5Sget_simple_extent_dims(space, dims, NULL);
    GNN_TRY(gnn__h5_check_compact(d, type, space, f->path, dpath));
    GNN_CHECK(dims[0] == (hsize_t)f->info.num_nodes && dims[1] >= 1 &&
                  dims[1] < (hsize_t)GNN_GRAPH_MAX_COUNT,
              GNN_EFORMAT, "%s: dataset '%s' has shape (%llu, %llu), expected %lld rows", f->path,
              dpath, (unsigned long long)dims[0], (unsigned long long)dims[1],
              (long long)f->info.num_nodes);
    size_t cells = (size_t)dims[0] * (size_t)dims[1];
    GNN_CHECK(dims[0] == 0 || cells / (size_t)dims[0] == (size_t)dims[1], GNN_ENOMEM,
              "out of memory reading '%s'", dpath);
    v = gnn_malloc_array(cells + 1, tc == H5T_INTEGER ? sizeof(int64_t) : sizeof(float));
    GNN_CHECK(v, GNN_ENOMEM, "out of memory reading '%s'", dpath);
    GNN_TRY(gnn__h5_read_rows(d, tc == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, rank,
                              dims[1], 0, f->info.num_nodes, v));
    *out = v;
    *is_int = tc == H5T_INTEGER;
    *ncols = (int64_t)dims[1];
    v = NULL;
fail:
    gnn_free(v);
    gnn__h5_close(&space);
    gnn__h5_close(&type);
    gnn__h5_close(&d);
    return rc;
}

/* A typed file's types and relations into g (the rest loaded), checked:
 * every edge joins the types of its relation, labels only on the target
 * type, splits inside it. */
static int load_types(gnn_graph_file_t *f, gnn_graph_t *g)
{
    int rc = 0;
    const char *path = f->path;
    const gnn_graph_info_t *in = &f->info;
    g->types = gnn_malloc(sizeof *g->types);
    g->etype = gnn_alloc_large(((size_t)in->num_edges + 1) * sizeof *g->etype);
    GNN_CHECK(g->types && g->etype, GNN_ENOMEM, "out of memory loading the types of %s", path);
    *g->types = *in->types;
    const gnn_graph_types_t *t = g->types;
    for (gnn_eid_t e = 0; e < in->num_edges; e += LOAD_BLOCK) {
        gnn_eid_t n = in->num_edges - e < LOAD_BLOCK ? in->num_edges - e : LOAD_BLOCK;
        GNN_TRY(gnn_graph_read_etypes(f, e, n, g->etype + e));
    }
    const gnn_csr_t *a = &g->csr;
    for (int ty = 0; ty < t->n_ntypes; ty++)
        for (gnn_vid_t v = t->off[ty]; v < t->off[ty + 1]; v++)
            for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
                int32_t r = g->etype[e];
                if (t->rel_dst[r] != ty || t->rel_src[r] != gnn_graph_types_of(t, a->indices[e]))
                    GNN_TRY(check_edge_types(path, t, v, a->indices[e], r, e));
            }
    if (g->label)
        for (gnn_vid_t v = 0; v < a->n_rows; v++)
            GNN_CHECK(g->label[v] < 0 || (v >= t->off[t->target] && v < t->off[t->target + 1]),
                      GNN_EFORMAT, "%s: node %lld of type '%s' has a label, but the target type is "
                      "'%s'", path, (long long)v, t->ntype[gnn_graph_types_of(t, v)],
                      t->ntype[t->target]);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        for (int64_t i = 0; i < g->split_size[s]; i++) {
            int64_t v = g->split[s][i];
            GNN_CHECK(t->target >= 0 && v >= t->off[t->target] && v < t->off[t->target + 1],
                      GNN_EFORMAT, "%s: split/%s[%lld] = %lld is a node of type '%s', not of the "
                      "target type%s%s", path, gnn_split_names[s], (long long)i, (long long)v,
                      t->ntype[gnn_graph_types_of(t, v)], t->target >= 0 ? " " : "",
                      t->target >= 0 ? t->ntype[t->target] : "");
        }
fail:
    return rc;
}

int gnn_graph_load(const char *path, gnn_graph_t *g)
{
    int rc = 0;
    gnn_graph_file_t *f = NULL;
    gnn_progress_t *prog = NULL;
    gnn_graph_init(g);
    GNN_TRY(gnn_graph_open(path, &f));
    const gnn_graph_info_t *in = &f->info;
    gnn_csr_t *a = &g->csr;
    a->n_rows = a->n_cols = in->num_nodes;
    a->nnz = in->num_edges;
    a->flags = in->csr_flags;
    g->directed = in->directed;
    /* Large arrays: huge pages spare the TLB misses of a sampler's random
     * row reads. */
    GNN_CHECK((uint64_t)in->num_nodes < SIZE_MAX / 16 && (uint64_t)in->num_edges < SIZE_MAX / 16,
              GNN_ENOMEM, "out of memory loading %s", path);
    a->indptr = gnn_alloc_large(((size_t)in->num_nodes + 1) * sizeof *a->indptr);
    a->indices = gnn_alloc_large(((size_t)in->num_edges + 1) * sizeof *a->indices);
    GNN_CHECK(a->indptr && a->indices, GNN_ENOMEM, "out of memory loading %s", path);
    GNN_TRY(gnn_graph_read_indptr(f, 0, in->num_nodes, a->indptr));
    if (in->num_edges > LOAD_BLOCK) prog = gnn_progress_start("reading edges", in->num_edges, "edges");
    for (gnn_eid_t e = 0; e < in->num_edges; e += LOAD_BLOCK) {
        gnn_eid_t n = in->num_edges - e < LOAD_BLOCK ? in->num_edges - e : LOAD_BLOCK;
        GNN_TRY(gnn_graph_read_indices(f, e, n, a->indices + e));
        gnn_progress_set(prog, e + n);
    }
    GNN_TRY(check_row_flags(path, a->flags, a->indptr, a->indices, 0, in->num_nodes));
    if (in->has_weights) {
        a->weights = gnn_malloc_array((size_t)in->num_edges, sizeof *a->weights);
        GNN_CHECK(a->weights, GNN_ENOMEM, "out of memory loading %s", path);
        GNN_TRY(gnn_graph_read_weights(f, 0, in->num_edges, a->weights));
    }
    if (in->feat_dim > 0) {
        g->feat_dim = in->feat_dim;
        size_t fb = (size_t)in->num_nodes * (size_t)in->feat_dim;
        g->feat = fb <= SIZE_MAX / sizeof *g->feat ? gnn_alloc_large(fb * sizeof *g->feat) : NULL;
        GNN_CHECK(g->feat, GNN_ENOMEM, "out of memory loading features of %s", path);
        GNN_TRY(gnn_graph_read_feat(f, 0, in->num_nodes, g->feat));
    }
    if (in->has_labels) {
        g->num_classes = in->num_classes;
        g->label = gnn_malloc_array((size_t)in->num_nodes, sizeof *g->label);
        GNN_CHECK(g->label, GNN_ENOMEM, "out of memory loading labels of %s", path);
        GNN_TRY(gnn_graph_read_labels(f, 0, in->num_nodes, g->label));
    }
    if (in->has_orig_ids) {
        g->orig_id = gnn_malloc_array((size_t)in->num_nodes, sizeof *g->orig_id);
        GNN_CHECK(g->orig_id, GNN_ENOMEM, "out of memory loading ids of %s", path);
        GNN_TRY(gnn_graph_read_orig_ids(f, 0, in->num_nodes, g->orig_id));
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        if (in->split_size[s] >= 0)
            GNN_TRY(gnn_graph_read_split(f, (gnn_split_t)s, &g->split[s], &g->split_size[s]));
    GNN_TRY(gnn_graph_splits_disjoint(path, "node", g->split, g->split_size, in->num_nodes));
    if (in->link_neg_per_pos > 0) {
        for (int s = 0; s < GNN_NUM_LINK_SETS; s++)
            GNN_TRY(gnn_graph_read_link(f, (gnn_link_set_t)s, &g->link[s], &g->link_size[s]));
        g->link_neg_per_pos = in->link_neg_per_pos;
        for (int s = GNN_LINK_VALID_POS; s <= GNN_LINK_TEST_POS; s += 2)
            GNN_TRY(check_link_negatives(path, link_paths[s + 1], g->link[s], g->link_size[s],
                                         g->link[s + 1], g->link_neg_per_pos, GNN_EFORMAT));
    }
    if (in->types) GNN_TRY(load_types(f, g));
    gnn_progress_finish(prog);
    gnn_graph_close(f);
    return 0;
fail:
    gnn_progress_end(prog, rc);
    gnn_graph_close(f);
    gnn_graph_free(g);
    return rc;
}

/* ---- Writing -------------------------------------------------------------- */

struct gnn_graph_writer {
    char *path, *tmp;
    int clean; /* tmp's handle for removal on a signal (graph/base/tmpclean.h), 0: none */
    gnn_graph_header_t h;
    hid_t file, split, node_data;
    hid_t d_indptr, d_indices, d_weights, d_feat, d_label, d_orig;
    int64_t put_indptr, put_indices, put_feat, put_label, put_orig;
    gnn_graph_types_t types;  /* h.types points here (a typed graph) */
    hid_t d_etype, d_tfeat[GNN_MAX_NODE_TYPES];
    int64_t put_etype;
    int put_split[GNN_NUM_SPLITS];
    uint8_t *split_seen; /* a bit per node: named by a split put so far */
    int put_link;
    int64_t max_label;
    int append;             /* num_edges unknown: indices are appended in order */
    gnn_eid_t indptr_last;  /* indptr[num_nodes] as put, -1 until then */
};

static void writer_close(gnn_graph_writer_t *w)
{
    gnn__h5_close(&w->d_indptr);
    gnn__h5_close(&w->d_indices);
    gnn__h5_close(&w->d_weights);
    gnn__h5_close(&w->d_feat);
    gnn__h5_close(&w->d_label);
    gnn__h5_close(&w->d_orig);
    gnn__h5_close(&w->d_etype);
    for (int i = 0; i < GNN_MAX_NODE_TYPES; i++) gnn__h5_close(&w->d_tfeat[i]);
    gnn__h5_close(&w->split);
    gnn__h5_close(&w->node_data);
    gnn__h5_close(&w->file);
}

static void writer_free(gnn_graph_writer_t *w)
{
    gnn_tmp_unregister(w->clean);
    gnn_free(w->path);
    gnn_free(w->tmp);
    gnn_free(w->split_seen);
    gnn_free(w);
}

void gnn_graph_writer_abort(gnn_graph_writer_t *w)
{
    if (!w) return;
    writer_close(w);
    if (w->tmp && w->tmp[0]) unlink(w->tmp);
    writer_free(w);
}

/* The types' attributes, node_type_offsets, and the datasets edge_type
 * and node_feat/TYPE created. */
static int write_types(gnn_graph_writer_t *w)
{
    int rc = 0;
    const gnn_graph_types_t *t = &w->types;
    hid_t g = -1;
    hsize_t dims[2], chunk[2] = {CHUNK_1D, 1};
    GNN_TRY(gnn__h5_write_types(w->file, w->tmp, t));
    dims[0] = w->append ? 0 : (hsize_t)w->h.num_edges;
    GNN_TRY(gnn__h5_create_dataset(w->file, "edge_type", H5T_STD_I32LE, 1, dims, chunk,
                                   &w->d_etype));
    if (w->h.feat_dim > 0) {
        g = H5Gcreate2(w->file, "node_feat", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) {
            rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create group 'node_feat'", w->tmp);
            goto fail;
        }
        for (int i = 0; i < t->n_ntypes; i++) {
            if (!t->feat_dim[i]) continue;
            hsize_t fw = (hsize_t)t->feat_dim[i], rows = FEAT_CHUNK_BYTES / (4 * fw);
            hsize_t fd[2] = {(hsize_t)(t->off[i + 1] - t->off[i]), fw};
            hsize_t fc[2] = {rows ? rows : 1, fw};
            GNN_TRY(gnn__h5_create_dataset(g, t->ntype[i], H5T_IEEE_F32LE, 2, fd, fc,
                                           &w->d_tfeat[i]));
        }
    }
fail:
    gnn__h5_close(&g);
    return rc;
}

int gnn_graph_writer_open(const char *path, const gnn_graph_header_t *h, int overwrite,
                          gnn_graph_writer_t **out)
{
    int rc = 0;
    gnn_graph_writer_t *w = NULL;
    struct stat st;
    *out = NULL;
    gnn__h5_init();
    GNN_CHECK(h->num_nodes >= 0 && h->num_edges >= -1 && h->feat_dim >= 0 && h->num_classes >= 0,
              GNN_EINVAL, "%s: negative count in graph header", path);
    GNN_CHECK(overwrite || stat(path, &st) != 0, GNN_EEXISTS,
              "%s: file exists (use --force to replace it)", path);
    GNN_TRY(gnn_output_replaceable(NULL, path, 0));
    w = gnn_calloc(1, sizeof *w);
    GNN_CHECK(w, GNN_ENOMEM, "out of memory");
    w->file = w->split = w->node_data = w->d_indptr = w->d_indices = w->d_weights = w->d_feat = w->d_label =
        w->d_orig = w->d_etype = -1;
    for (int i = 0; i < GNN_MAX_NODE_TYPES; i++) w->d_tfeat[i] = -1;
    w->h = *h;
    if (h->types) {
        GNN_TRY(gnn_graph_types_check(h->types, h->num_nodes, path));
        GNN_CHECK(h->feat_dim == gnn_graph_types_max_feat(h->types), GNN_EINVAL,
                  "%s: feature width %lld in the header, the widest node type has %lld", path,
                  (long long)h->feat_dim, (long long)gnn_graph_types_max_feat(h->types));
        GNN_CHECK(!h->has_labels || h->types->target >= 0, GNN_EINVAL,
                  "%s: labels of a typed graph need a target type", path);
        w->types = *h->types;
        w->h.types = &w->types;
    }
    w->max_label = -1;
    w->append = h->num_edges < 0;
    w->indptr_last = -1;
    w->path = gnn_strdup(path);
    w->tmp = gnn_malloc(strlen(path) + 32);
    if (w->tmp) w->tmp[0] = '\0'; /* no name, nothing to remove, until it is set */
    GNN_CHECK(w->path && w->tmp, GNN_ENOMEM, "out of memory");
    snprintf(w->tmp, strlen(path) + 32, "%s.tmp-%ld", path, (long)getpid());

    w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->file < 0) {
        rc = GNN_H5_FAIL(GNN_EIO, "%s: cannot create file", w->tmp);
        goto fail;
    }
    w->clean = gnn_tmp_register(w->tmp, 0);
    GNN_TRY(gnn__h5_set_attr_str(w->file, "format", GNN_GRAPH_FORMAT));
    GNN_TRY(gnn__h5_set_attr_i64(w->file, "version",
                                 h->types ? GNN_GRAPH_VERSION_TYPED : GNN_GRAPH_VERSION));
    GNN_TRY(gnn__h5_set_attr_i64(w->file, "num_nodes", h->num_nodes));
    if (!w->append) GNN_TRY(gnn__h5_set_attr_i64(w->file, "num_edges", h->num_edges));
    GNN_TRY(gnn__h5_set_attr_i64(w->file, "directed", h->directed ? 1 : 0));
    for (int b = 0; b < N_FLAG_ATTRS; b++)
        GNN_TRY(gnn__h5_set_attr_i64(w->file, flag_attrs[b], (h->csr_flags >> b) & 1u));

    hsize_t dims[2], chunk[2] = {CHUNK_1D, 1};
    dims[0] = (hsize_t)h->num_nodes + 1;
    GNN_TRY(gnn__h5_create_dataset(w->file, "indptr", H5T_STD_I64LE, 1, dims, chunk, &w->d_indptr));
    dims[0] = w->append ? 0 : (hsize_t)h->num_edges;
    GNN_TRY(gnn__h5_create_dataset(w->file, "indices", H5T_STD_I64LE, 1, dims, chunk, &w->d_indices));
    if (h->has_weights)
        GNN_TRY(gnn__h5_create_dataset(w->file, "weights", H5T_IEEE_F32LE, 1, dims, chunk,
                                       &w->d_weights));
    dims[0] = (hsize_t)h->num_nodes;
    if (h->has_labels)
        GNN_TRY(gnn__h5_create_dataset(w->file, "label", H5T_STD_I64LE, 1, dims, chunk, &w->d_label));
    if (h->has_orig_ids)
        GNN_TRY(gnn__h5_create_dataset(w->file, "orig_id", H5T_STD_I64LE, 1, dims, chunk, &w->d_orig));
    if (h->types) {
        GNN_TRY(write_types(w));
    } else if (h->feat_dim > 0) {
        hsize_t rows = FEAT_CHUNK_BYTES / (4 * (hsize_t)h->feat_dim);
        hsize_t fchunk[2] = {rows ? rows : 1, (hsize_t)h->feat_dim};
        dims[1] = (hsize_t)h->feat_dim;
        GNN_TRY(gnn__h5_create_dataset(w->file, "feat", H5T_IEEE_F32LE, 2, dims, fchunk, &w->d_feat));
    }
    *out = w;
    return 0;
fail:
    gnn_graph_writer_abort(w);
    return rc;
}

const gnn_graph_header_t *gnn_graph_writer_header(const gnn_graph_writer_t *w) { return &w->h; }

int gnn_graph_writer_put_indptr(gnn_graph_writer_t *w, gnn_vid_t first, gnn_vid_t n,
                                const gnn_eid_t *v)
{
    int rc = 0;
    GNN_TRY(check_range(w->path, "indptr", first, n, w->h.num_nodes + 1));
    GNN_TRY(check_offsets(w->path, v, n, first, w->append ? INT64_MAX : w->h.num_edges));
    GNN_CHECK(first != 0 || n == 0 || v[0] == 0, GNN_EINVAL, "%s: indptr[0] must be 0", w->path);
    GNN_CHECK(w->append || first + n != w->h.num_nodes + 1 || n == 0 ||
                  v[n - 1] == w->h.num_edges,
              GNN_EINVAL, "%s: indptr[num_nodes] must equal num_edges = %lld", w->path,
              (long long)w->h.num_edges);
    if (n > 0 && first + n == w->h.num_nodes + 1) w->indptr_last = v[n - 1];
    GNN_TRY(gnn__h5_write_rows(w->d_indptr, H5T_NATIVE_INT64, 1, 1, first, n, v));
    w->put_indptr += n;
fail:
    return rc;
}

int gnn_graph_writer_put_indices(gnn_graph_writer_t *w, gnn_eid_t e0, gnn_eid_t n,
                                 const gnn_vid_t *v, const float *weights)
{
    int rc = 0;
    GNN_CHECK(!w->h.has_weights == !weights, GNN_EINVAL,
              "%s: weights must be given exactly when the header declares them", w->path);
    if (w->append) {
        GNN_CHECK(e0 == w->put_indices && n >= 0, GNN_EINVAL,
                  "%s: edges must be appended in order (at %lld, not %lld)", w->path,
                  (long long)w->put_indices, (long long)e0);
        hsize_t dims[1] = {(hsize_t)(e0 + n)};
        if (H5Dset_extent(w->d_indices, dims) < 0 ||
            (w->d_weights >= 0 && H5Dset_extent(w->d_weights, dims) < 0)) {
            rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot extend the edge datasets", w->tmp);
            goto fail;
        }
    } else {
        GNN_TRY(check_range(w->path, "edge", e0, n, w->h.num_edges));
    }
    GNN_TRY(check_ids(w->path, "indices", v, n, e0, w->h.num_nodes));
    GNN_TRY(gnn__h5_write_rows(w->d_indices, H5T_NATIVE_INT64, 1, 1, e0, n, v));
    if (weights) GNN_TRY(gnn__h5_write_rows(w->d_weights, H5T_NATIVE_FLOAT, 1, 1, e0, n, weights));
    w->put_indices += n;
fail:
    return rc;
}

int gnn_graph_writer_put_feat(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                              const float *v)
{
    int rc = 0;
    float *tmp = NULL;
    GNN_CHECK(w->h.feat_dim > 0, GNN_EINVAL, "%s: the header declares no features", w->path);
    GNN_TRY(check_range(w->path, "row", row0, nrows, w->h.num_nodes));
    if (!w->h.types) {
        GNN_TRY(gnn__h5_write_rows(w->d_feat, H5T_NATIVE_FLOAT, 2, (hsize_t)w->h.feat_dim, row0,
                                   nrows, v));
    } else { /* each type's columns of its rows, compacted block by block */
        const gnn_graph_types_t *t = w->h.types;
        int64_t F = w->h.feat_dim, blk = (int64_t)(FEAT_CHUNK_BYTES / sizeof(float)) / F + 1;
        tmp = gnn_malloc_array((size_t)blk * (size_t)F, sizeof *tmp);
        GNN_CHECK(tmp, GNN_ENOMEM, "out of memory");
        for (int i = 0; i < t->n_ntypes; i++) {
            int64_t a = t->off[i] > row0 ? t->off[i] : row0;
            int64_t b = t->off[i + 1] < row0 + nrows ? t->off[i + 1] : row0 + nrows;
            int64_t fw = t->feat_dim[i];
            for (int64_t r0 = a; fw > 0 && r0 < b; r0 += blk) {
                int64_t n = b - r0 < blk ? b - r0 : blk;
                for (int64_t r = 0; r < n; r++)
                    memcpy(tmp + r * fw, v + (r0 - row0 + r) * F, (size_t)fw * sizeof *tmp);
                GNN_TRY(gnn__h5_write_rows(w->d_tfeat[i], H5T_NATIVE_FLOAT, 2, (hsize_t)fw,
                                           r0 - t->off[i], n, tmp));
            }
        }
    }
    w->put_feat += nrows;
fail:
    gnn_free(tmp);
    return rc;
}

int gnn_graph_writer_put_etypes(gnn_graph_writer_t *w, gnn_eid_t e0, gnn_eid_t n,
                                const int32_t *v)
{
    int rc = 0;
    GNN_CHECK(w->h.types, GNN_EINVAL, "%s: the header declares no types", w->path);
    if (w->append) {
        GNN_CHECK(e0 == w->put_etype && n >= 0, GNN_EINVAL,
                  "%s: edge types must be appended in order (at %lld, not %lld)", w->path,
                  (long long)w->put_etype, (long long)e0);
        hsize_t dims[1] = {(hsize_t)(e0 + n)};
        if (H5Dset_extent(w->d_etype, dims) < 0) {
            rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot extend 'edge_type'", w->tmp);
            goto fail;
        }
    } else {
        GNN_TRY(check_range(w->path, "edge", e0, n, w->h.num_edges));
    }
    for (gnn_eid_t i = 0; i < n; i++)
        GNN_CHECK(v[i] >= 0 && v[i] < w->h.types->n_rels, GNN_EINVAL,
                  "%s: edge %lld has relation %d, outside [0, %d)", w->path, (long long)(e0 + i),
                  v[i], w->h.types->n_rels);
    GNN_TRY(gnn__h5_write_rows(w->d_etype, H5T_NATIVE_INT32, 1, 1, e0, n, v));
    w->put_etype += n;
fail:
    return rc;
}

int gnn_graph_writer_put_labels(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                                const int64_t *v)
{
    int rc = 0;
    GNN_CHECK(w->h.has_labels, GNN_EINVAL, "%s: the header declares no labels", w->path);
    GNN_TRY(check_range(w->path, "row", row0, nrows, w->h.num_nodes));
    for (gnn_vid_t i = 0; i < nrows; i++) {
        GNN_CHECK(v[i] >= -1, GNN_EINVAL, "%s: label of node %lld is %lld (must be >= -1)",
                  w->path, (long long)(row0 + i), (long long)v[i]);
        GNN_CHECK(w->h.num_classes == 0 || v[i] < w->h.num_classes, GNN_EINVAL,
                  "%s: label of node %lld is %lld, beyond num_classes = %lld", w->path,
                  (long long)(row0 + i), (long long)v[i], (long long)w->h.num_classes);
        if (v[i] > w->max_label) w->max_label = v[i];
    }
    GNN_TRY(gnn__h5_write_rows(w->d_label, H5T_NATIVE_INT64, 1, 1, row0, nrows, v));
    w->put_label += nrows;
fail:
    return rc;
}

int gnn_graph_writer_put_orig_ids(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                                  const gnn_vid_t *v)
{
    int rc = 0;
    GNN_CHECK(w->h.has_orig_ids, GNN_EINVAL, "%s: the header declares no original ids", w->path);
    GNN_TRY(check_range(w->path, "row", row0, nrows, w->h.num_nodes));
    GNN_TRY(gnn__h5_write_rows(w->d_orig, H5T_NATIVE_INT64, 1, 1, row0, nrows, v));
    w->put_orig += nrows;
fail:
    return rc;
}

int gnn_graph_writer_put_node_data(gnn_graph_writer_t *w, const char *name, int is_int,
                                   int64_t ncols, const void *v)
{
    int rc = 0;
    hid_t d = -1;
    GNN_CHECK(ncols >= 1 && name && name[0] && !strchr(name, '/'), GNN_EINVAL,
              "%s: bad node data array '%s'", w->path, name ? name : "");
    if (w->node_data < 0) {
        w->node_data = H5Gcreate2(w->file, "node_data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (w->node_data < 0) {
            rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create group 'node_data'", w->tmp);
            goto fail;
        }
    }
    hsize_t dims[2] = {(hsize_t)w->h.num_nodes, (hsize_t)ncols};
    hsize_t chunk[2] = {CHUNK_1D / (hsize_t)ncols ? CHUNK_1D / (hsize_t)ncols : 1, (hsize_t)ncols};
    int rank = ncols == 1 ? 1 : 2;
    GNN_TRY(gnn__h5_create_dataset(w->node_data, name, is_int ? H5T_STD_I64LE : H5T_IEEE_F32LE,
                                   rank, dims, chunk, &d));
    GNN_TRY(gnn__h5_write_rows(d, is_int ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, rank,
                               (hsize_t)ncols, 0, w->h.num_nodes, v));
fail:
    gnn__h5_close(&d);
    return rc;
}

int gnn_graph_writer_put_split(gnn_graph_writer_t *w, gnn_split_t which, const int64_t *idx,
                               int64_t n)
{
    int rc = 0;
    hid_t d = -1;
    GNN_CHECK(which >= 0 && which < GNN_NUM_SPLITS, GNN_EINVAL, "no split %d", (int)which);
    GNN_CHECK(!w->put_split[which], GNN_EINVAL, "%s: split '%s' written twice", w->path,
              gnn_split_names[which]);
    GNN_CHECK(n >= 0, GNN_EINVAL, "negative split size");
    GNN_TRY(check_ids(w->path, gnn_split_names[which], idx, n, 0, w->h.num_nodes));
    /* Each node in one split at most (gnn_graph_load refuses others). */
    if (!w->split_seen) w->split_seen = gnn_calloc((size_t)w->h.num_nodes / 8 + 1, 1);
    GNN_CHECK(w->split_seen, GNN_ENOMEM, "%s: splits of %lld nodes", w->path,
              (long long)w->h.num_nodes);
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = idx[i];
        GNN_CHECK(!(w->split_seen[v >> 3] & (1u << (v & 7))), GNN_EINVAL,
                  "%s: split/%s names node %lld, which it or another split already names (the "
                  "splits must not share nodes)",
                  w->path, gnn_split_names[which], (long long)v);
        w->split_seen[v >> 3] |= (uint8_t)(1u << (v & 7));
    }
    if (w->split < 0) {
        w->split = H5Gcreate2(w->file, "split", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (w->split < 0) {
            rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create group 'split'", w->tmp);
            goto fail;
        }
    }
    hsize_t dims[1] = {(hsize_t)n}, chunk[1] = {CHUNK_1D};
    GNN_TRY(gnn__h5_create_dataset(w->split, gnn_split_names[which], H5T_STD_I64LE, 1, dims, chunk,
                                   &d));
    GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, 0, n, idx));
    w->put_split[which] = 1;
fail:
    gnn__h5_close(&d);
    return rc;
}

int gnn_graph_writer_put_link(gnn_graph_writer_t *w, int64_t neg_per_pos,
                              const int64_t *const sets[GNN_NUM_LINK_SETS],
                              const int64_t n[GNN_NUM_LINK_SETS])
{
    int rc = 0;
    hid_t g = -1, d = -1;
    GNN_CHECK(!w->put_link, GNN_EINVAL, "%s: link sets written twice", w->path);
    GNN_CHECK(neg_per_pos >= 1 && neg_per_pos < GNN_GRAPH_MAX_COUNT, GNN_EINVAL,
              "%s: link neg_per_pos = %lld, expected at least 1", w->path, (long long)neg_per_pos);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        GNN_CHECK(n[s] >= 0 && n[s] < GNN_GRAPH_MAX_COUNT / 2 && (sets[s] || n[s] == 0),
                  GNN_EINVAL, "%s: bad link set '%s' (%lld pairs)", w->path,
                  gnn_link_set_names[s], (long long)n[s]);
        GNN_TRY(check_ids(w->path, link_paths[s], sets[s], 2 * n[s], 0, w->h.num_nodes));
    }
    for (int s = GNN_LINK_VALID_POS; s <= GNN_LINK_TEST_POS; s += 2) {
        GNN_CHECK(n[s + 1] % neg_per_pos == 0 && n[s + 1] / neg_per_pos == n[s], GNN_EINVAL,
                  "%s: '%s' has %lld pairs, expected neg_per_pos x %lld = %lld x %lld", w->path,
                  link_paths[s + 1], (long long)n[s + 1], (long long)n[s],
                  (long long)neg_per_pos, (long long)n[s]);
        GNN_TRY(check_link_negatives(w->path, link_paths[s + 1], sets[s], n[s], sets[s + 1],
                                     neg_per_pos, GNN_EINVAL));
    }
    g = H5Gcreate2(w->file, "link", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create group 'link'", w->tmp);
        goto fail;
    }
    GNN_TRY(gnn__h5_set_attr_i64(g, "neg_per_pos", neg_per_pos));
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        hsize_t dims[2] = {(hsize_t)n[s], 2}, chunk[2] = {CHUNK_1D / 2, 2};
        GNN_TRY(gnn__h5_create_dataset(g, gnn_link_set_names[s], H5T_STD_I64LE, 2, dims, chunk,
                                       &d));
        GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 2, 2, 0, n[s], sets[s]));
        gnn__h5_close(&d);
    }
    w->put_link = 1;
fail:
    gnn__h5_close(&d);
    gnn__h5_close(&g);
    return rc;
}

int gnn_graph_writer_commit(gnn_graph_writer_t *w)
{
    int rc = 0;
    const gnn_graph_header_t *h = &w->h;
    GNN_CHECK(w->put_indptr == h->num_nodes + 1, GNN_EINVAL,
              "%s: %lld of %lld indptr entries written", w->path, (long long)w->put_indptr,
              (long long)h->num_nodes + 1);
    if (w->append) {
        GNN_CHECK(w->indptr_last == w->put_indices, GNN_EINVAL,
                  "%s: indptr[num_nodes] = %lld but %lld edges were written", w->path,
                  (long long)w->indptr_last, (long long)w->put_indices);
        GNN_TRY(gnn__h5_set_attr_i64(w->file, "num_edges", w->put_indices));
    }
    GNN_CHECK(w->append || w->put_indices == h->num_edges, GNN_EINVAL,
              "%s: %lld of %lld edges written", w->path, (long long)w->put_indices,
              (long long)h->num_edges);
    GNN_CHECK(!h->types || w->put_etype == (w->append ? w->put_indices : h->num_edges),
              GNN_EINVAL, "%s: %lld of %lld edge types written", w->path,
              (long long)w->put_etype, (long long)(w->append ? w->put_indices : h->num_edges));
    GNN_CHECK(h->feat_dim == 0 || w->put_feat == h->num_nodes, GNN_EINVAL,
              "%s: %lld of %lld feature rows written", w->path, (long long)w->put_feat,
              (long long)h->num_nodes);
    GNN_CHECK(!h->has_labels || w->put_label == h->num_nodes, GNN_EINVAL,
              "%s: %lld of %lld labels written", w->path, (long long)w->put_label,
              (long long)h->num_nodes);
    GNN_CHECK(!h->has_orig_ids || w->put_orig == h->num_nodes, GNN_EINVAL,
              "%s: %lld of %lld original ids written", w->path, (long long)w->put_orig,
              (long long)h->num_nodes);
    if (h->has_labels)
        GNN_TRY(gnn__h5_set_attr_i64(w->file, "num_classes",
                                     h->num_classes > 0 ? h->num_classes : w->max_label + 1));
    /* Flush, close and only then give the file its name. */
    if (H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0) {
        rc = GNN_H5_FAIL(GNN_EIO, "%s: cannot flush", w->tmp);
        goto fail;
    }
    writer_close(w);
    GNN_CHECK(rename(w->tmp, w->path) == 0, GNN_EIO, "%s: cannot rename into place: %s", w->path,
              strerror(errno));
    writer_free(w);
    return 0;
fail:
    gnn_graph_writer_abort(w);
    return rc;
}

int gnn_graph_write(const char *path, const gnn_graph_t *g, int overwrite)
{
    int rc = 0;
    gnn_graph_writer_t *w = NULL;
    const gnn_csr_t *a = &g->csr;
    gnn_graph_header_t h = {
        .num_nodes = a->n_rows,
        .num_edges = a->nnz,
        .directed = g->directed,
        .csr_flags = a->flags,
        .feat_dim = g->feat ? g->feat_dim : 0,
        .has_weights = a->weights != NULL,
        .has_labels = g->label != NULL,
        .num_classes = g->label ? g->num_classes : 0,
        .has_orig_ids = g->orig_id != NULL,
        .types = g->types,
    };
    GNN_CHECK(a->n_rows == a->n_cols, GNN_EINVAL, "%s: graph CSR must be square", path);
    GNN_CHECK(!g->types == !g->etype, GNN_EINVAL, "%s: a typed graph needs its edge types", path);
    GNN_TRY(gnn_graph_writer_open(path, &h, overwrite, &w));
    GNN_TRY(gnn_graph_writer_put_indptr(w, 0, a->n_rows + 1, a->indptr));
    GNN_TRY(gnn_graph_writer_put_indices(w, 0, a->nnz, a->indices, a->weights));
    if (g->types) GNN_TRY(gnn_graph_writer_put_etypes(w, 0, a->nnz, g->etype));
    if (h.feat_dim) GNN_TRY(gnn_graph_writer_put_feat(w, 0, a->n_rows, g->feat));
    if (h.has_labels) GNN_TRY(gnn_graph_writer_put_labels(w, 0, a->n_rows, g->label));
    if (h.has_orig_ids) GNN_TRY(gnn_graph_writer_put_orig_ids(w, 0, a->n_rows, g->orig_id));
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        if (g->split[s] || g->split_size[s] == 0)
            GNN_TRY(gnn_graph_writer_put_split(w, (gnn_split_t)s, g->split[s], g->split_size[s]));
    if (g->link_neg_per_pos > 0) {
        const int64_t *const sets[GNN_NUM_LINK_SETS] = {g->link[0], g->link[1], g->link[2],
                                                        g->link[3]};
        GNN_TRY(gnn_graph_writer_put_link(w, g->link_neg_per_pos, sets, g->link_size));
    }
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    return rc;
fail:
    gnn_graph_writer_abort(w);
    return rc;
}
