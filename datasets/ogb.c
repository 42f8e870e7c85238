/*
 * OGB node-property datasets into the graph file (ogb.h): the csv layout
 * here, the npz layout in ogb_npz.c, the typed csv layout in ogb_hetero.c;
 * the line parsers, per-node file readers and split steps here are shared
 * by all three (ogb_internal.h).
 *
 * Order of work: the split files are found first (they are read last, and
 * a missing one should not cost the whole conversion), then counts, then
 * edges into the builder (the bulk of the time), then the writer is opened
 * (its header needs the feature width, read from the first feature row),
 * the CSR is written, features and labels are streamed in row blocks, extra
 * node columns and splits follow, and the file is committed. Any failure
 * aborts the writer: no output file.
 */
#include "datasets/ogb.h"

#include "datasets/builder.h"
#include "datasets/ogb_internal.h"
#include "datasets/textio.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define EDGE_BATCH 65536
#define LABEL_BLOCK ((gnn_vid_t)1 << 20)

/* ---- Line parsers ----------------------------------------------------------- */

int gnn__ogb_parse_edge(const char *line, size_t len, int64_t *src, int64_t *dst)
{
    const char *p = line, *end = line + len;
    int rc = gnn_parse_i64(&p, end, src);
    if (rc) return rc;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p == end || *p != ',') return GNN_EFORMAT;
    p++;
    rc = gnn_parse_i64(&p, end, dst);
    if (rc) return rc;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p == end ? 0 : GNN_EFORMAT;
}

int gnn__ogb_parse_floats(const char *line, size_t len, float *v, int64_t cap, int64_t *n)
{
    const char *p = line, *end = line + len;
    int64_t k = 0;
    *n = 0;
    for (;;) {
        *n = k;
        if (k == cap) return GNN_ERANGE;
        int rc = gnn_parse_f32(&p, end, &v[k]);
        if (rc) return rc;
        k++;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p == end) break;
        if (*p != ',') return GNN_EFORMAT;
        p++;
    }
    *n = k;
    return 0;
}

/* The k-th comma-separated field of a line, without surrounding blanks. */
static const char *field(const char *line, size_t len, int64_t k, size_t *flen)
{
    const char *p = line, *end = line + len;
    for (; k > 0 && p < end; p++)
        if (*p == ',') k--;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    const char *q = p;
    while (q < end && *q != ',') q++;
    while (q > p && (q[-1] == ' ' || q[-1] == '\t')) q--;
    *flen = (size_t)(q - p);
    return p;
}

/* ---- Paths ------------------------------------------------------------------ */

int gnn__ogb_path(char *buf, size_t len, const char *dir, const char *rel)
{
    if ((size_t)snprintf(buf, len, "%s/%s", dir, rel) >= len)
        return GNN_FAIL(GNN_EINVAL, "%s/%s: path too long", dir, rel);
    return 0;
}

int gnn__ogb_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int gnn__ogb_probe(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        return GNN_FAIL(GNN_EIO, "%s: cannot be looked up: %s", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return 1;
    int link = S_ISLNK(st.st_mode);
    if (link && stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 1;
    if (stat(path, &st) != 0)
        return GNN_FAIL(GNN_EIO, "%s: %s: %s", path,
                        link ? "a symbolic link that cannot be followed" : "cannot be read",
                        strerror(errno));
    return GNN_FAIL(GNN_EINVAL, "%s: not a file", path);
}

int gnn__ogb_find_csv(char *buf, size_t len, const char *dir, const char *base)
{
    int rc = 0;
    char rel[1024];
    if ((size_t)snprintf(rel, sizeof rel, "raw/%s.csv.gz", base) >= sizeof rel)
        return GNN_FAIL(GNN_EINVAL, "%s/raw/%s.csv.gz: path too long", dir, base);
    GNN_TRY(gnn__ogb_path(buf, len, dir, rel));
    if ((rc = gnn__ogb_probe(buf)) != 0) return rc < 0 ? rc : 0;
    snprintf(rel, sizeof rel, "raw/%s.csv", base);
    GNN_TRY(gnn__ogb_path(buf, len, dir, rel));
    if ((rc = gnn__ogb_probe(buf)) <= 0) buf[0] = '\0';
fail:
    return rc < 0 ? rc : 0;
}

int gnn__ogb_read_count(const char *path, const char *what, int64_t *v)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    char *line;
    size_t len;
    int64_t n = 0;
    GNN_TRY(gnn_text_open(path, &t));
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        const char *p = line;
        if (n > 0) {
            rc = gnn_text_fail(t, "several graphs listed; node-property datasets have one");
            goto fail;
        }
        if (gnn_parse_i64(&p, line + len, v) != 0 || p != line + len || *v < 0) {
            rc = gnn_text_fail(t, "expected one non-negative count, found '%.40s'", line);
            goto fail;
        }
        if (*v >= GNN_GRAPH_MAX_COUNT) {
            rc = gnn_text_fail(t, "%s %lld is beyond the limit 2^62", what, (long long)*v);
            goto fail;
        }
        n++;
    }
    if (rc < 0) goto fail;
    GNN_CHECK(n == 1, GNN_EFORMAT, "%s: empty (expected one count)", path);
fail:
    gnn_text_close(t);
    return rc;
}

/* ---- Edges ------------------------------------------------------------------ */

static int read_edges_csv(const char *path, gnn_vid_t n, gnn_eid_t m, gnn_builder_t *b)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_progress_t *prog = NULL;
    gnn_vid_t *src = gnn_malloc_array(EDGE_BATCH, sizeof *src);
    gnn_vid_t *dst = gnn_malloc_array(EDGE_BATCH, sizeof *dst);
    GNN_CHECK(src && dst, GNN_ENOMEM, "out of memory");
    GNN_TRY(gnn_text_open(path, &t));
    prog = gnn_progress_start("reading edges", gnn_text_file_size(t), "B");
    gnn_eid_t count = 0;
    int k = 0;
    char *line;
    size_t len;
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        int64_t s, d;
        if (gnn__ogb_parse_edge(line, len, &s, &d) != 0) {
            rc = gnn_text_fail(t, "expected two integer node ids 'SRC,DST' (the file has no "
                                  "header line), found '%.60s'", line);
            goto fail;
        }
        if (s < 0 || s >= n || d < 0 || d >= n) {
            rc = gnn_text_fail(t, "node id %lld is outside [0, %lld) (num-node-list)",
                               (long long)(s < 0 || s >= n ? s : d), (long long)n);
            goto fail;
        }
        src[k] = s;
        dst[k] = d;
        if (++k == EDGE_BATCH) {
            GNN_TRY(gnn_builder_add(b, src, dst, NULL, k));
            k = 0;
            gnn_progress_set(prog, gnn_text_file_pos(t));
        }
        count++;
    }
    if (rc < 0) goto fail;
    GNN_TRY(gnn_builder_add(b, src, dst, NULL, k));
    gnn_progress_set(prog, gnn_text_file_pos(t));
    GNN_CHECK(count == m, GNN_EFORMAT, "%s has %lld edges but num-edge-list says %lld", path,
              (long long)count, (long long)m);
    GNN_INFO("read %lld edges (%.0f MB of text) from %s", (long long)count,
             (double)gnn_text_bytes(t) / 1e6, path);
fail:
    gnn_progress_end(prog, rc);
    gnn_text_close(t);
    gnn_free(src);
    gnn_free(dst);
    return rc;
}

/* ---- Features --------------------------------------------------------------- */

int gnn__ogb_feature_width(const char *path, int64_t *f)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    char *line;
    size_t len;
    *f = 0;
    GNN_TRY(gnn_text_open(path, &t));
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        *f = 1;
        for (size_t i = 0; i < len; i++) *f += line[i] == ',';
        break;
    }
    if (rc < 0) goto fail;
    rc = 0;
    GNN_CHECK(*f > 0, GNN_EFORMAT, "%s: no feature rows", path);
fail:
    gnn_text_close(t);
    return rc;
}

typedef struct {
    int64_t count;       /* NaN or infinite values */
    int64_t first_line;
} nonfinite_t;

int gnn__ogb_read_features_csv(const char *path, const gnn__ogb_rows_t *rows, int64_t f,
                               int64_t width, int allow_nan, gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_progress_t *prog = NULL;
    const gnn_vid_t n = rows->n;
    gnn_vid_t rows_per_block = (gnn_vid_t)((4u << 20) / (4 * width)) + 1;
    float *block = gnn_malloc_array((size_t)(rows_per_block * width), sizeof *block);
    GNN_CHECK(block, GNN_ENOMEM, "out of memory for a feature block");
    GNN_TRY(gnn_text_open(path, &t));
    prog = gnn_progress_start("reading features", gnn_text_file_size(t), "B");
    nonfinite_t bad = {0, 0};
    gnn_vid_t row = 0, in_block = 0;
    char *line;
    size_t len;
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        GNN_CHECK(row < n, GNN_EFORMAT, "%s:%lld: more feature rows than the %lld nodes%s", path,
                  (long long)gnn_text_line(t), (long long)n, rows->scope);
        float *v = block + in_block * width;
        int64_t got;
        int prc = gnn__ogb_parse_floats(line, len, v, f, &got);
        if (prc == GNN_ERANGE && got == f) {
            rc = gnn_text_fail(t, "more than %lld values (the first row has %lld)",
                               (long long)f, (long long)f);
            goto fail;
        }
        if (prc == GNN_ERANGE) {
            size_t flen;
            const char *fld = field(line, len, got, &flen);
            rc = gnn_text_fail(t, "value '%.*s' is outside the float32 range",
                               (int)(flen < 40 ? flen : 40), fld);
            goto fail;
        }
        if (prc) {
            rc = gnn_text_fail(t, "malformed feature row (expected %lld comma-separated numbers)",
                               (long long)f);
            goto fail;
        }
        if (got != f) {
            rc = gnn_text_fail(t, "expected %lld values, found %lld", (long long)f, (long long)got);
            goto fail;
        }
        for (int64_t j = 0; j < f; j++)
            if (!isfinite(v[j])) {
                if (!bad.count) bad.first_line = gnn_text_line(t);
                bad.count++;
            }
        for (int64_t j = f; j < width; j++) v[j] = 0.0f;
        row++;
        if (++in_block == rows_per_block) {
            GNN_TRY(gnn_graph_writer_put_feat(w, rows->row0 + row - in_block, in_block, block));
            in_block = 0;
            gnn_progress_set(prog, gnn_text_file_pos(t));
        }
    }
    if (rc < 0) goto fail;
    GNN_TRY(gnn_graph_writer_put_feat(w, rows->row0 + row - in_block, in_block, block));
    gnn_progress_set(prog, gnn_text_file_pos(t));
    GNN_CHECK(row == n, GNN_EFORMAT, "%s has %lld rows but the graph has %lld nodes%s", path,
              (long long)row, (long long)n, rows->scope);
    if (bad.count) {
        GNN_CHECK(allow_nan, GNN_EFORMAT,
                  "%s: %lld NaN or infinite values (first on line %lld); use --allow-nan to keep "
                  "them", path, (long long)bad.count, (long long)bad.first_line);
        GNN_WARN("%s: kept %lld NaN or infinite values", path, (long long)bad.count);
    }
fail:
    gnn_progress_end(prog, rc);
    gnn_text_close(t);
    gnn_free(block);
    return rc;
}

/* ---- Labels and extra node columns ----------------------------------------- */

int gnn__ogb_read_labels_csv(const char *path, const gnn__ogb_rows_t *rows,
                             gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    const gnn_vid_t n = rows->n;
    int64_t *block = gnn_malloc_array(LABEL_BLOCK, sizeof *block);
    GNN_CHECK(block, GNN_ENOMEM, "out of memory");
    GNN_TRY(gnn_text_open(path, &t));
    gnn_vid_t row = 0, k = 0;
    char *line;
    size_t len;
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (row == n && len == 0) continue;
        GNN_CHECK(row < n, GNN_EFORMAT, "%s:%lld: more labels than the %lld nodes%s", path,
                  (long long)gnn_text_line(t), (long long)n, rows->scope);
        const char *p = line, *end = line + len;
        double x;
        if (len == 0) {
            x = -1;
        } else if (gnn_parse_f64(&p, end, &x) != 0 || p != end) {
            rc = gnn_text_fail(t, "expected one class id, found '%.40s'%s", line,
                               memchr(line, ',', len) ? " (multi-label datasets are not supported)"
                                                      : "");
            goto fail;
        }
        if (isnan(x)) x = -1;
        if (x != floor(x) || x > 1e9 || x < -1) {
            rc = gnn_text_fail(t, "class id %g is not a non-negative integer (empty, nan or -1 "
                                  "mark an unlabelled node)", x);
            goto fail;
        }
        block[k++] = (int64_t)x;
        row++;
        if (k == LABEL_BLOCK) {
            GNN_TRY(gnn_graph_writer_put_labels(w, rows->row0 + row - k, k, block));
            k = 0;
        }
    }
    if (rc < 0) goto fail;
    GNN_TRY(gnn_graph_writer_put_labels(w, rows->row0 + row - k, k, block));
    GNN_CHECK(row == n, GNN_EFORMAT, "%s has %lld labels but the graph has %lld nodes%s", path,
              (long long)row, (long long)n, rows->scope);
fail:
    gnn_text_close(t);
    gnn_free(block);
    return rc;
}

int gnn__ogb_read_column(const char *path, gnn_vid_t n, double **out, int64_t *ncols,
                         int *integral)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    double *v = NULL;
    int64_t k = 0, cap = 0, rows = 0;
    char *line;
    size_t len;
    *out = NULL;
    *ncols = 0;
    *integral = 1;
    GNN_TRY(gnn_text_open(path, &t));
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        const char *p = line, *end = line + len;
        int64_t cols = 0;
        for (;;) {
            if (rows * (k ? k : 1) + cols >= cap) {
                int64_t ncap = cap ? cap * 2 : 4096;
                double *nv = gnn_realloc_array(v, (size_t)ncap, sizeof *nv);
                GNN_CHECK(nv, GNN_ENOMEM, "out of memory reading %s", path);
                v = nv;
                cap = ncap;
            }
            double x;
            if (gnn_parse_f64(&p, end, &x) != 0) {
                rc = gnn_text_fail(t, "malformed number");
                goto fail;
            }
            if (x != floor(x) || fabs(x) > 9e15) *integral = 0;
            v[rows * (k ? k : 1) + cols++] = x;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p == end) break;
            if (*p != ',') {
                rc = gnn_text_fail(t, "malformed line");
                goto fail;
            }
            p++;
            if (k && cols == k) {
                rc = gnn_text_fail(t, "more than %lld values", (long long)k);
                goto fail;
            }
        }
        if (!k) k = cols;
        if (cols != k) {
            rc = gnn_text_fail(t, "expected %lld values, found %lld", (long long)k, (long long)cols);
            goto fail;
        }
        GNN_CHECK(++rows <= n, GNN_EFORMAT, "%s: more rows than the %lld nodes", path, (long long)n);
    }
    if (rc < 0) goto fail;
    rc = 0;
    GNN_CHECK(rows == n, GNN_EFORMAT, "%s has %lld rows but the graph has %lld nodes", path,
              (long long)rows, (long long)n);
    *out = v;
    *ncols = k;
    v = NULL;
fail:
    gnn_text_close(t);
    gnn_free(v);
    return rc;
}

int gnn__ogb_put_column(gnn_graph_writer_t *w, const char *name, int64_t ncols, int integral,
                        const double *v)
{
    int rc = 0;
    int64_t count = gnn_graph_writer_header(w)->num_nodes * ncols;
    void *out = gnn_malloc_array((size_t)count + 1, integral ? sizeof(int64_t) : sizeof(float));
    GNN_CHECK(out, GNN_ENOMEM, "out of memory for node_data/%s", name);
    for (int64_t i = 0; i < count; i++) {
        if (integral)
            ((int64_t *)out)[i] = (int64_t)v[i];
        else
            ((float *)out)[i] = (float)v[i];
    }
    GNN_TRY(gnn_graph_writer_put_node_data(w, name, integral, ncols, out));
fail:
    gnn_free(out);
    return rc;
}

int gnn__ogb_column_name(const char *file, char *name, size_t len)
{
    size_t l = strlen(file);
    if (strncmp(file, "node_", 5) != 0) return 0;
    size_t stem = l >= 7 && !strcmp(file + l - 7, ".csv.gz") ? l - 7
                  : l >= 4 && !strcmp(file + l - 4, ".csv") ? l - 4 : 0;
    if (stem <= 5) return 0;
    snprintf(name, len, "%.*s", (int)(stem - 5), file + 5);
    return 1;
}

/* raw/node_NAME.csv(.gz): n rows of k numbers; stored as node_data/NAME,
 * int64 when every value is integral, float32 otherwise. */
static int read_node_column(const char *path, const char *name, gnn_vid_t n,
                            gnn_graph_writer_t *w)
{
    int rc = 0;
    double *v = NULL;
    int64_t k;
    int integral;
    GNN_TRY(gnn__ogb_read_column(path, n, &v, &k, &integral));
    if (n > 0) GNN_TRY(gnn__ogb_put_column(w, name, k, integral, v)); /* else nothing to store */
fail:
    gnn_free(v);
    return rc;
}

static int read_node_columns(const char *dir, gnn_vid_t n, gnn_graph_writer_t *w)
{
    int rc = 0;
    char raw[4096], path[4096];
    GNN_TRY(gnn__ogb_path(raw, sizeof raw, dir, "raw"));
    DIR *d = opendir(raw);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char name[64];
        if (!gnn__ogb_column_name(e->d_name, name, sizeof name)) continue;
        if (snprintf(path, sizeof path, "%s/%s", raw, e->d_name) >= (int)sizeof path) continue;
        rc = read_node_column(path, name, n, w);
        if (rc < 0) break;
        GNN_INFO("kept %s as node_data/%s", e->d_name, name);
    }
    if (d) closedir(d);
fail:
    return rc;
}

/* ---- Splits ----------------------------------------------------------------- */

int gnn__ogb_read_index_csv(const char *path, gnn_vid_t n, int64_t **out, int64_t *count)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    int64_t *v = NULL, cap = 0, k = 0;
    unsigned char *seen = NULL; /* one bit per node: a node listed twice is refused */
    char *line;
    size_t len;
    *out = NULL;
    *count = 0;
    seen = gnn_calloc((size_t)n / 8 + 1, 1);
    GNN_CHECK(seen, GNN_ENOMEM, "out of memory reading %s", path);
    GNN_TRY(gnn_text_open(path, &t));
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        if (len == 0) continue;
        const char *p = line;
        int64_t x;
        if (gnn_parse_i64(&p, line + len, &x) != 0 || p != line + len) {
            rc = gnn_text_fail(t, "expected one node id, found '%.40s'", line);
            goto fail;
        }
        if (x < 0 || x >= n) {
            rc = gnn_text_fail(t, "node id %lld is outside [0, %lld)", (long long)x, (long long)n);
            goto fail;
        }
        if (seen[x >> 3] & (1u << (x & 7))) {
            rc = gnn_text_fail(t, "node %lld is listed twice", (long long)x);
            goto fail;
        }
        seen[x >> 3] |= (unsigned char)(1u << (x & 7));
        if (k == cap) {
            cap = cap ? cap * 2 : 4096;
            int64_t *nv = gnn_realloc_array(v, (size_t)cap, sizeof *nv);
            GNN_CHECK(nv, GNN_ENOMEM, "out of memory reading %s", path);
            v = nv;
        }
        v[k++] = x;
    }
    if (rc < 0) goto fail;
    *out = v;
    *count = k;
    v = NULL;
    rc = 0;
fail:
    gnn_text_close(t);
    gnn_free(v);
    gnn_free(seen);
    return rc;
}

/* The names of the folders under split, ", "-separated, into names. */
static void split_names(const char *split, char *names, size_t len)
{
    names[0] = '\0';
    DIR *d = opendir(split);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", split, e->d_name) >= (int)sizeof p) continue;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        size_t used = strlen(names);
        if (snprintf(names + used, len - used, "%s%s", used ? ", " : "", e->d_name) < 0)
            names[used] = '\0';
    }
    if (d) closedir(d);
}

int gnn__ogb_split_dir(const char *dir, const char *want, char *buf, size_t len)
{
    int rc = 0;
    char split[4096];
    buf[0] = '\0';
    GNN_TRY(gnn__ogb_path(split, sizeof split, dir, "split"));
    if (want) {
        GNN_TRY(gnn__ogb_path(buf, len, split, want));
        struct stat st;
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
            char names[512];
            split_names(split, names, sizeof names);
            rc = GNN_FAIL(GNN_ENOENT, "%s: no such split folder (%s%s)", buf,
                          names[0] ? "found: " : "none found", names);
            buf[0] = '\0';
        }
        return rc;
    }
    DIR *d = opendir(split);
    if (!d) return 0; /* no splits */
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", split, e->d_name) >= (int)sizeof p) continue;
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (!found && snprintf(buf, len, "%s", p) >= (int)len) buf[0] = '\0';
        found++;
    }
    closedir(d);
    if (found > 1) {
        char names[512];
        split_names(split, names, sizeof names);
        buf[0] = '\0';
        rc = GNN_FAIL(GNN_EUSAGE, "%s holds several splits (%s): choose one with --split", split,
                      names);
    }
fail:
    return rc;
}

int gnn__ogb_split_files(const char *dir, const char *want, const char *sub, char paths[][4096])
{
    int rc = 0;
    char sdir[4096];
    for (int s = 0; s < GNN_NUM_SPLITS; s++) paths[s][0] = '\0';
    GNN_TRY(gnn__ogb_split_dir(dir, want, sdir, sizeof sdir));
    if (!sdir[0]) return 0;
    if (sub) {
        size_t used = strlen(sdir);
        GNN_CHECK((size_t)snprintf(sdir + used, sizeof sdir - used, "/%s", sub) <
                      sizeof sdir - used,
                  GNN_EINVAL, "%s/%s: path too long", sdir, sub);
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        char rel[64];
        snprintf(rel, sizeof rel, "%s.csv.gz", gnn_split_names[s]);
        GNN_TRY(gnn__ogb_path(paths[s], sizeof paths[s], sdir, rel));
        if (!gnn__ogb_exists(paths[s])) {
            snprintf(rel, sizeof rel, "%s.csv", gnn_split_names[s]);
            GNN_TRY(gnn__ogb_path(paths[s], sizeof paths[s], sdir, rel));
        }
        GNN_CHECK(gnn__ogb_exists(paths[s]), GNN_ENOENT, "%s/%s.csv.gz: no such file", sdir,
                  gnn_split_names[s]);
    }
fail:
    if (rc < 0)
        for (int s = 0; s < GNN_NUM_SPLITS; s++) paths[s][0] = '\0';
    return rc;
}

int gnn__ogb_write_splits(const char *dir, const char *want, const char *sub, gnn_vid_t off,
                          gnn_vid_t n, gnn_graph_writer_t *w)
{
    int rc = 0;
    char paths[GNN_NUM_SPLITS][4096];
    int64_t *idx = NULL;
    GNN_TRY(gnn__ogb_split_files(dir, want, sub, paths));
    if (!paths[0][0]) {
        GNN_WARN("%s: no split/ folder: the graph file has no train/valid/test split", dir);
        return 0;
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        int64_t k;
        GNN_TRY(gnn__ogb_read_index_csv(paths[s], n, &idx, &k));
        for (int64_t i = 0; i < k; i++) idx[i] += off;
        GNN_TRY(gnn_graph_writer_put_split(w, (gnn_split_t)s, idx, k));
        gnn_free(idx);
        idx = NULL;
    }
fail:
    gnn_free(idx);
    return rc;
}

/* ---- Shared by both layouts -------------------------------------------------- */

int gnn__ogb_builder_open(const gnn_ogb_opts_t *o, gnn_vid_t n, gnn_builder_t **b)
{
    gnn_builder_opts_t bo = {
        .num_nodes = n,
        .options = o->symmetrize ? GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE : GNN_BUILD_SORT,
        .mem_budget = o->out.mem_budget,
        .tmpdir = o->out.tmpdir,
        .threaded = 1,
    };
    return gnn_builder_open(&bo, b);
}

/* ---- The csv layout --------------------------------------------------------- */

static int convert_csv(const gnn_ogb_opts_t *o)
{
    int rc = 0;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;
    char path[4096], feat[4096], label[4096];
    int64_t n, m;

    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "num-node-list"));
    GNN_CHECK(path[0], GNN_ENOENT, "%s/raw/num-node-list.csv.gz: no such file", o->dir);
    GNN_TRY(gnn__ogb_read_count(path, "node count", &n));
    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "num-edge-list"));
    GNN_CHECK(path[0], GNN_ENOENT, "%s/raw/num-edge-list.csv.gz: no such file", o->dir);
    GNN_TRY(gnn__ogb_read_count(path, "edge count", &m));
    GNN_INFO("%s: %lld nodes, %lld edges", o->dir, (long long)n, (long long)m);

    GNN_TRY(gnn__ogb_builder_open(o, n, &b));
    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "edge"));
    GNN_CHECK(path[0], GNN_ENOENT, "%s/raw/edge.csv.gz: no such file", o->dir);
    GNN_TRY(read_edges_csv(path, n, m, b));

    int64_t f = 0;
    GNN_TRY(gnn__ogb_find_csv(feat, sizeof feat, o->dir, "node-feat"));
    if (feat[0] && !o->no_features) GNN_TRY(gnn__ogb_feature_width(feat, &f));
    GNN_TRY(gnn__ogb_find_csv(label, sizeof label, o->dir, "node-label"));

    gnn_graph_header_t h = {
        .num_nodes = n,
        .num_edges = -1,
        .directed = !o->symmetrize,
        .csr_flags = gnn_builder_csr_flags(b),
        .feat_dim = f,
        .has_labels = label[0] != '\0',
    };
    GNN_TRY(gnn_graph_writer_open(o->out.path, &h, o->out.force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    gnn__ogb_rows_t all = {.row0 = 0, .n = n, .scope = ""};
    if (f) GNN_TRY(gnn__ogb_read_features_csv(feat, &all, f, f, o->allow_nan, w));
    if (label[0]) GNN_TRY(gnn__ogb_read_labels_csv(label, &all, w));
    GNN_TRY(read_node_columns(o->dir, n, w));
    GNN_TRY(gnn__ogb_write_splits(o->dir, o->split, NULL, 0, n, w));
    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    if (rc == 0)
        GNN_INFO("wrote %s: %lld nodes, %lld stored edges, %lld features (CSR build peak %.1f MB, "
                 "%d pass%s)",
                 o->out.path, (long long)n, (long long)st.num_edges, (long long)f,
                 (double)st.peak_bytes / 1e6, st.passes, st.passes == 1 ? "" : "es");
fail:
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    return rc;
}

int gnn_ogb_convert(const gnn_ogb_opts_t *o)
{
    int rc = 0;
    char path[4096], splits[GNN_NUM_SPLITS][4096];
    struct stat st;
    GNN_CHECK(o->dir && stat(o->dir, &st) == 0 && S_ISDIR(st.st_mode), GNN_ENOENT,
              "%s: no such directory", o->dir ? o->dir : "(none)");
    GNN_TRY(gnn_output_check(&o->out));
    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "num-node-dict"));
    if (path[0]) return gnn__ogb_convert_hetero(o);
    GNN_CHECK(!o->add_reverse, GNN_EUSAGE,
              "%s: --add-reverse applies to typed datasets (raw/num-node-dict.csv.gz); use "
              "--symmetrize to store every edge both ways", o->dir);
    GNN_TRY(gnn__ogb_find_csv(path, sizeof path, o->dir, "edge"));
    int csv = path[0] != '\0';
    GNN_TRY(gnn__ogb_path(path, sizeof path, o->dir, "raw/data.npz"));
    GNN_CHECK(csv || gnn__ogb_exists(path), GNN_ENOENT,
              "%s: none of raw/edge.csv.gz, raw/data.npz, raw/num-node-dict.csv.gz found (not an "
              "OGB node-property dataset folder)", o->dir);
    /* The split is read last: find its files before the edges. */
    GNN_TRY(gnn__ogb_split_files(o->dir, o->split, NULL, splits));
    return csv ? convert_csv(o) : gnn__ogb_convert_npz(o);
fail:
    return rc;
}
