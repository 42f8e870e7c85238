/*
 * The typed csv layout of OGB node-property datasets (ogb.h; ogbn-mag):
 * node types and their counts from raw/num-node-dict.csv.gz, relations
 * from raw/triplet-type-list.csv.gz, each relation's edges from
 * raw/relations/SRC___REL___DST/, per-type features, extra columns and
 * labels from raw/node-feat/TYPE/ and raw/node-label/TYPE/, and the split
 * of the labelled (target) type from split/NAME/TYPE/.
 *
 * Node i of type t is node off[t] + i. Relation r of the triplet list keeps
 * index r; with --add-reverse, relation R + r (rev_REL, DST -> SRC) holds
 * every edge of r reversed and the graph is stored undirected. The CSR is
 * built in memory (typed.h): some 28 bytes per stored edge at the peak,
 * about 1.2 GB for ogbn-mag with --add-reverse (42M stored edges).
 * Features, labels and extra columns stream through the writer in row
 * blocks; featureless types get zero rows, labels are -1 outside the
 * target type, and an extra column (node_year) is -1 on the rows of types
 * that lack it.
 *
 * Order of work: everything but the bulk is read and checked first (types,
 * relations and their edge counts, which types have features and labels,
 * the split files), so bad input is refused before the edges are read.
 * Then the edges, the CSR, and the writer; any failure aborts the writer:
 * no output file. The parsers of the two small files work on an open reader
 * and touch no file system (the relation folders are checked by the
 * caller), so the fuzz target (tests/fuzz/fuzz_ogb_hetero.c) runs them from
 * memory; ogb_internal.h states their contracts.
 */
#include "datasets/ogb_internal.h"
#include "datasets/textio.h"
#include "datasets/typed.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FILL_BLOCK ((gnn_vid_t)1 << 16)
#define MAX_COLUMNS 16 /* extra node_NAME columns kept */
#define REV_PREFIX "rev_"

/* What the small files say, gathered before the edges are read. */
typedef struct {
    gnn_graph_types_t t;                     /* relations: the listed ones, then reverses */
    int n_listed;                            /* relations in triplet-type-list */
    int64_t m[GNN_MAX_RELATIONS];            /* edges of each listed relation */
    char edges[GNN_MAX_RELATIONS][4096];     /* each listed relation's edge file */
    char feat[GNN_MAX_NODE_TYPES][4096];     /* each type's node-feat file; "": none */
    char label[4096];                        /* the target type's node-label file; "": none */
} hetero_t;

/* 1 to max characters of [A-Za-z0-9_-] (max below GNN_TYPE_NAME_MAX). */
static int name_ok(const char *s, size_t len, size_t max)
{
    return len <= max && gnn_graph_type_name_ok(s, len);
}

/* The next comma-separated field of [*p, end), without surrounding
 * blanks; *p moves past the field and its comma. */
static void next_field(const char **p, const char *end, const char **f, size_t *flen)
{
    const char *a = *p, *b;
    while (a < end && (*a == ' ' || *a == '\t')) a++;
    b = a;
    while (b < end && *b != ',') b++;
    *p = b < end ? b + 1 : end;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    *f = a;
    *flen = (size_t)(b - a);
}

static int count_fields(const char *line, size_t len)
{
    int n = 1;
    for (size_t i = 0; i < len; i++) n += line[i] == ',';
    return n;
}

/* The scope of a type's messages: " of type 'NAME'". */
static const char *type_scope(char *buf, size_t len, const gnn_graph_types_t *t, int i)
{
    snprintf(buf, len, " of type '%s'", t->ntype[i]);
    return buf;
}

/* ---- Types and relations ---------------------------------------------------- */

/* num-node-dict from an open reader (ogb_internal.h). */
int gnn__ogb_parse_node_dict(gnn_text_t *tx, gnn_graph_types_t *t)
{
    int rc = 0;
    char *line;
    size_t len;
    int lines = 0;
    t->n_ntypes = 0;
    while ((rc = gnn_text_next_line(tx, &line, &len)) == 1) {
        if (len == 0) continue;
        const char *p = line, *end = line + len, *f;
        size_t fl;
        int nf = count_fields(line, len);
        if (lines == 0) {
            if (nf > GNN_MAX_NODE_TYPES) {
                rc = gnn_text_fail(tx, "%d node types; at most %d are supported", nf,
                                   GNN_MAX_NODE_TYPES);
                goto fail;
            }
            for (int i = 0; i < nf; i++) {
                next_field(&p, end, &f, &fl);
                if (!name_ok(f, fl, GNN_TYPE_NAME_MAX - 1)) {
                    rc = gnn_text_fail(tx, "node type name '%.*s' is not 1 to %d characters of "
                                           "A-Z a-z 0-9 _ - (the first line names the types, the "
                                           "second gives their counts)",
                                       (int)(fl < 64 ? fl : 64), f, GNN_TYPE_NAME_MAX - 1);
                    goto fail;
                }
                memcpy(t->ntype[i], f, fl);
                t->ntype[i][fl] = '\0';
                t->n_ntypes = i;
                if (gnn_graph_types_find(t, t->ntype[i]) >= 0) {
                    rc = gnn_text_fail(tx, "node type '%s' is named twice", t->ntype[i]);
                    goto fail;
                }
            }
            t->n_ntypes = nf;
        } else if (lines == 1) {
            if (nf != t->n_ntypes) {
                rc = gnn_text_fail(tx, "%d counts for the %d node types named on the line above",
                                   nf, t->n_ntypes);
                goto fail;
            }
            t->off[0] = 0;
            for (int i = 0; i < nf; i++) {
                next_field(&p, end, &f, &fl);
                const char *q = f;
                int64_t v;
                if (gnn_parse_i64(&q, f + fl, &v) != 0 || q != f + fl || v < 0) {
                    rc = gnn_text_fail(tx, "count '%.*s' of node type '%s' is not a "
                                           "non-negative integer",
                                       (int)(fl < 40 ? fl : 40), f, t->ntype[i]);
                    goto fail;
                }
                if (v >= GNN_GRAPH_MAX_COUNT - t->off[i]) {
                    rc = gnn_text_fail(tx, "node count %lld of type '%s' takes the total beyond "
                                           "the limit 2^62", (long long)v, t->ntype[i]);
                    goto fail;
                }
                t->off[i + 1] = t->off[i] + v;
            }
        } else {
            rc = gnn_text_fail(tx, "a third line; num-node-dict holds a line of node type names "
                                   "and a line of their counts");
            goto fail;
        }
        lines++;
    }
    if (rc < 0) goto fail;
    rc = 0;
    GNN_CHECK(lines == 2, GNN_EFORMAT, "%s: %s", gnn_text_name(tx),
              lines ? "no line of node counts after the line of node type names"
                    : "empty (expected a line of node type names and a line of their counts)");
fail:
    return rc;
}

/* num-node-dict: a line of type names, then a line of their counts. */
static int read_node_dict(const char *path, gnn_graph_types_t *t)
{
    int rc = 0;
    gnn_text_t *tx = NULL;
    GNN_TRY(gnn_text_open(path, &tx));
    GNN_TRY(gnn__ogb_parse_node_dict(tx, t));
fail:
    gnn_text_close(tx);
    return rc;
}

/* The node type named by [f, f + fl) on the current line, or a failure. */
static int find_type(gnn_text_t *tx, const gnn_graph_types_t *t, const char *f, size_t fl,
                     const char *role, int *out)
{
    char name[GNN_TYPE_NAME_MAX];
    *out = -1;
    if (fl < sizeof name) {
        memcpy(name, f, fl);
        name[fl] = '\0';
        *out = gnn_graph_types_find(t, name);
    }
    if (*out >= 0) return 0;
    return gnn_text_fail(tx, "unknown %s node type '%.*s' (not in num-node-dict)", role,
                         (int)(fl < 64 ? fl : 64), f);
}

/* One triplet-type-list line, appended to t's relations (ogb_internal.h). */
int gnn__ogb_parse_triplet(gnn_text_t *tx, const char *line, size_t len, int add_reverse,
                           gnn_graph_types_t *t)
{
    int rc = 0;
    const int max_rels = add_reverse ? GNN_MAX_RELATIONS / 2 : GNN_MAX_RELATIONS;
    const size_t max_name = GNN_TYPE_NAME_MAX - 1 - (add_reverse ? strlen(REV_PREFIX) : 0);
    const int r = t->n_rels;
    const char *p = line, *end = line + len, *f;
    size_t fl;
    if (count_fields(line, len) != 3) {
        rc = gnn_text_fail(tx, "expected 'SRC,REL,DST' (node type, relation, node type), "
                               "found '%.60s'", line);
        goto fail;
    }
    if (r >= max_rels) {
        rc = gnn_text_fail(tx, "more than %d relations%s", max_rels,
                           add_reverse ? " (--add-reverse doubles them)" : "");
        goto fail;
    }
    next_field(&p, end, &f, &fl);
    GNN_TRY(find_type(tx, t, f, fl, "source", &t->rel_src[r]));
    next_field(&p, end, &f, &fl);
    if (!name_ok(f, fl, max_name)) {
        rc = gnn_text_fail(tx, "relation name '%.*s' is not 1 to %d characters of A-Z a-z "
                               "0-9 _ -%s",
                           (int)(fl < 64 ? fl : 64), f, (int)max_name,
                           add_reverse ? " (--add-reverse prefixes its reverse with '"
                                         REV_PREFIX "')" : "");
        goto fail;
    }
    memcpy(t->rel[r], f, fl);
    t->rel[r][fl] = '\0';
    next_field(&p, end, &f, &fl);
    GNN_TRY(find_type(tx, t, f, fl, "destination", &t->rel_dst[r]));
    for (int k = 0; k < r; k++)
        if (!strcmp(t->rel[k], t->rel[r]) && t->rel_src[k] == t->rel_src[r] &&
            t->rel_dst[k] == t->rel_dst[r]) {
            rc = gnn_text_fail(tx, "relation %s,%s,%s is listed twice",
                               t->ntype[t->rel_src[r]], t->rel[r], t->ntype[t->rel_dst[r]]);
            goto fail;
        }
    t->n_rels = r + 1;
fail:
    return rc;
}

/* triplet-type-list: one "SRC,REL,DST" line a relation; each relation's
 * folder must exist. */
static int read_triplets(const char *path, const char *dir, int add_reverse, hetero_t *h)
{
    int rc = 0;
    gnn_text_t *tx = NULL;
    gnn_graph_types_t *t = &h->t;
    char *line;
    size_t len;
    t->n_rels = 0;
    GNN_TRY(gnn_text_open(path, &tx));
    while ((rc = gnn_text_next_line(tx, &line, &len)) == 1) {
        if (len == 0) continue;
        GNN_TRY(gnn__ogb_parse_triplet(tx, line, len, add_reverse, t));
        const int r = t->n_rels - 1;
        const char *src = t->ntype[t->rel_src[r]], *dst = t->ntype[t->rel_dst[r]];
        char rel[4096], folder[4096];
        struct stat st;
        snprintf(rel, sizeof rel, "raw/relations/%s___%s___%s", src, t->rel[r], dst);
        GNN_TRY(gnn__ogb_path(folder, sizeof folder, dir, rel));
        if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rc = gnn_text_fail(tx, "relation %s,%s,%s: no folder %s", src, t->rel[r], dst,
                               folder);
            goto fail;
        }
    }
    if (rc < 0) goto fail;
    rc = 0;
    GNN_CHECK(t->n_rels > 0, GNN_EFORMAT, "%s: no relations listed", path);
    h->n_listed = t->n_rels;
fail:
    gnn_text_close(tx);
    return rc;
}

/* Each listed relation's edge file and edge count. */
static int find_relation_files(const char *dir, hetero_t *h)
{
    int rc = 0;
    const gnn_graph_types_t *t = &h->t;
    int64_t total = 0;
    for (int r = 0; r < h->n_listed; r++) {
        char base[1024], path[4096];
        const char *src = t->ntype[t->rel_src[r]], *dst = t->ntype[t->rel_dst[r]];
        snprintf(base, sizeof base, "relations/%s___%s___%s/edge", src, t->rel[r], dst);
        GNN_TRY(gnn__ogb_find_csv(h->edges[r], sizeof h->edges[r], dir, base));
        GNN_CHECK(h->edges[r][0], GNN_ENOENT, "%s/raw/%s.csv.gz: no such file", dir, base);
        snprintf(base, sizeof base, "relations/%s___%s___%s/num-edge-list", src, t->rel[r], dst);
        GNN_TRY(gnn__ogb_find_csv(path, sizeof path, dir, base));
        GNN_CHECK(path[0], GNN_ENOENT, "%s/raw/%s.csv.gz: no such file", dir, base);
        GNN_TRY(gnn__ogb_read_count(path, "edge count", &h->m[r]));
        total += h->m[r];
        GNN_CHECK(total < GNN_GRAPH_MAX_COUNT / 2, GNN_EFORMAT,
                  "%s: the edges of the relations up to this one number %lld, beyond the limit "
                  "2^61", path, (long long)total);
    }
fail:
    return rc;
}

/* --add-reverse: relation R + r is rev_REL of relation r, DST -> SRC. */
static int add_reverses(const char *list, gnn_graph_types_t *t)
{
    int rc = 0;
    const int R = t->n_rels;
    for (int r = 0; r < R; r++) {
        size_t len = strlen(t->rel[r]), pre = strlen(REV_PREFIX);
        GNN_CHECK(pre + len < GNN_TYPE_NAME_MAX, GNN_EINTERNAL, "relation name '%s' too long",
                  t->rel[r]);
        memcpy(t->rel[R + r], REV_PREFIX, pre);
        memcpy(t->rel[R + r] + pre, t->rel[r], len + 1);
        t->rel_src[R + r] = t->rel_dst[r];
        t->rel_dst[R + r] = t->rel_src[r];
        for (int k = 0; k < R; k++)
            GNN_CHECK(strcmp(t->rel[k], t->rel[R + r]) || t->rel_src[k] != t->rel_src[R + r] ||
                          t->rel_dst[k] != t->rel_dst[R + r],
                      GNN_EFORMAT, "%s lists %s,%s,%s, the reverse --add-reverse would add for "
                      "%s,%s,%s", list, t->ntype[t->rel_src[k]], t->rel[k],
                      t->ntype[t->rel_dst[k]], t->ntype[t->rel_src[r]], t->rel[r],
                      t->ntype[t->rel_dst[r]]);
    }
    t->n_rels = 2 * R;
fail:
    return rc;
}

/* ---- Per-type files ---------------------------------------------------------- */

/* Every folder under raw/<what>/ names a node type. */
static int check_type_dirs(const char *dir, const char *what, const gnn_graph_types_t *t)
{
    int rc = 0;
    char rel[64], top[4096], p[4096];
    snprintf(rel, sizeof rel, "raw/%s", what);
    GNN_TRY(gnn__ogb_path(top, sizeof top, dir, rel));
    DIR *d = opendir(top);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        if (snprintf(p, sizeof p, "%s/%s", top, e->d_name) >= (int)sizeof p) continue;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (gnn_graph_types_find(t, e->d_name) < 0) {
            rc = GNN_FAIL(GNN_EFORMAT, "%s: '%s' is not a node type of raw/num-node-dict.csv.gz",
                          p, e->d_name);
            break;
        }
    }
    if (d) closedir(d);
fail:
    return rc;
}

/* Each type's feature file and width (none with --no-features), and the
 * one type with labels (the target). */
static int find_type_files(const gnn_ogb_opts_t *o, hetero_t *h)
{
    int rc = 0;
    gnn_graph_types_t *t = &h->t;
    char base[256], path[4096];
    GNN_TRY(check_type_dirs(o->dir, "node-feat", t));
    GNN_TRY(check_type_dirs(o->dir, "node-label", t));
    t->target = -1;
    for (int i = 0; i < t->n_ntypes; i++) {
        snprintf(base, sizeof base, "node-label/%s/node-label", t->ntype[i]);
        GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, base));
        if (path[0]) {
            GNN_CHECK(t->target < 0, GNN_EFORMAT,
                      "%s and %s: two node types have labels (a dataset has one target type)",
                      h->label, path);
            t->target = i;
            snprintf(h->label, sizeof h->label, "%s", path);
        }
        t->feat_dim[i] = 0;
        h->feat[i][0] = '\0';
        if (o->no_features) continue;
        snprintf(base, sizeof base, "node-feat/%s/node-feat", t->ntype[i]);
        GNN_TRY(gnn__ogb_find_csv(h->feat[i], sizeof h->feat[i], o->dir, base));
        if (h->feat[i][0]) GNN_TRY(gnn__ogb_feature_width(h->feat[i], &t->feat_dim[i]));
    }
fail:
    return rc;
}

/* The split folder's files for the target type; all "" without a split. */
static int find_splits(const gnn_ogb_opts_t *o, const gnn_graph_types_t *t, char paths[][4096])
{
    int rc = 0;
    char sdir[4096];
    for (int s = 0; s < GNN_NUM_SPLITS; s++) paths[s][0] = '\0';
    GNN_TRY(gnn__ogb_split_dir(o->dir, o->split, sdir, sizeof sdir));
    if (!sdir[0]) return 0;
    GNN_CHECK(t->target >= 0, GNN_EFORMAT,
              "%s holds a split but no node type has labels (raw/node-label/TYPE/"
              "node-label.csv.gz)", sdir);
    GNN_TRY(gnn__ogb_split_files(o->dir, o->split, t->ntype[t->target], paths));
fail:
    return rc;
}

/* ---- Edges ------------------------------------------------------------------- */

/* Relation r's m edges (local ids) into src/dst/rel as global ids. */
static int read_relation(const char *path, const gnn_graph_types_t *t, int r, int64_t m,
                         gnn_vid_t *src, gnn_vid_t *dst, int32_t *rel)
{
    int rc = 0;
    gnn_text_t *tx = NULL;
    gnn_progress_t *prog = NULL;
    const int ts = t->rel_src[r], td = t->rel_dst[r];
    const gnn_vid_t ns = t->off[ts + 1] - t->off[ts], nd = t->off[td + 1] - t->off[td];
    int64_t k = 0;
    char *line, label[96];
    size_t len;
    GNN_TRY(gnn_text_open(path, &tx));
    snprintf(label, sizeof label, "reading %s edges", t->rel[r]);
    prog = gnn_progress_start(label, gnn_text_file_size(tx), "B");
    while ((rc = gnn_text_next_line(tx, &line, &len)) == 1) {
        if (len == 0) continue;
        int64_t s, d;
        if (gnn__ogb_parse_edge(line, len, &s, &d) != 0) {
            rc = gnn_text_fail(tx, "expected two integer node ids 'SRC,DST' (the file has no "
                                   "header line), found '%.60s'", line);
            goto fail;
        }
        if (s < 0 || s >= ns || d < 0 || d >= nd) {
            int bad_src = s < 0 || s >= ns;
            rc = gnn_text_fail(tx, "%s id %lld is outside [0, %lld), the nodes of type '%s' "
                                   "(num-node-dict)", bad_src ? "source" : "destination",
                               (long long)(bad_src ? s : d), (long long)(bad_src ? ns : nd),
                               t->ntype[bad_src ? ts : td]);
            goto fail;
        }
        if (k == m) {
            rc = gnn_text_fail(tx, "more edges than the %lld of num-edge-list", (long long)m);
            goto fail;
        }
        src[k] = t->off[ts] + s;
        dst[k] = t->off[td] + d;
        rel[k] = r;
        if (++k % 65536 == 0) gnn_progress_set(prog, gnn_text_file_pos(tx));
    }
    if (rc < 0) goto fail;
    rc = 0;
    gnn_progress_set(prog, gnn_text_file_pos(tx));
    GNN_CHECK(k == m, GNN_EFORMAT, "%s has %lld edges but num-edge-list says %lld", path,
              (long long)k, (long long)m);
fail:
    gnn_progress_end(prog, rc);
    gnn_text_close(tx);
    return rc;
}

/* Every relation's edges (and their reverses) into the in-edge CSR. */
static int build_csr(const gnn_ogb_opts_t *o, const hetero_t *h, gnn_csr_t *csr,
                     int32_t **etype)
{
    int rc = 0;
    const gnn_graph_types_t *t = &h->t;
    const gnn_vid_t n = t->off[t->n_ntypes];
    gnn_vid_t *src = NULL, *dst = NULL;
    int32_t *rel = NULL;
    int64_t listed = 0, dropped = 0;
    for (int r = 0; r < h->n_listed; r++) listed += h->m[r];
    const int64_t m = o->add_reverse ? 2 * listed : listed;
    src = gnn_alloc_large(((size_t)m + 1) * sizeof *src);
    dst = gnn_alloc_large(((size_t)m + 1) * sizeof *dst);
    rel = gnn_alloc_large(((size_t)m + 1) * sizeof *rel);
    GNN_CHECK(src && dst && rel, GNN_ENOMEM, "out of memory for %lld edges", (long long)m);
    int64_t at = 0;
    for (int r = 0; r < h->n_listed; r++) {
        GNN_TRY(read_relation(h->edges[r], t, r, h->m[r], src + at, dst + at, rel + at));
        at += h->m[r];
    }
    if (o->add_reverse)
        for (int64_t i = 0; i < listed; i++) {
            src[listed + i] = dst[i];
            dst[listed + i] = src[i];
            rel[listed + i] = rel[i] + h->n_listed;
        }
    GNN_TRY(gnn_typed_csr_build(n, m, &src, &dst, &rel, 0, csr, etype, &dropped));
    if (o->add_reverse) csr->flags |= GNN_CSR_SYMMETRIC;
    GNN_INFO("%s: %lld edges read, %lld stored (%lld repeats dropped)", o->dir,
             (long long)listed, (long long)csr->nnz, (long long)dropped);
fail:
    gnn_free(src);
    gnn_free(dst);
    gnn_free(rel);
    return rc;
}

/* ---- Writing ----------------------------------------------------------------- */

/* Each type's feature rows, padded to width; zero rows for featureless
 * types. */
static int write_features(const gnn_ogb_opts_t *o, const hetero_t *h, int64_t width,
                          gnn_graph_writer_t *w)
{
    int rc = 0;
    const gnn_graph_types_t *t = &h->t;
    float *zeros = gnn_calloc((size_t)FILL_BLOCK * (size_t)width, sizeof *zeros);
    GNN_CHECK(zeros, GNN_ENOMEM, "out of memory for a feature block");
    for (int i = 0; i < t->n_ntypes; i++) {
        if (t->feat_dim[i]) {
            char scope[96];
            gnn__ogb_rows_t rows = {.row0 = t->off[i], .n = t->off[i + 1] - t->off[i],
                                    .scope = type_scope(scope, sizeof scope, t, i)};
            GNN_TRY(gnn__ogb_read_features_csv(h->feat[i], &rows, t->feat_dim[i], width,
                                               o->allow_nan, w));
            continue;
        }
        for (gnn_vid_t v = t->off[i]; v < t->off[i + 1]; v += FILL_BLOCK) {
            gnn_vid_t k = t->off[i + 1] - v < FILL_BLOCK ? t->off[i + 1] - v : FILL_BLOCK;
            GNN_TRY(gnn_graph_writer_put_feat(w, v, k, zeros));
        }
    }
fail:
    gnn_free(zeros);
    return rc;
}

/* The target type's labels, -1 on the other rows. */
static int write_labels(const hetero_t *h, gnn_graph_writer_t *w)
{
    int rc = 0;
    const gnn_graph_types_t *t = &h->t;
    int64_t *none = gnn_malloc_array(FILL_BLOCK, sizeof *none);
    GNN_CHECK(none, GNN_ENOMEM, "out of memory");
    for (gnn_vid_t i = 0; i < FILL_BLOCK; i++) none[i] = -1;
    for (int i = 0; i < t->n_ntypes; i++) {
        if (i == t->target) {
            char scope[96];
            gnn__ogb_rows_t rows = {.row0 = t->off[i], .n = t->off[i + 1] - t->off[i],
                                    .scope = type_scope(scope, sizeof scope, t, i)};
            GNN_TRY(gnn__ogb_read_labels_csv(h->label, &rows, w));
            continue;
        }
        for (gnn_vid_t v = t->off[i]; v < t->off[i + 1]; v += FILL_BLOCK) {
            gnn_vid_t k = t->off[i + 1] - v < FILL_BLOCK ? t->off[i + 1] - v : FILL_BLOCK;
            GNN_TRY(gnn_graph_writer_put_labels(w, v, k, none));
        }
    }
fail:
    gnn_free(none);
    return rc;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* The names of the node_NAME columns under raw/node-feat/TYPE/, over all
 * types, sorted. */
static int column_names(const char *dir, const gnn_graph_types_t *t, char names[][64], int *n)
{
    int rc = 0;
    *n = 0;
    for (int i = 0; i < t->n_ntypes; i++) {
        char rel[128], sub[4096];
        snprintf(rel, sizeof rel, "raw/node-feat/%s", t->ntype[i]);
        GNN_TRY(gnn__ogb_path(sub, sizeof sub, dir, rel));
        DIR *d = opendir(sub);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char name[64];
            if (!gnn__ogb_column_name(e->d_name, name, sizeof name)) continue;
            int seen = 0;
            for (int k = 0; k < *n && !seen; k++) seen = !strcmp(names[k], name);
            if (seen) continue;
            if (*n == MAX_COLUMNS) {
                GNN_WARN("%s/%s: more than %d extra node columns; not kept", sub, e->d_name,
                         MAX_COLUMNS);
                continue;
            }
            snprintf(names[(*n)++], 64, "%s", name);
        }
        if (d) closedir(d);
    }
    qsort(names, (size_t)*n, sizeof names[0], cmp_name);
fail:
    return rc;
}

/* Column NAME of every type that has raw/node-feat/TYPE/node_NAME.csv.gz
 * as node_data/NAME; -1 on the rows of the types without it. */
static int write_column(const char *dir, const gnn_graph_types_t *t, const char *name,
                        gnn_graph_writer_t *w)
{
    int rc = 0;
    double *all = NULL, *v = NULL;
    int64_t k = 0;
    int integral = 1;
    const gnn_vid_t n = t->off[t->n_ntypes];
    char first[4096] = "";
    for (int i = 0; i < t->n_ntypes; i++) {
        char base[256], path[4096];
        const gnn_vid_t ni = t->off[i + 1] - t->off[i];
        int64_t ki;
        int ig;
        snprintf(base, sizeof base, "node-feat/%s/node_%s", t->ntype[i], name);
        GNN_TRY(gnn__ogb_find_csv(path, sizeof path, dir, base));
        if (!path[0]) continue;
        GNN_TRY(gnn__ogb_read_column(path, ni, &v, &ki, &ig));
        if (ni > 0) {
            if (!all) {
                k = ki;
                all = gnn_alloc_large(((size_t)n * (size_t)k + 1) * sizeof *all);
                GNN_CHECK(all, GNN_ENOMEM, "out of memory for node_data/%s", name);
                for (int64_t j = 0; j < n * k; j++) all[j] = -1;
                snprintf(first, sizeof first, "%s", path);
            }
            GNN_CHECK(ki == k, GNN_EFORMAT, "%s has %lld values a row but %s has %lld", path,
                      (long long)ki, first, (long long)k);
            memcpy(all + t->off[i] * k, v, (size_t)(ni * k) * sizeof *v);
            integral &= ig;
        }
        gnn_free(v);
        v = NULL;
    }
    if (all) {
        GNN_TRY(gnn__ogb_put_column(w, name, k, integral, all));
        GNN_INFO("kept node_%s as node_data/%s (-1 on the types without it)", name, name);
    }
fail:
    gnn_free(all);
    gnn_free(v);
    return rc;
}

/* ---- The layout -------------------------------------------------------------- */

int gnn__ogb_convert_hetero(const gnn_ogb_opts_t *o)
{
    int rc = 0;
    hetero_t *h = NULL;
    gnn_csr_t csr;
    int32_t *etype = NULL;
    gnn_graph_writer_t *w = NULL;
    char path[4096], splits[GNN_NUM_SPLITS][4096], (*cols)[64] = NULL;
    int n_cols = 0;
    memset(&csr, 0, sizeof csr);
    GNN_CHECK(!o->symmetrize, GNN_EUSAGE,
              "%s is a typed dataset (raw/num-node-dict.csv.gz): --symmetrize does not apply; "
              "use --add-reverse to store each relation's edges reversed too (as rev_REL)",
              o->dir);
    h = gnn_calloc(1, sizeof *h);
    cols = gnn_calloc(MAX_COLUMNS, sizeof *cols);
    GNN_CHECK(h && cols, GNN_ENOMEM, "out of memory");
    gnn_graph_types_t *t = &h->t;

    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "num-node-dict"));
    GNN_TRY(read_node_dict(path, t));
    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "triplet-type-list"));
    GNN_CHECK(path[0], GNN_ENOENT,
              "%s/raw/triplet-type-list.csv.gz: no such file (a typed dataset lists its "
              "relations there)", o->dir);
    GNN_TRY(read_triplets(path, o->dir, o->add_reverse, h));
    GNN_TRY(find_relation_files(o->dir, h));
    if (o->add_reverse) GNN_TRY(add_reverses(path, t));
    GNN_TRY(find_type_files(o, h));
    /* The split is read last: find its files before the edges. */
    GNN_TRY(find_splits(o, t, splits));
    GNN_TRY(column_names(o->dir, t, cols, &n_cols));
    const gnn_vid_t n = t->off[t->n_ntypes];
    GNN_INFO("%s: %lld nodes of %d types, %d relations%s, target type %s", o->dir, (long long)n,
             t->n_ntypes, h->n_listed, o->add_reverse ? " and their reverses" : "",
             t->target >= 0 ? t->ntype[t->target] : "(none)");

    GNN_TRY(build_csr(o, h, &csr, &etype));
    const int64_t width = gnn_graph_types_max_feat(t);
    gnn_graph_header_t hd = {
        .num_nodes = n,
        .num_edges = csr.nnz,
        .directed = !o->add_reverse,
        .csr_flags = csr.flags,
        .feat_dim = width,
        .has_labels = t->target >= 0,
        .types = t,
    };
    GNN_TRY(gnn_graph_writer_open(o->out.path, &hd, o->out.force, &w));
    GNN_TRY(gnn_graph_writer_put_indptr(w, 0, n + 1, csr.indptr));
    GNN_TRY(gnn_graph_writer_put_indices(w, 0, csr.nnz, csr.indices, NULL));
    GNN_TRY(gnn_graph_writer_put_etypes(w, 0, csr.nnz, etype));
    const gnn_eid_t nnz = csr.nnz;
    gnn_csr_free(&csr);
    gnn_free(etype);
    etype = NULL;
    if (width) GNN_TRY(write_features(o, h, width, w));
    if (t->target >= 0) GNN_TRY(write_labels(h, w));
    for (int c = 0; c < n_cols; c++) GNN_TRY(write_column(o->dir, t, cols[c], w));
    if (splits[0][0])
        GNN_TRY(gnn__ogb_write_splits(o->dir, o->split, t->ntype[t->target], t->off[t->target],
                                      t->off[t->target + 1] - t->off[t->target], w));
    else
        GNN_WARN("%s: no split/ folder: the graph file has no train/valid/test split", o->dir);
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    if (rc == 0)
        GNN_INFO("wrote %s: %lld nodes of %d types, %lld stored edges of %d relations, "
                 "features up to %lld wide", o->out.path, (long long)n, t->n_ntypes,
                 (long long)nnz, t->n_rels, (long long)width);
fail:
    gnn_graph_writer_abort(w);
    gnn_csr_free(&csr);
    gnn_free(etype);
    gnn_free(h);
    gnn_free(cols);
    return rc;
}
