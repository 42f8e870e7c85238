/*
 * Fuzz target for partition directories, as gnn-train, --check and --info
 * read them. Structure-aware: raw bytes of the HDF5 files are never edited
 * (that would fuzz libhdf5, not this project); the input is a list of edits
 * made through HDF5 to a fresh copy of a valid directory.
 *
 * Once per process, a small graph file (60 nodes, weighted in-edges,
 * features, labels, the three splits, original ids) and its directory (3
 * parts, 2 halo hops) are written into a temporary directory, removed at
 * exit. Each input then copies the directory and applies its edits, each
 * to one file (meta.h5 or a part) chosen by the input:
 *   - one element of a dataset set to 0, -1, 1, the largest int64, itself
 *     plus or minus one, a word of the input, or itself with one bit
 *     flipped (floats: 0, -1, NaN, infinity, -1e30 or a word);
 *   - two elements of a dataset swapped (order broken);
 *   - a dataset removed;
 *   - a dataset made again one row shorter or one row longer;
 *   - an attribute of the file's root or of a dataset set the same way,
 *     strings replaced by another string.
 * The copy is then read part by part (gnn_partdir_read_part), summarised
 * (gnn_partdir_info, text and JSON) and checked against the graph
 * (gnn_partdir_check). Errors are expected and ignored; crashes, leaks,
 * hangs and sanitizer reports are not. A part that reads must hold a CSR
 * that passes gnn_csr_validate, local ids and split indices in range.
 * FUZZ_PARTDIR_VERBOSE=1 prints each edit and what the readers said.
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/partdir.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N 60
#define K 3
#define MAX_NAMES 64

static char g_root[256], g_graph[300], g_pristine[300], g_work[300];
static char g_files[16][64];
static int g_nfiles = -1;

/* ---- The input as a stream of numbers ------------------------------------ */

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static uint64_t take(input_t *in, int bytes)
{
    uint64_t x = 0;
    for (int i = 0; i < bytes && in->n > 0; i++, in->p++, in->n--) x |= (uint64_t)*in->p << (8 * i);
    return x;
}

/* ---- Set-up and clean-up ---------------------------------------------------- */

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[600];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat st;
            if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                remove_dir(path);
            else
                unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static void clean_up(void)
{
    if (g_root[0]) remove_dir(g_root);
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static int set_up(void)
{
    snprintf(g_root, sizeof g_root, "%s/fuzz-partdir-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) return -1;
    atexit(clean_up);
    snprintf(g_graph, sizeof g_graph, "%s/g.h5", g_root);
    snprintf(g_pristine, sizeof g_pristine, "%s/parts", g_root);
    snprintf(g_work, sizeof g_work, "%s/work", g_root);
    gnn_vid_t src[N * 4], dst[N * 4];
    float w[N * 4];
    int64_t m = 0;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (gnn_vid_t v = 0; v < N; v++)
        for (int i = 0; i < 1 + (int)(v % 4); i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            gnn_vid_t u = (gnn_vid_t)((r >> 33) % N);
            if (u == v) continue;
            src[m] = u;
            dst[m] = v;
            w[m++] = (float)(1 + (r >> 20) % 7);
        }
    gnn_graph_t g;
    gnn_graph_init(&g);
    g.directed = 1;
    int rc = gnn_csr_from_edges(N, m, src, dst, w, GNN_BUILD_DEDUPE | GNN_BUILD_SORT, &g.csr);
    g.feat_dim = 3;
    g.feat = gnn_malloc_array(N * 3, sizeof *g.feat);
    g.label = gnn_malloc_array(N, sizeof *g.label);
    g.orig_id = gnn_malloc_array(N, sizeof *g.orig_id);
    g.num_classes = 4;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        g.split[s] = gnn_malloc_array(N, sizeof *g.split[s]);
        g.split_size[s] = 0;
    }
    if (rc == 0 && !(g.feat && g.label && g.orig_id && g.split[0] && g.split[1] && g.split[2]))
        rc = GNN_ENOMEM;
    int32_t part[N];
    for (gnn_vid_t v = 0; rc == 0 && v < N; v++) {
        for (int j = 0; j < 3; j++) g.feat[v * 3 + j] = (float)(v * 3 + j) / 7.0f;
        g.label[v] = v % 9 == 0 ? -1 : v % 4;
        g.orig_id[v] = 1000 + 7 * v;
        g.split[v % 3][g.split_size[v % 3]++] = v;
        part[v] = (int32_t)((v * 7) % K);
    }
    if (rc == 0) rc = gnn_graph_write(g_graph, &g, 1);
    gnn_csr_t view = {0};
    int64_t cut = 0;
    if (rc == 0) rc = gnn_part_undirected(&g.csr, &view);
    if (rc == 0) cut = gnn_part_edge_cut(&view, part);
    gnn_csr_free(&view);
    gnn_partdir_meta_t meta = {.graph = g_graph, .method = "metis", .balance = "nodes",
                               .ufactor = 30, .halo_hops = 2, .ranks = 1, .scheme = "kway",
                               .edge_cut = cut};
    if (rc == 0) rc = gnn_partdir_write(g_pristine, &g, part, K, &meta, 0);
    gnn_graph_free(&g);
    if (rc != 0) {
        fprintf(stderr, "fuzz_partdir: set-up failed: %s\n", gnn_strerror(rc));
        return -1;
    }
    DIR *d = opendir(g_pristine);
    if (!d) return -1;
    struct dirent *e;
    g_nfiles = 0;
    while ((e = readdir(d)) && g_nfiles < 16)
        if (e->d_name[0] != '.' && strlen(e->d_name) < sizeof g_files[0])
            strcpy(g_files[g_nfiles++], e->d_name);
    closedir(d);
    qsort(g_files, (size_t)g_nfiles, sizeof g_files[0], cmp_name);
    return g_nfiles > 0 ? 0 : -1;
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = a && b ? 0 : -1;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) rc = -1;
    if (a) fclose(a);
    if (b && fclose(b) != 0) rc = -1;
    return rc;
}

static int fresh_copy(void)
{
    remove_dir(g_work);
    if (mkdir(g_work, 0700) != 0) return -1;
    char a[600], b[600];
    for (int i = 0; i < g_nfiles; i++) {
        int na = snprintf(a, sizeof a, "%s/%s", g_pristine, g_files[i]);
        int nb = snprintf(b, sizeof b, "%s/%s", g_work, g_files[i]);
        if (na >= (int)sizeof a || nb >= (int)sizeof b || copy_file(a, b) != 0) return -1;
    }
    return 0;
}

/* ---- Edits ------------------------------------------------------------------- */

typedef struct {
    int n;
    char name[MAX_NAMES][128];
} names_t;

/* Links are visited in name order (HDF5 1.10 and later alike); the ones
 * that open as datasets are kept. */
static herr_t add_dataset(hid_t group, const char *name, const H5L_info_t *info, void *op)
{
    (void)info;
    names_t *l = op;
    if (l->n >= MAX_NAMES || strlen(name) >= 128) return 0;
    hid_t d = H5Dopen2(group, name, H5P_DEFAULT);
    if (d >= 0) {
        strcpy(l->name[l->n++], name);
        H5Dclose(d);
    }
    return 0;
}

static herr_t add_attr(hid_t obj, const char *name, const H5A_info_t *info, void *op)
{
    (void)obj;
    (void)info;
    names_t *l = op;
    if (l->n < MAX_NAMES && strlen(name) < 128) strcpy(l->name[l->n++], name);
    return 0;
}

static int64_t new_int(input_t *in, int64_t v)
{
    switch (take(in, 1) % 8) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1;
    case 3: return INT64_MAX;
    case 4: return v + 1;
    case 5: return v - 1;
    case 6: return (int64_t)take(in, 8);
    default: return (int64_t)((uint64_t)v ^ ((uint64_t)1 << (take(in, 1) % 64)));
    }
}

static double new_float(input_t *in)
{
    switch (take(in, 1) % 6) {
    case 0: return 0.0;
    case 1: return -1.0;
    case 2: return NAN;
    case 3: return INFINITY;
    case 4: return -1e30;
    default: return (double)(int64_t)take(in, 8) / 65536.0;
    }
}

/* Values of an object's numeric data (dataset or attribute) edited in
 * place: buf holds n elements of the memory type (int64 or double). */
static void edit_values(input_t *in, void *buf, hsize_t n, int is_float, int swap)
{
    if (n == 0) return;
    hsize_t i = take(in, 4) % n;
    if (swap) {
        hsize_t j = take(in, 4) % n;
        if (is_float) {
            double t = ((double *)buf)[i];
            ((double *)buf)[i] = ((double *)buf)[j];
            ((double *)buf)[j] = t;
        } else {
            int64_t t = ((int64_t *)buf)[i];
            ((int64_t *)buf)[i] = ((int64_t *)buf)[j];
            ((int64_t *)buf)[j] = t;
        }
        return;
    }
    if (is_float)
        ((double *)buf)[i] = new_float(in);
    else
        ((int64_t *)buf)[i] = new_int(in, ((int64_t *)buf)[i]);
}

static const char *const g_strings[] = {"", "gnn-partition", "gnn-partition-part", "gnn-graph",
                                        "metis", "random", "kway", "rb", "nodes,edges,train",
                                        "/nonexistent/graph.h5", "x"};

static void edit_attr(input_t *in, hid_t obj)
{
    names_t l = {0};
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, add_attr, &l);
    if (l.n == 0) return;
    const char *name = l.name[take(in, 1) % (uint64_t)l.n];
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if (cls == H5T_STRING) {
        H5Aclose(a);
        H5Adelete(obj, name);
        const char *s = g_strings[take(in, 1) % (sizeof g_strings / sizeof g_strings[0])];
        hid_t st = H5Tcopy(H5T_C_S1), ss = H5Screate(H5S_SCALAR);
        H5Tset_size(st, strlen(s) + 1);
        hid_t na = H5Acreate2(obj, name, st, ss, H5P_DEFAULT, H5P_DEFAULT);
        if (na >= 0) {
            H5Awrite(na, st, s);
            H5Aclose(na);
        }
        H5Tclose(st);
        H5Sclose(ss);
        a = -1;
    } else if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0 && n <= 4096) {
        int is_float = cls == H5T_FLOAT;
        hid_t mt = is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        void *buf = malloc((size_t)n * 8);
        if (buf && H5Aread(a, mt, buf) >= 0) {
            edit_values(in, buf, (hsize_t)n, is_float, 0);
            H5Awrite(a, mt, buf);
        }
        free(buf);
    }
    if (a >= 0) H5Aclose(a);
    H5Tclose(t);
    H5Sclose(sp);
}

/* The dataset made again with its first dimension one shorter or longer
 * (the new row zero), same type, contiguous. */
static void remake(input_t *in, hid_t f, const char *name)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[2] = {0, 1};
    H5T_class_t cls = H5Tget_class(t);
    if (rank < 1 || rank > 2 || (cls != H5T_INTEGER && cls != H5T_FLOAT) ||
        H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] * (rank == 2 ? dims[1] : 1) > 65536) {
        H5Tclose(t);
        H5Sclose(sp);
        H5Dclose(d);
        return;
    }
    hid_t mt = cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
    size_t row = rank == 2 ? (size_t)dims[1] : 1, old = (size_t)dims[0];
    double *buf = calloc((old + 1) * row + 1, 8);
    if (buf && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        H5Dclose(d);
        d = -1;
        hsize_t nd[2] = {take(in, 1) % 2 ? (hsize_t)old + 1 : (old > 0 ? (hsize_t)old - 1 : 1),
                         (hsize_t)row};
        H5Ldelete(f, name, H5P_DEFAULT);
        hid_t ns = H5Screate_simple(rank, nd, NULL);
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t nd_id = H5Dcreate2(f, name, t, ns, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        if (nd_id >= 0) {
            H5Dwrite(nd_id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
            H5Dclose(nd_id);
        }
        H5Pclose(lcpl);
        H5Sclose(ns);
    }
    free(buf);
    if (d >= 0) H5Dclose(d);
    H5Tclose(t);
    H5Sclose(sp);
}

static void edit_dataset(input_t *in, hid_t f, const char *name, int swap)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0 && n <= 65536) {
        int is_float = cls == H5T_FLOAT;
        hid_t mt = is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        void *buf = malloc((size_t)n * 8);
        if (buf && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
            edit_values(in, buf, (hsize_t)n, is_float, swap);
            H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        }
        free(buf);
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
}

static void edit(input_t *in)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_work, g_files[take(in, 1) % (uint64_t)g_nfiles]);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return;
    names_t l = {0};
    H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, add_dataset, &l);
    int what = (int)(take(in, 1) % 6);
    const char *name = l.n ? l.name[take(in, 1) % (uint64_t)l.n] : NULL;
    if (getenv("FUZZ_PARTDIR_VERBOSE"))
        fprintf(stderr, "edit %d of %s in %s\n", what, name ? name : "-", path);
    if (what == 0 && name) {
        edit_dataset(in, f, name, 0);
    } else if (what == 1 && name) {
        edit_dataset(in, f, name, 1);
    } else if (what == 2 && name) {
        H5Ldelete(f, name, H5P_DEFAULT);
    } else if (what == 3 && name) {
        remake(in, f, name);
    } else if (what == 4 && name) {
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
        if (d >= 0) {
            edit_attr(in, d);
            H5Dclose(d);
        }
    } else {
        edit_attr(in, f);
    }
    H5Fclose(f);
}

/* ---- Reading back ------------------------------------------------------------ */

static void read_back(void)
{
    const int verbose = getenv("FUZZ_PARTDIR_VERBOSE") != NULL;
    for (int p = 0; p < K; p++) {
        gnn_part_file_t pf;
        int rc = gnn_partdir_read_part(g_work, p, &pf);
        if (verbose) fprintf(stderr, "part %d: %s\n", p, rc ? gnn_error_message() : "read");
        if (rc != 0) continue;
        if (gnn_csr_validate(&pf.csr) != 0 || pf.csr.n_rows != pf.n_rows ||
            pf.csr.n_cols != pf.n_local || pf.n_owned > pf.n_rows || pf.n_rows > pf.n_local)
            abort();
        for (int64_t i = 0; i < pf.n_local; i++)
            if (pf.local_to_global[i] < 0 || pf.local_to_global[i] >= pf.num_nodes) abort();
        for (int s = 0; s < 3; s++)
            for (int64_t i = 0; pf.split[s] && i < pf.split_n[s]; i++)
                if (pf.split[s][i] < 0 || pf.split[s][i] >= pf.n_owned) abort();
        for (int64_t i = 0; pf.label && i < pf.n_owned; i++)
            if (pf.label[i] < -1 || pf.label[i] >= pf.num_classes) abort();
        gnn_part_file_free(&pf);
    }
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        gnn_partdir_info(g_work, 0, null);
        gnn_partdir_info(g_work, 1, null);
        fclose(null);
    }
    int rc = gnn_partdir_check(g_work, g_graph);
    if (verbose) fprintf(stderr, "check: %s\n", rc ? gnn_error_message() : "passed");
    gnn_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    if (g_nfiles < 0 && set_up() != 0) abort();
    if (fresh_copy() != 0) abort();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    input_t in = {data, size};
    int edits = 1 + (int)(take(&in, 1) % 4);
    for (int i = 0; i < edits; i++) edit(&in);
    read_back();
    return 0;
}
