/*
 * gnn-dataset ogb on the typed csv layout (ogbn-mag), run as a user runs
 * it. The test writes a small ogbn-mag-like folder from a seeded random
 * stream (4 node types of a few hundred nodes, mag's 4 relations, features
 * and a year column for paper, labels and a split of paper), converts it
 * with and without --add-reverse, and reads the file back: types, each
 * relation's set of (src, dst) pairs, features with their zero padding,
 * labels, the year column and the split, all exactly as written. Then each
 * kind of bad input is refused with one error line naming the file (and
 * line) and no output file. argv[1] is the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/testutil.h"

#include <string.h>
#include <zlib.h>

#define T 4 /* node types */
#define R 4 /* listed relations */
#define F 8 /* paper's feature width */
#define CLASSES 5

static char *g_bin;
static unsigned g_seed;
static uint64_t g_rng;

static const char *const type_name[T] = {"author", "field_of_study", "institution", "paper"};
static const int64_t type_count[T] = {300, 200, 150, 400};
static const int64_t type_off[T + 1] = {0, 300, 500, 650, 1050};
#define N 1050
#define PAPER 3
static const char *const rel_name[R] = {"affiliated_with", "writes", "cites", "has_topic"};
static const int rel_src[R] = {0, 0, 3, 3}, rel_dst[R] = {2, 3, 3, 1};
static const int64_t rel_lines[R] = {350, 900, 1200, 800};

/* What the fixture holds (local ids, as written). */
static struct {
    int64_t *src[R], *dst[R];
    float feat[400 * F];
    int64_t label[400], year[400];
    int64_t split[3][400], split_size[3];
} g_fx;

static uint64_t next_u64(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int64_t below(int64_t m) { return (int64_t)(next_u64() % (uint64_t)m); }

/* ---- Writing the fixture ---------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
} text_t;

__attribute__((format(printf, 2, 3))) static void put(text_t *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

static void write_gz(const char *path, const char *text)
{
    gzFile z = gzopen(path, "wb");
    assert_non_null(z);
    assert_int_equal(gzwrite(z, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(z), Z_OK);
}

/* dir/rel with text, gzip'd when rel ends in .gz, its folders made. */
static void set_file(const char *dir, const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    assert_int_equal(tu_sh("mkdir -p \"$(dirname '%s')\"", p), 0);
    size_t l = strlen(p);
    if (l > 3 && !strcmp(p + l - 3, ".gz")) {
        write_gz(p, text);
    } else {
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
}

static void remove_path(const char *dir, const char *rel)
{
    assert_int_equal(tu_sh("rm -rf '%s/%s'", dir, rel), 0);
}

static void set_text(const char *dir, const char *rel, text_t *b)
{
    set_file(dir, rel, b->s ? b->s : "");
    free(b->s);
    *b = (text_t){0};
}

/* The fixture under the temp dir (the same data each call, drawn from the
 * seed); its path. */
static const char *make_mag(const char *name)
{
    static char dirs[8][640];
    static int next;
    char *d = dirs[next++ % 8];
    snprintf(d, sizeof dirs[0], "%s", tu_path(name));
    remove_path(d, "");
    g_rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)g_seed << 17); /* never 0 */
    text_t b = {0};

    put(&b, "%s,%s,%s,%s\n", type_name[0], type_name[1], type_name[2], type_name[3]);
    put(&b, "%lld,%lld,%lld,%lld\n", (long long)type_count[0], (long long)type_count[1],
        (long long)type_count[2], (long long)type_count[3]);
    set_text(d, "raw/num-node-dict.csv.gz", &b);
    for (int r = 0; r < R; r++) put(&b, "%s,%s,%s\n", type_name[rel_src[r]], rel_name[r],
                                    type_name[rel_dst[r]]);
    set_text(d, "raw/triplet-type-list.csv.gz", &b);

    /* Edges: uniform pairs, a repeated line and, for cites, a self loop. */
    for (int r = 0; r < R; r++) {
        int64_t m = rel_lines[r];
        g_fx.src[r] = realloc(g_fx.src[r], sizeof(int64_t) * (size_t)m);
        g_fx.dst[r] = realloc(g_fx.dst[r], sizeof(int64_t) * (size_t)m);
        for (int64_t i = 0; i < m; i++) {
            g_fx.src[r][i] = below(type_count[rel_src[r]]);
            g_fx.dst[r][i] = below(type_count[rel_dst[r]]);
            if (i == 7) { /* the edge of line 3 again */
                g_fx.src[r][i] = g_fx.src[r][2];
                g_fx.dst[r][i] = g_fx.dst[r][2];
            }
            if (r == 2 && i == 11) g_fx.dst[r][i] = g_fx.src[r][i];
            put(&b, "%lld,%lld\n", (long long)g_fx.src[r][i], (long long)g_fx.dst[r][i]);
        }
        char rel[256];
        snprintf(rel, sizeof rel, "raw/relations/%s___%s___%s/edge.csv.gz",
                 type_name[rel_src[r]], rel_name[r], type_name[rel_dst[r]]);
        set_text(d, rel, &b);
        put(&b, "%lld\n", (long long)m);
        snprintf(rel, sizeof rel, "raw/relations/%s___%s___%s/num-edge-list.csv.gz",
                 type_name[rel_src[r]], rel_name[r], type_name[rel_dst[r]]);
        set_text(d, rel, &b);
        put(&b, "%d\n", r); /* OGB's edge_reltype: ignored */
        snprintf(rel, sizeof rel, "raw/relations/%s___%s___%s/edge_reltype.csv.gz",
                 type_name[rel_src[r]], rel_name[r], type_name[rel_dst[r]]);
        set_text(d, rel, &b);
    }

    /* Paper: features (multiples of 1/16, exact in text), year, label. */
    for (int64_t i = 0; i < 400; i++) {
        for (int j = 0; j < F; j++) {
            g_fx.feat[i * F + j] = (float)(below(2001) - 1000) / 16.0f;
            put(&b, "%s%g", j ? "," : "", (double)g_fx.feat[i * F + j]);
        }
        put(&b, "\n");
    }
    set_text(d, "raw/node-feat/paper/node-feat.csv.gz", &b);
    for (int64_t i = 0; i < 400; i++) {
        g_fx.year[i] = 2000 + below(20);
        put(&b, "%lld\n", (long long)g_fx.year[i]);
    }
    set_text(d, "raw/node-feat/paper/node_year.csv.gz", &b);
    for (int64_t i = 0; i < 400; i++) {
        g_fx.label[i] = i % 37 == 5 ? -1 : below(CLASSES);
        if (g_fx.label[i] < 0)
            put(&b, "\n");
        else
            put(&b, "%lld\n", (long long)g_fx.label[i]);
    }
    set_text(d, "raw/node-label/paper/node-label.csv.gz", &b);

    /* Split: a shuffle of the papers, 240 / 80 / 80. */
    int64_t perm[400];
    for (int64_t i = 0; i < 400; i++) perm[i] = i;
    for (int64_t i = 399; i > 0; i--) {
        int64_t k = below(i + 1), x = perm[i];
        perm[i] = perm[k];
        perm[k] = x;
    }
    const int64_t size[3] = {240, 80, 80};
    const char *file[3] = {"train", "valid", "test"};
    for (int s = 0, at = 0; s < 3; s++) {
        g_fx.split_size[s] = size[s];
        for (int64_t i = 0; i < size[s]; i++, at++) {
            g_fx.split[s][i] = perm[at];
            put(&b, "%lld\n", (long long)perm[at]);
        }
        char rel[64];
        snprintf(rel, sizeof rel, "split/time/paper/%s.csv.gz", file[s]);
        set_text(d, rel, &b);
    }
    return d;
}

static tu_run_t convert(const char *dir, const char *out, const char *extra)
{
    char *argv[] = {g_bin, "ogb", (char *)dir, "-o", (char *)out, "--force", "--quiet",
                    (char *)extra, NULL};
    return tu_run(argv);
}

/* ---- Checking the output ------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorted, distinct; returns the count. */
static int64_t sort_unique(int64_t *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
    return k;
}

/* The stored pairs (src, dst), as src * N + dst, of relation r, sorted. */
static int64_t stored_pairs(const gnn_graph_t *g, int32_t r, int64_t *out)
{
    int64_t k = 0;
    for (gnn_vid_t v = 0; v < g->csr.n_rows; v++)
        for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++)
            if (g->etype[e] == r) out[k++] = g->csr.indices[e] * N + v;
    qsort(out, (size_t)k, sizeof *out, cmp_i64);
    return k;
}

/* The written pairs of relation r (reversed when rev), global ids. */
static int64_t written_pairs(int r, int rev, int64_t *out)
{
    for (int64_t i = 0; i < rel_lines[r]; i++) {
        int64_t s = type_off[rel_src[r]] + g_fx.src[r][i];
        int64_t d = type_off[rel_dst[r]] + g_fx.dst[r][i];
        out[i] = rev ? d * N + s : s * N + d;
    }
    return sort_unique(out, rel_lines[r]);
}

static void check_graph(const char *path, int reverse, int features)
{
    gnn_graph_t g;
    int rc = gnn_graph_load(path, &g);
    if (rc) fail_msg("load %s: %s", path, gnn_error_message());
    const gnn_graph_types_t *t = g.types;
    assert_non_null(t);
    assert_int_equal(g.csr.n_rows, N);
    assert_int_equal(t->n_ntypes, T);
    for (int i = 0; i < T; i++) {
        assert_string_equal(t->ntype[i], type_name[i]);
        assert_int_equal(t->off[i], type_off[i]);
        assert_int_equal(t->feat_dim[i], i == PAPER && features ? F : 0);
    }
    assert_int_equal(t->off[T], N);
    assert_int_equal(t->target, PAPER);
    assert_int_equal(t->n_rels, reverse ? 2 * R : R);
    assert_int_equal(g.directed, !reverse);
    assert_int_equal(!!(g.csr.flags & GNN_CSR_SYMMETRIC), reverse);
    assert_true(g.csr.flags & GNN_CSR_SORTED);
    assert_false(g.csr.flags & GNN_CSR_NO_SELF_LOOPS); /* cites has one */

    /* Each relation's pairs: the set written, repeats stored once. */
    int64_t *got = malloc(sizeof(int64_t) * (size_t)(g.csr.nnz + 1));
    int64_t *want = malloc(sizeof(int64_t) * 1200);
    int64_t total = 0;
    for (int r = 0; r < t->n_rels; r++) {
        int base = r % R, rev = r >= R;
        char name[64];
        snprintf(name, sizeof name, "%s%s", rev ? "rev_" : "", rel_name[base]);
        assert_string_equal(t->rel[r], name);
        assert_int_equal(t->rel_src[r], rev ? rel_dst[base] : rel_src[base]);
        assert_int_equal(t->rel_dst[r], rev ? rel_src[base] : rel_dst[base]);
        int64_t nw = written_pairs(base, rev, want), ng = stored_pairs(&g, r, got);
        assert_true(nw < rel_lines[base]); /* the repeated line was dropped */
        assert_int_equal(ng, nw);
        assert_memory_equal(got, want, sizeof(int64_t) * (size_t)nw);
        total += nw;
    }
    assert_int_equal(g.csr.nnz, total);
    free(got);
    free(want);

    /* Features: paper's rows as written, zero rows elsewhere. */
    if (features) {
        assert_int_equal(g.feat_dim, F);
        assert_non_null(g.feat);
        for (int64_t v = 0; v < N; v++)
            for (int j = 0; j < F; j++) {
                float x = v >= type_off[PAPER] ? g_fx.feat[(v - type_off[PAPER]) * F + j] : 0.0f;
                if (g.feat[v * F + j] != x)
                    fail_msg("feature %d of node %lld is %g, expected %g", j, (long long)v,
                             (double)g.feat[v * F + j], (double)x);
            }
    } else {
        assert_int_equal(g.feat_dim, 0);
        assert_null(g.feat);
    }
    /* Labels on paper only; splits as global ids. */
    assert_non_null(g.label);
    assert_int_equal(g.num_classes, CLASSES);
    for (int64_t v = 0; v < N; v++)
        assert_int_equal(g.label[v], v >= type_off[PAPER] ? g_fx.label[v - type_off[PAPER]] : -1);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        assert_int_equal(g.split_size[s], g_fx.split_size[s]);
        for (int64_t i = 0; i < g.split_size[s]; i++)
            assert_int_equal(g.split[s][i], type_off[PAPER] + g_fx.split[s][i]);
    }
    gnn_graph_free(&g);

    /* node_year: node_data/year, -1 on the other types. */
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->n_node_data, 1);
    int is_int;
    int64_t ncols;
    void *year;
    assert_int_equal(gnn_graph_read_node_data(f, "year", &is_int, &ncols, &year), 0);
    assert_true(is_int && ncols == 1);
    for (int64_t v = 0; v < N; v++)
        assert_int_equal(((int64_t *)year)[v],
                         v >= type_off[PAPER] ? g_fx.year[v - type_off[PAPER]] : -1);
    free(year);
    gnn_graph_close(f);
}

static void test_mag_exact(void **state)
{
    (void)state;
    const char *dir = make_mag("mag");
    const char *out = tu_path("mag.h5");
    const char *flags[] = {NULL, "--add-reverse", "--no-features"};
    for (int k = 0; k < 3; k++) {
        tu_run_t r = convert(dir, out, flags[k]);
        if (r.status != 0) fail_msg("%s: status %d: %s", flags[k] ? flags[k] : "", r.status, r.err);
        tu_run_free(&r);
        check_graph(out, k == 1, k != 2);
    }
    /* Plain .csv files are read too. */
    remove_path(dir, "raw/num-node-dict.csv.gz");
    set_file(dir, "raw/num-node-dict.csv", "author,field_of_study,institution,paper\n"
                                           "300,200,150,400\n");
    tu_run_t r = convert(dir, out, "--add-reverse");
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    check_graph(out, 1, 1);
}

/* gnn-dataset info lists the types and relations of the converted file. */
static void test_info_cli(void **state)
{
    (void)state;
    const char *dir = make_mag("mag-info");
    const char *out = tu_path("mag-info.h5");
    char *argv[] = {g_bin, "ogb", (char *)dir, "-o", (char *)out, "--add-reverse", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    int64_t count[2 * R] = {0};
    for (gnn_eid_t e = 0; e < g.csr.nnz; e++) count[g.etype[e]]++;
    gnn_graph_free(&g);

    char *info[] = {g_bin, "info", (char *)out, NULL};
    r = tu_run(info);
    assert_int_equal(r.status, 0);
    char want[256];
    const char *fixed[] = {"node types", "relations", "author", "field_of_study", "institution",
                           "paper", "300 nodes [0, 300)", "400 nodes [650, 1050), 8 features, "
                           "target (labels)"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strstr(r.out, fixed[i])) fail_msg("missing '%s' in:\n%s", fixed[i], r.out);
    for (int k = 0; k < 2 * R; k++) {
        int base = k % R, rev = k >= R;
        snprintf(want, sizeof want, "%s -%s%s-> %s: %lld edges",
                 type_name[rev ? rel_dst[base] : rel_src[base]], rev ? "rev_" : "",
                 rel_name[base], type_name[rev ? rel_src[base] : rel_dst[base]],
                 (long long)count[k]);
        if (!strstr(r.out, want)) fail_msg("missing '%s' in:\n%s", want, r.out);
    }
    tu_run_free(&r);
}

/* ---- Bad input ---------------------------------------------------------------- */

/* Fails with status and no output; the last line of standard error is the
 * one error line "gnn-dataset: error: ..." containing want. */
static void expect_failure(const char *dir, const char *extra, int status, const char *want)
{
    const char *out = tu_path("bad-out.h5");
    unlink(out);
    char *argv[] = {g_bin, "ogb", (char *)dir, "-o", (char *)out, (char *)extra, NULL};
    tu_run_t r = tu_run(argv);
    const char *last = r.err ? r.err : "";
    size_t n = strlen(last);
    if (n > 0) {
        const char *q = last + n - 1; /* the final newline */
        while (q > last && q[-1] != '\n') q--;
        last = q;
    }
    if (r.status != status || strncmp(last, "gnn-dataset: error: ", 20) != 0 ||
        !strstr(last, want) || strstr(r.err, "error:") != last + 13)
        fail_msg("%s: status %d, stderr '%s'; expected %d and a last line with '%s'", dir,
                 r.status, r.err, status, want);
    assert_false(tu_exists(out));
    /* Nor a half-written one beside it (the writer's "<path>.tmp-<pid>"). */
    assert_int_not_equal(tu_sh("ls '%s' | grep -q '^bad-out'", tu_tmpdir()), 0);
    tu_run_free(&r);
}

#define WRITES "raw/relations/author___writes___paper/"

static void test_bad_structure(void **state)
{
    (void)state;
    const char *d;

    d = make_mag("bad-triplet-type");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,affiliated_with,institution\n"
                                                "author,writes,paper\npaper,cites,papers\n"
                                                "paper,has_topic,field_of_study\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:3: unknown destination node type "
                               "'papers' (not in num-node-dict)");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,affiliated_with,institution\n"
                                                "venue,writes,paper\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:2: unknown source node type "
                               "'venue'");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,affiliated_with,institution\n"
                                                "author,writes\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:2: expected 'SRC,REL,DST' (node "
                               "type, relation, node type), found 'author,writes'");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,writes,paper\nauthor,writes,paper\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:2: relation author,writes,paper is "
                               "listed twice");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,wr.tes,paper\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:1: relation name 'wr.tes' is not 1 "
                               "to 63 characters");
    /* A name whose reverse would pass 63 characters. */
    char line[256], name[64];
    memset(name, 'w', 61);
    name[61] = '\0';
    snprintf(line, sizeof line, "author,%s,paper\n", name);
    set_file(d, "raw/triplet-type-list.csv.gz", line);
    expect_failure(d, "--add-reverse", 1, "raw/triplet-type-list.csv.gz:1: relation name 'www");
    expect_failure(d, "--add-reverse", 1, "is not 1 to 59 characters of A-Z a-z 0-9 _ - "
                                          "(--add-reverse prefixes its reverse with 'rev_')");
    set_file(d, "raw/triplet-type-list.csv.gz", "");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz: no relations listed");
    remove_path(d, "raw/triplet-type-list.csv.gz");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz: no such file");

    /* A listed relation without its folder or files. */
    d = make_mag("bad-no-folder");
    set_file(d, "raw/triplet-type-list.csv.gz", "author,affiliated_with,institution\n"
                                                "author,writes,paper\nauthor,reviews,paper\n");
    expect_failure(d, NULL, 1, "raw/triplet-type-list.csv.gz:3: relation author,reviews,paper: "
                               "no folder ");
    expect_failure(d, NULL, 1, "raw/relations/author___reviews___paper");
    d = make_mag("bad-no-edges");
    remove_path(d, WRITES "edge.csv.gz");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz: no such file");
    d = make_mag("bad-no-edge-count");
    remove_path(d, WRITES "num-edge-list.csv.gz");
    expect_failure(d, NULL, 1, WRITES "num-edge-list.csv.gz: no such file");

    /* num-node-dict. */
    d = make_mag("bad-node-dict");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n"
                                            "300,200,150\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:2: 3 counts for the 4 node types named "
                               "on the line above");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n"
                                            "300,200,-1,400\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:2: count '-1' of node type "
                               "'institution' is not a non-negative integer");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,author,paper\n"
                                            "300,200,150,400\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:1: node type 'author' is named twice");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field of study,institution,paper\n"
                                            "300,200,150,400\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:1: node type name 'field of study' is "
                               "not 1 to 63 characters");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz: no line of node counts after the line "
                               "of node type names");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n"
                                            "300,200,150,400\n1,1,1,1\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:3: a third line");
    set_file(d, "raw/num-node-dict.csv.gz", "author,field_of_study,institution,paper\n"
                                            "300,200,150,4611686018427387800\n");
    expect_failure(d, NULL, 1, "raw/num-node-dict.csv.gz:2: node count 4611686018427387800 of "
                               "type 'paper' takes the total beyond the limit 2^62");

    /* Options that do not fit the layout. */
    d = make_mag("bad-options");
    expect_failure(d, "--symmetrize", 2, "is a typed dataset (raw/num-node-dict.csv.gz): "
                                         "--symmetrize does not apply; use --add-reverse");
    char p[1024];
    snprintf(p, sizeof p, "%s", tu_path("homogeneous"));
    set_file(p, "raw/edge.csv.gz", "0,1\n");
    set_file(p, "raw/num-node-list.csv.gz", "2\n");
    set_file(p, "raw/num-edge-list.csv.gz", "1\n");
    expect_failure(p, "--add-reverse", 2, "--add-reverse applies to typed datasets");
}

static void test_bad_edges(void **state)
{
    (void)state;
    const char *d = make_mag("bad-edges");
    set_file(d, WRITES "edge.csv.gz", "0,1\n2,3\n4,5\n7,400\n");
    set_file(d, WRITES "num-edge-list.csv.gz", "4\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz:4: destination id 400 is outside [0, 400), "
                               "the nodes of type 'paper' (num-node-dict)");
    set_file(d, WRITES "edge.csv.gz", "0,1\n\n300,3\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz:3: source id 300 is outside [0, 300), the "
                               "nodes of type 'author' (num-node-dict)");
    set_file(d, WRITES "edge.csv.gz", "0,1\n-1,3\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz:2: source id -1 is outside [0, 300)");
    set_file(d, WRITES "edge.csv.gz", "src,dst\n0,1\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz:1: expected two integer node ids 'SRC,DST' "
                               "(the file has no header line), found 'src,dst'");
    set_file(d, WRITES "edge.csv.gz", "0,1\n2,3\n4,5\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz has 3 edges but num-edge-list says 4");
    set_file(d, WRITES "edge.csv.gz", "0,1\n2,3\n4,5\n6,7\n8,9\n");
    expect_failure(d, NULL, 1, WRITES "edge.csv.gz:5: more edges than the 4 of num-edge-list");
    set_file(d, WRITES "num-edge-list.csv.gz", "x\n");
    expect_failure(d, NULL, 1, WRITES "num-edge-list.csv.gz:1: expected one non-negative count");
}

static void test_bad_node_files(void **state)
{
    (void)state;
    const char *d;
    char text[8192] = "";

    /* Labels of the wrong length, of two types, of none. */
    d = make_mag("bad-labels");
    for (int i = 0; i < 399; i++) strcat(text, "1\n");
    set_file(d, "raw/node-label/paper/node-label.csv.gz", text);
    expect_failure(d, NULL, 1, "raw/node-label/paper/node-label.csv.gz has 399 labels but the "
                               "graph has 400 nodes of type 'paper'");
    strcat(text, "1\n2\n");
    set_file(d, "raw/node-label/paper/node-label.csv.gz", text);
    expect_failure(d, NULL, 1, "raw/node-label/paper/node-label.csv.gz:401: more labels than the "
                               "400 nodes of type 'paper'");
    d = make_mag("bad-two-labels");
    set_file(d, "raw/node-label/author/node-label.csv.gz", "1\n");
    expect_failure(d, NULL, 1, "raw/node-label/author/node-label.csv.gz and ");
    expect_failure(d, NULL, 1, "raw/node-label/paper/node-label.csv.gz: two node types have "
                               "labels (a dataset has one target type)");
    d = make_mag("bad-no-labels");
    remove_path(d, "raw/node-label");
    expect_failure(d, NULL, 1, "split/time holds a split but no node type has labels");
    d = make_mag("bad-label-type");
    set_file(d, "raw/node-label/venue/node-label.csv.gz", "1\n");
    expect_failure(d, NULL, 1, "raw/node-label/venue: 'venue' is not a node type of "
                               "raw/num-node-dict.csv.gz");

    /* Features. */
    d = make_mag("bad-feat");
    text[0] = '\0';
    for (int i = 0; i < 399; i++) strcat(text, "1,2,3,4,5,6,7,8\n");
    set_file(d, "raw/node-feat/paper/node-feat.csv.gz", text);
    expect_failure(d, NULL, 1, "raw/node-feat/paper/node-feat.csv.gz has 399 rows but the graph "
                               "has 400 nodes of type 'paper'");
    strcat(text, "1,2,3,4,5,6,7,8\n1,2,3,4,5,6,7,8\n");
    set_file(d, "raw/node-feat/paper/node-feat.csv.gz", text);
    expect_failure(d, NULL, 1, "raw/node-feat/paper/node-feat.csv.gz:401: more feature rows than "
                               "the 400 nodes of type 'paper'");
    set_file(d, "raw/node-feat/paper/node-feat.csv.gz", "1,2,3,4,5,6,7,8\n1,2,3\n");
    expect_failure(d, NULL, 1, "raw/node-feat/paper/node-feat.csv.gz:2: expected 8 values, "
                               "found 3");
    d = make_mag("bad-feat-type");
    set_file(d, "raw/node-feat/venue/node-feat.csv.gz", "1\n");
    expect_failure(d, NULL, 1, "raw/node-feat/venue: 'venue' is not a node type");
    d = make_mag("bad-year");
    set_file(d, "raw/node-feat/paper/node_year.csv.gz", "2001\n2002\n");
    expect_failure(d, NULL, 1, "raw/node-feat/paper/node_year.csv.gz has 2 rows but the graph "
                               "has 400 nodes");

    /* Splits outside the target type, or missing. */
    d = make_mag("bad-split");
    set_file(d, "split/time/paper/test.csv.gz", "3\n400\n");
    expect_failure(d, NULL, 1, "split/time/paper/test.csv.gz:2: node id 400 is outside [0, 400)");
    remove_path(d, "split/time/paper/valid.csv.gz");
    expect_failure(d, NULL, 1, "split/time/paper/valid.csv.gz: no such file");
    remove_path(d, "split/time/paper");
    set_file(d, "split/time/author/train.csv.gz", "1\n");
    expect_failure(d, NULL, 1, "split/time/paper/train.csv.gz: no such file");
    expect_failure(d, "--split=random", 1, "split/random: no such split folder (found: time)");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mag_exact),
        cmocka_unit_test(test_info_cli),
        cmocka_unit_test(test_bad_structure),
        cmocka_unit_test(test_bad_edges),
        cmocka_unit_test(test_bad_node_files),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (int r = 0; r < R; r++) {
        free(g_fx.src[r]);
        free(g_fx.dst[r]);
    }
    return rc;
}
