/*
 * Checkpoint and prediction files: bitwise round trips of every field
 * (empty run arrays, 100k parameters, special float values, uint64 values
 * above INT64_MAX), replacement of an existing file, failed saves that leave
 * the target as it was and no temporary file behind, every kind of bad file
 * built with the HDF5 C API (each a GNN_E* code and a message naming the
 * file, a zeroed checkpoint and no open HDF5 object), allocation failure at
 * every allocation, files of every older version (2: without the data
 * trained on, 5: without a learnable input table) still read, learnable
 * input tables of each optimiser and none, and prediction files read back
 * with the HDF5 API.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "trainer/checkpoint.h"
#include "tests/common/testutil.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <string.h>

static unsigned g_seed;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int64_t open_objects(void) { return (int64_t)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

/* n floats of distinct random bit patterns (no infinity or NaN), from
 * malloc. */
static float *random_floats(int64_t n, uint64_t *s)
{
    float *p = malloc(sizeof(float) * (size_t)(n + 1));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)rng_next(s);
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= ~0x00400000u; /* any inf/NaN */
        memcpy(&p[i], &bits, sizeof bits);
    }
    return p;
}

/* Elements of the table's arrays (tensor_len in checkpoint.c): the rows
 * and first state whenever embed_dim > 0, the second state for adam, the
 * best rows when kept. */
static size_t embed_len(const gnn_checkpoint_t *c)
{
    return c->embed_dim > 0 ? (size_t)(c->embed_rows * c->embed_dim) : 0;
}
static size_t embed_s2_len(const gnn_checkpoint_t *c)
{
    return strcmp(c->embed_opt, "adam") ? 0 : embed_len(c);
}
static size_t embed_best_len(const gnn_checkpoint_t *c)
{
    return c->embed_best_kept ? embed_len(c) : 0;
}

/* A checkpoint with every field set to a distinct value, a learnable
 * input table (adam, 5 rows of 3, best rows kept) included; arrays from
 * malloc (released with free_ck). */
static void make_ck(gnn_checkpoint_t *c, int64_t n_params, int64_t runs_done, uint64_t seed)
{
    uint64_t s = seed | 1;
    memset(c, 0, sizeof *c);
    strcpy(c->model, "sage");
    strcpy(c->task, "node"); /* link settings too: the format keeps them whatever the task */
    strcpy(c->decoder, "mlp");
    strcpy(c->hits, "20,50,100");
    c->negatives = 3;
    strcpy(c->aggr, "mean_with_a_long_name_31_chars_");
    assert_int_equal(strlen(c->aggr), 31);
    strcpy(c->decay_scope, "first");
    strcpy(c->init, "fan-in");
    strcpy(c->mode, "minibatch");
    strcpy(c->fanouts, "15,10,5");
    c->batch_size = 1024;
    c->layers = 3;
    c->in_dim = 128;
    c->hidden = 256;
    c->classes = 40;
    c->dropout = 0.5;
    c->lr = 0.01;
    c->weight_decay = 5e-4;
    c->normalize_features = 1;
    c->seed = 0xFEDCBA9876543210ull; /* above INT64_MAX */
    c->runs = 10;
    c->num_nodes = 2708;
    c->heads = 8;
    c->out_heads = 1;
    c->attn_dropout = 0.6;
    c->negative_slope = 0.2;
    c->parts = 4;
    c->train_nodes = 140;
    c->num_edges = 10556;
    c->edge_hash = 0x8000000000000001ull; /* above INT64_MAX */
    c->train_hash = 0x0123456789ABCDEFull;
    c->train_layout = UINT64_MAX;
    c->run = runs_done < 10 ? runs_done : 9;
    c->epoch = 123;
    c->step = 456;
    c->rng_offset = UINT64_MAX - 7;
    c->best_epoch = 99;
    c->bad_evals = 4;
    c->best_valid_acc = 0.7123456789012345;
    c->best_valid_loss = 1.0 / 3.0;
    c->best_test_acc = 0.70001;
    c->best_train_acc = 0.99;
    c->min_valid_loss = INFINITY;
    c->runs_done = runs_done;
    c->n_metrics = 3;
    c->best_metrics = malloc(3 * sizeof(double));
    c->run_metrics = malloc(sizeof(double) * (size_t)(3 * runs_done + 1));
    assert_true(c->best_metrics && c->run_metrics);
    for (int k = 0; k < 3; k++) c->best_metrics[k] = 0.25 * k + 1e-17;
    c->best_metrics[2] = NAN;
    for (int64_t i = 0; i < 3 * runs_done; i++) c->run_metrics[i] = 0.5 + 0.001 * (double)i;
    if (runs_done > 0) {
        c->run_test_acc = malloc(sizeof(double) * (size_t)runs_done);
        c->run_valid_acc = malloc(sizeof(double) * (size_t)runs_done);
        for (int64_t r = 0; r < runs_done; r++) {
            c->run_test_acc[r] = 0.6 + 0.01 * (double)r + 1e-17;
            c->run_valid_acc[r] = -0.0;
        }
    }
    c->n_params = n_params;
    if (n_params > 0) {
        float **t[4] = {&c->params, &c->adam_m, &c->adam_v, &c->best_params};
        for (int k = 0; k < 4; k++) *t[k] = random_floats(n_params, &s);
        c->params[0] = -0.0f;
        if (n_params > 3) {
            c->params[1] = NAN;
            c->params[2] = -INFINITY;
            c->params[3] = 1e-45f; /* denormal */
        }
    }
    strcpy(c->embed_opt, "adam");
    c->embed_dim = 3;
    c->embed_rows = 5;
    c->embed_all = 1;
    c->embed_step = 17;
    c->embed_best_kept = 1;
    c->embed_lr = 0.05;
    float **e[4] = {&c->embed_w, &c->embed_s1, &c->embed_s2, &c->embed_best};
    for (int k = 0; k < 4; k++) *e[k] = random_floats(15, &s);
    c->embed_w[0] = -0.0f;
    c->embed_w[1] = NAN;
    c->embed_s1[2] = 1e-45f; /* denormal */
}

/* Free the table's arrays of c (from make_ck) and set them NULL. */
static void free_embed(gnn_checkpoint_t *c)
{
    free(c->embed_w);
    free(c->embed_s1);
    free(c->embed_s2);
    free(c->embed_best);
    c->embed_w = c->embed_s1 = c->embed_s2 = c->embed_best = NULL;
}

static void free_ck(gnn_checkpoint_t *c)
{
    free(c->params);
    free(c->adam_m);
    free(c->adam_v);
    free(c->best_params);
    free(c->run_test_acc);
    free(c->run_valid_acc);
    free(c->best_metrics);
    free(c->run_metrics);
    free_embed(c);
    memset(c, 0, sizeof *c);
}

/* s = v with the rest of its field zeroed (struct comparisons see it). */
static void set_str(char *s, size_t size, const char *v)
{
    memset(s, 0, size);
    strcpy(s, v);
}

/* c as a file older than version 8 reads back: Glorot weights, the only
 * initialisation before. */
static void as_before_v8(gnn_checkpoint_t *c) { set_str(c->init, sizeof c->init, "glorot"); }

/* c as a file older than version 7 reads back: the graph's fingerprint
 * unknown (num_edges -1, the hashes 0; and Glorot, as before version 8). */
static void as_before_v7(gnn_checkpoint_t *c)
{
    as_before_v8(c);
    c->num_edges = -1;
    c->edge_hash = c->train_hash = c->train_layout = 0;
}

/* c without a learnable input table: embed_opt "-", the other members
 * 0, no arrays. */
static void no_table(gnn_checkpoint_t *c)
{
    set_str(c->embed_opt, sizeof c->embed_opt, "-");
    c->embed_dim = c->embed_all = c->embed_rows = c->embed_step = c->embed_best_kept = 0;
    c->embed_lr = 0.0;
    free_embed(c);
}

/* c as a file older than version 6 reads back: no table (and no
 * fingerprint, as before version 7). */
static void as_before_v6(gnn_checkpoint_t *c)
{
    as_before_v7(c);
    no_table(c);
}

/* c as a file older than version 5 reads back: task "node", no link
 * settings, no per-metric arrays (and no table, as before version 6). */
static void as_before_v5(gnn_checkpoint_t *c)
{
    as_before_v6(c);
    set_str(c->task, sizeof c->task, "node");
    set_str(c->decoder, sizeof c->decoder, "-");
    set_str(c->hits, sizeof c->hits, "-");
    c->negatives = 0;
    free(c->best_metrics);
    free(c->run_metrics);
    c->best_metrics = c->run_metrics = NULL;
    c->n_metrics = 0;
}

/* Every field of a and b bitwise equal; arrays by content. */
static void assert_ck_equal(const gnn_checkpoint_t *a, const gnn_checkpoint_t *b)
{
    gnn_checkpoint_t x = *a, y = *b;
    x.params = x.adam_m = x.adam_v = x.best_params = y.params = y.adam_m = y.adam_v =
        y.best_params = NULL;
    x.run_test_acc = x.run_valid_acc = y.run_test_acc = y.run_valid_acc = NULL;
    x.best_metrics = x.run_metrics = y.best_metrics = y.run_metrics = NULL;
    x.embed_w = x.embed_s1 = x.embed_s2 = x.embed_best = NULL;
    y.embed_w = y.embed_s1 = y.embed_s2 = y.embed_best = NULL;
    assert_memory_equal(&x, &y, sizeof x); /* scalars and strings, also their padding */
    size_t np = sizeof(float) * (size_t)a->n_params, nr = sizeof(double) * (size_t)a->runs_done;
    if (np) {
        assert_memory_equal(a->params, b->params, np);
        assert_memory_equal(a->adam_m, b->adam_m, np);
        assert_memory_equal(a->adam_v, b->adam_v, np);
        assert_memory_equal(a->best_params, b->best_params, np);
    } else {
        assert_null(b->params);
        assert_null(b->best_params);
    }
    size_t nm = sizeof(double) * (size_t)a->n_metrics;
    if (nm) {
        assert_memory_equal(a->best_metrics, b->best_metrics, nm);
        if (nr) assert_memory_equal(a->run_metrics, b->run_metrics, nm * (size_t)a->runs_done);
    } else {
        assert_null(b->best_metrics);
        assert_null(b->run_metrics);
    }
    if (nr) {
        assert_memory_equal(a->run_test_acc, b->run_test_acc, nr);
        assert_memory_equal(a->run_valid_acc, b->run_valid_acc, nr);
    } else {
        assert_null(b->run_test_acc);
        assert_null(b->run_valid_acc);
    }
    const struct {
        const float *a, *b;
        size_t n;
    } table[] = {{a->embed_w, b->embed_w, embed_len(a)},
                 {a->embed_s1, b->embed_s1, embed_len(a)},
                 {a->embed_s2, b->embed_s2, embed_s2_len(a)},
                 {a->embed_best, b->embed_best, embed_best_len(a)}};
    for (int k = 0; k < 4; k++) {
        if (table[k].n)
            assert_memory_equal(table[k].a, table[k].b, sizeof(float) * table[k].n);
        else
            assert_null(table[k].b);
    }
}

static void assert_zeroed(const gnn_checkpoint_t *c)
{
    gnn_checkpoint_t z;
    memset(&z, 0, sizeof z);
    assert_memory_equal(c, &z, sizeof z);
}

/* Shape of dataset name in path (rank 1) and its storage layout. */
static hsize_t dataset_len(const char *path, const char *name, H5D_layout_t *layout)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t s = H5Dget_space(d), p = H5Dget_create_plist(d);
    hsize_t dims[2] = {0, 0};
    assert_int_equal(H5Sget_simple_extent_ndims(s), 1);
    H5Sget_simple_extent_dims(s, dims, NULL);
    if (layout) *layout = H5Pget_layout(p);
    H5Pclose(p);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    return dims[0];
}

/* ---- Round trips ------------------------------------------------------------ */

static void test_round_trip(void **state)
{
    (void)state;
    gnn_checkpoint_t c, d;
    make_ck(&c, 100000, 3, g_seed);
    const char *path = tu_path("rt.ck");
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(tu_temp_files(), 0);
    assert_int_equal(open_objects(), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_int_equal(open_objects(), 0);
    assert_ck_equal(&c, &d);
    assert_true(isnan(d.params[1]));
    assert_true(d.seed == 0xFEDCBA9876543210ull);
    assert_true(d.rng_offset == UINT64_MAX - 7);
    assert_string_equal(d.embed_opt, "adam");
    assert_true(d.embed_dim == 3 && d.embed_rows == 5 && d.embed_all == 1 &&
                d.embed_step == 17 && d.embed_best_kept == 1 && d.embed_lr == 0.05);
    assert_true(isnan(d.embed_w[1]));

    /* Stored as documented: float32 tensors, float64 run arrays, uint64 seed,
     * the table as four 1-D float32 datasets of embed_rows x embed_dim. */
    H5D_layout_t layout;
    assert_int_equal(dataset_len(path, "params", &layout), 100000);
    assert_int_equal(layout, H5D_CONTIGUOUS);
    assert_int_equal(dataset_len(path, "run_valid_acc", NULL), 3);
    static const char *const embed_sets[] = {"embed", "embed_state1", "embed_state2",
                                             "embed_best"};
    for (int k = 0; k < 4; k++) assert_int_equal(dataset_len(path, embed_sets[k], NULL), 15);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(f, "adam_v", H5P_DEFAULT), t = H5Dget_type(ds);
    assert_true(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    H5Tclose(t);
    H5Dclose(ds);
    ds = H5Dopen2(f, "embed_state2", H5P_DEFAULT);
    t = H5Dget_type(ds);
    assert_true(H5Tequal(t, H5T_IEEE_F32LE) > 0);
    H5Tclose(t);
    H5Dclose(ds);
    hid_t a = H5Aopen(f, "seed", H5P_DEFAULT);
    t = H5Aget_type(a);
    assert_true(H5Tequal(t, H5T_STD_U64LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(f, "lr", H5P_DEFAULT);
    t = H5Aget_type(a);
    assert_true(H5Tequal(t, H5T_IEEE_F64LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(f, "embed_lr", H5P_DEFAULT);
    t = H5Aget_type(a);
    assert_true(H5Tequal(t, H5T_IEEE_F64LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(f, "embed_opt", H5P_DEFAULT);
    t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    H5Tclose(t);
    H5Aclose(a);
    H5Fclose(f);

    /* Saving what was loaded gives the same bytes. */
    const char *again = tu_path("rt-again.ck");
    assert_int_equal(gnn_checkpoint_save(again, &d), 0);
    char *b1 = tu_read_file(path), *b2 = tu_read_file(again);
    struct stat s1, s2;
    assert_int_equal(stat(path, &s1), 0);
    assert_int_equal(stat(again, &s2), 0);
    assert_int_equal(s1.st_size, s2.st_size);
    assert_memory_equal(b1, b2, (size_t)s1.st_size);
    free(b1);
    free(b2);
    gnn_checkpoint_free(&d);
    assert_zeroed(&d);
    free_ck(&c);
}

static void test_empty_arrays(void **state)
{
    (void)state;
    gnn_checkpoint_t c, d;
    make_ck(&c, 0, 0, g_seed + 1);
    const char *path = tu_path("empty.ck");
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    assert_int_equal(d.runs_done, 0);
    assert_int_equal(d.n_params, 0);
    /* The empty datasets are there, with size 0. */
    assert_int_equal(dataset_len(path, "run_test_acc", NULL), 0);
    assert_int_equal(dataset_len(path, "run_valid_acc", NULL), 0);
    assert_int_equal(dataset_len(path, "best_params", NULL), 0);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* A table of no rows (embed_dim > 0): its datasets are there, empty,
     * and read back as NULL. */
    make_ck(&c, 5, 1, g_seed + 1);
    free_embed(&c);
    c.embed_rows = 0;
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    assert_true(d.embed_dim == 3 && d.embed_rows == 0);
    assert_int_equal(dataset_len(path, "embed", NULL), 0);
    assert_int_equal(dataset_len(path, "embed_best", NULL), 0);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* All runs finished: runs_done = runs. */
    make_ck(&c, 5, 10, g_seed + 2);
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);
    assert_int_equal(open_objects(), 0);
}

/* Each kind of learnable input table, or none, round trips bitwise. */
static void test_embed_tables(void **state)
{
    (void)state;
    gnn_checkpoint_t c, d;
    const char *path = tu_path("embed.ck");

    /* Adagrad: one state, no embed_state2 (an empty dataset). */
    make_ck(&c, 20, 1, g_seed + 10);
    set_str(c.embed_opt, sizeof c.embed_opt, "adagrad");
    free(c.embed_s2);
    c.embed_s2 = NULL;
    c.embed_all = 0;
    c.embed_step = 3;
    c.embed_lr = 0.25;
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    assert_string_equal(d.embed_opt, "adagrad");
    assert_null(d.embed_s2);
    assert_non_null(d.embed_best);
    assert_int_equal(dataset_len(path, "embed_state1", NULL), 15);
    assert_int_equal(dataset_len(path, "embed_state2", NULL), 0);
    gnn_checkpoint_free(&d);

    /* ... without the best epoch's rows. */
    free(c.embed_best);
    c.embed_best = NULL;
    c.embed_best_kept = 0;
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    assert_null(d.embed_best);
    assert_int_equal(dataset_len(path, "embed_best", NULL), 0);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* No table: embed_opt "-", every count 0, the four datasets empty. */
    make_ck(&c, 20, 1, g_seed + 11);
    no_table(&c);
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    assert_string_equal(d.embed_opt, "-");
    assert_true(d.embed_dim == 0 && d.embed_rows == 0 && d.embed_best_kept == 0 &&
                d.embed_lr == 0.0);
    assert_true(!d.embed_w && !d.embed_s1 && !d.embed_s2 && !d.embed_best);
    static const char *const sets[] = {"embed", "embed_state1", "embed_state2", "embed_best"};
    for (int k = 0; k < 4; k++) assert_int_equal(dataset_len(path, sets[k], NULL), 0);
    gnn_checkpoint_free(&d);
    free_ck(&c);
    assert_int_equal(tu_temp_files(), 0);
    assert_int_equal(open_objects(), 0);
}

static void test_overwrite(void **state)
{
    (void)state;
    gnn_checkpoint_t a, b, d;
    make_ck(&a, 1000, 1, g_seed + 3);
    make_ck(&b, 10, 2, g_seed + 4);
    b.epoch = 7;
    strcpy(b.model, "gcn");
    const char *path = tu_path("over.ck");
    assert_int_equal(gnn_checkpoint_save(path, &a), 0);
    assert_int_equal(gnn_checkpoint_save(path, &b), 0);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&b, &d);
    assert_int_equal(tu_temp_files(), 0);
    gnn_checkpoint_free(&d);
    free_ck(&a);
    free_ck(&b);
}

/* ---- Failed saves ------------------------------------------------------------ */

static void test_save_failures(void **state)
{
    (void)state;
    gnn_checkpoint_t c;
    make_ck(&c, 100, 1, g_seed + 5);

    /* A directory that does not exist. */
    const char *path = tu_path("no-such-dir/ck.h5");
    assert_int_equal(gnn_checkpoint_save(path, &c), GNN_EIO);
    assert_non_null(strstr(gnn_error_message(), path));
    assert_non_null(strstr(gnn_error_message(), "cannot create the temporary file"));
    assert_int_equal(open_objects(), 0);
    assert_false(tu_exists(tu_path("no-such-dir")));
    assert_int_equal(tu_temp_files(), 0);

    /* The rename fails (the target is a directory): the temporary file is
     * removed and the target left as it was. */
    path = tu_path("is-a-dir.ck");
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(gnn_checkpoint_save(path, &c), GNN_EIO);
    assert_non_null(strstr(gnn_error_message(), "cannot rename"));
    assert_int_equal(tu_temp_files(), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(rmdir(path), 0);

    /* Input that load would refuse is not written; an existing file stays. */
    path = tu_path("refused.ck");
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    gnn_checkpoint_t bad = c;
    bad.runs_done = bad.runs + 1;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "runs_done = 11 is outside [0, 10]"));
    bad = c;
    memset(bad.model, 'x', sizeof bad.model);
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "model is not NUL-terminated"));
    bad = c;
    bad.params = NULL;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    bad = c;
    bad.run = 10;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    bad = c;
    bad.layers = 0;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    bad = c;
    bad.dropout = 1.0;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    bad = c;
    bad.embed_s2 = NULL; /* adam keeps two states */
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "embed_state2 is NULL but holds 15 values"));
    bad = c;
    bad.embed_w = NULL;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "embed is NULL but holds 15 values"));
    bad = c;
    set_str(bad.embed_opt, sizeof bad.embed_opt, "sgd");
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "embed_opt = \"sgd\" (expected adam or adagrad)"));
    bad = c;
    bad.embed_opt[0] = '\0';
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "embed_opt is empty"));
    bad = c;
    bad.embed_lr = 0;
    assert_int_equal(gnn_checkpoint_save(path, &bad), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "embed_lr = 0 must be positive"));
    assert_int_equal(tu_temp_files(), 0);
    gnn_checkpoint_t d;
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);
}

/* ---- Bad files --------------------------------------------------------------- */

/* A good checkpoint (100 parameters, 2 runs done) under name. */
static const char *write_good(const char *name)
{
    gnn_checkpoint_t c;
    make_ck(&c, 100, 2, g_seed + 6);
    const char *path = tu_path(name);
    assert_int_equal(gnn_checkpoint_save(path, &c), 0);
    free_ck(&c);
    return path;
}

/* Load fails with code and a message naming path and containing want; c is
 * zeroed and nothing stays open. */
static void expect_load_error(const char *path, int code, const char *want)
{
    gnn_checkpoint_t c;
    memset(&c, 0xab, sizeof c);
    int rc = gnn_checkpoint_load(path, &c);
    if (rc != code || !strstr(gnn_error_message(), want) || !strstr(gnn_error_message(), path))
        fail_msg("load %s: got %s '%s', expected %s containing '%s'", path, gnn_error_name(rc),
                 gnn_error_message(), gnn_error_name(code), want);
    assert_zeroed(&c);
    assert_int_equal(open_objects(), 0);
}

/* Replace attribute name of path by one of type type and n values. */
static void put_attr(const char *path, const char *name, hid_t type, hsize_t n, const void *v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    if (H5Aexists(f, name) > 0) assert_true(H5Adelete(f, name) >= 0);
    hid_t s = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, type, v) >= 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Fclose(f);
}

static void put_attr_str(const char *path, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    put_attr(path, name, t, 0, v);
    H5Tclose(t);
}

static void delete_attr(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Adelete(f, name) >= 0);
    H5Fclose(f);
}

/* Replace dataset name of path by a contiguous one of type and length n. */
static void put_dataset(const char *path, const char *name, hid_t type, hsize_t n)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Ldelete(f, name, H5P_DEFAULT) >= 0);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

static void test_not_a_checkpoint(void **state)
{
    (void)state;
    expect_load_error(tu_path("does-not-exist.ck"), GNN_ENOENT, "No such file");
    expect_load_error(tu_tmpdir(), GNN_EFORMAT, "not a regular file");

    const char *path = tu_write_file("text.ck", "epoch,loss\n1,0.5\n");
    expect_load_error(path, GNN_EFORMAT, "not an HDF5 file");

    /* An HDF5 file without the format attribute. */
    path = tu_path("bare.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 4;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "params", H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
    expect_load_error(path, GNN_EFORMAT, "not a checkpoint file (no 'format' attribute)");

    /* A graph file. */
    gnn_graph_t g;
    gnn_graph_init(&g);
    gnn_vid_t src[] = {0, 1}, dst[] = {1, 2};
    assert_int_equal(gnn_csr_from_edges(3, 2, src, dst, NULL, 0, &g.csr), 0);
    g.directed = 1;
    path = tu_path("graph.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    expect_load_error(path, GNN_EFORMAT, "format is 'gnn-graph', expected 'gnn-checkpoint'");

    /* A format attribute of the wrong type. */
    path = write_good("int-format.ck");
    int64_t one = 1;
    put_attr(path, "format", H5T_STD_I64LE, 0, &one);
    expect_load_error(path, GNN_EFORMAT, "no 'format' attribute");

    /* A file cut short on disk. */
    path = write_good("cut.ck");
    char *bytes = tu_read_file(path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    FILE *fp = fopen(path, "wb");
    fwrite(bytes, 1, (size_t)st.st_size / 2, fp);
    fclose(fp);
    free(bytes);
    gnn_checkpoint_t c;
    int rc = gnn_checkpoint_load(path, &c);
    assert_true(rc == GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), path));
    assert_zeroed(&c);
    assert_int_equal(open_objects(), 0);
}

/* Remove dataset name of path. */
static void delete_dataset(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(f, name, H5P_DEFAULT) >= 0);
    H5Fclose(f);
}

/* Remove from path what version 6 added and is still there: the learnable
 * input table's attributes and datasets. */
static void delete_v6(const char *path)
{
    static const char *const attrs[] = {"embed_opt",  "embed_dim",       "embed_all", "embed_rows",
                                        "embed_step", "embed_best_kept", "embed_lr"};
    static const char *const sets[] = {"embed", "embed_state1", "embed_state2", "embed_best"};
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (H5Aexists(f, attrs[i]) > 0) assert_true(H5Adelete(f, attrs[i]) >= 0);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (H5Lexists(f, sets[i], H5P_DEFAULT) > 0)
            assert_true(H5Ldelete(f, sets[i], H5P_DEFAULT) >= 0);
    H5Fclose(f);
}

/* Remove from path what version 7 added: the graph's fingerprint. */
static void delete_v7(const char *path)
{
    static const char *const attrs[] = {"num_edges", "edge_hash", "train_hash", "train_layout"};
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (H5Aexists(f, attrs[i]) > 0) assert_true(H5Adelete(f, attrs[i]) >= 0);
    H5Fclose(f);
}

static void test_version(void **state)
{
    (void)state;
    const char *path = write_good("v9.ck");
    int64_t v = 9;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    expect_load_error(path, GNN_EVERSION, "checkpoint format version 9 is not supported");
    v = 1; /* before mini-batch training: no mode, fanouts, batch_size */
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    expect_load_error(path, GNN_EVERSION, "checkpoint format version 1 is not supported");
    delete_attr(path, "version");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'version'");

    /* Version 8 added the weights' initialisation; a version 7 file,
     * without it, is read as Glorot. A version 8 file must have it. */
    gnn_checkpoint_t c, d;
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v7.ck");
    delete_attr(path, "init");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'init'");
    v = 7;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_string_equal(d.init, "glorot");
    as_before_v8(&c);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* Version 7 added the graph's fingerprint; a version 6 file, without
     * it, is read with the edges unknown (-1) and the hashes 0. A version
     * 7 file must have each. */
    static const char *const v7s[] = {"num_edges", "edge_hash", "train_hash", "train_layout"};
    for (int i = 0; i < 4; i++) {
        path = write_good("v7-part.ck");
        delete_attr(path, v7s[i]);
        char want[64];
        snprintf(want, sizeof want, "missing attribute '%s'", v7s[i]);
        expect_load_error(path, GNN_EFORMAT, want);
    }
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v6.ck");
    delete_v7(path);
    v = 6;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_true(d.num_edges == -1 && d.edge_hash == 0 && d.train_hash == 0 &&
                d.train_layout == 0);
    as_before_v7(&c);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* Version 6 added the learnable input table; a version 5 file, without
     * it, is read with none (and what a version 5 file may hold besides is
     * not looked at). A version 6 file must have it. */
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v5.ck");
    delete_attr(path, "embed_dim");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'embed_dim'");
    v = 5;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    as_before_v6(&c);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    delete_v6(path);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_string_equal(d.embed_opt, "-");
    assert_true(d.embed_dim == 0 && d.embed_all == 0 && d.embed_rows == 0 &&
                d.embed_step == 0 && d.embed_best_kept == 0 && d.embed_lr == 0.0);
    assert_true(!d.embed_w && !d.embed_s1 && !d.embed_s2 && !d.embed_best);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);
    /* The attributes without the datasets, at version 6. */
    path = write_good("v6-no-embed.ck");
    delete_dataset(path, "embed_state1");
    expect_load_error(path, GNN_EFORMAT, "missing dataset 'embed_state1'");

    /* Version 5 added every metric of the best epochs; a version 4 file,
     * without them, is read with none. */
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v4.ck");
    delete_v6(path);
    delete_attr(path, "n_metrics");
    delete_attr(path, "negatives");
    static const char *const v5s[] = {"task", "decoder", "hits"};
    for (int i = 0; i < 3; i++) delete_attr(path, v5s[i]);
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'task'");
    v = 5;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'task'");
    v = 4;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_true(d.n_metrics == 0 && !d.best_metrics && !d.run_metrics && d.negatives == 0);
    assert_string_equal(d.task, "node");
    assert_string_equal(d.decoder, "-");
    assert_string_equal(d.hits, "-");
    assert_string_equal(d.embed_opt, "-");
    assert_true(d.embed_dim == 0 && !d.embed_w);
    as_before_v5(&c);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* Version 4 added the attention settings; a version 3 file, without
     * them, is read with those members at 0. */
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v3.ck");
    delete_v6(path);
    static const char *const v4[] = {"heads", "out_heads", "attn_dropout", "negative_slope"};
    for (int i = 0; i < 4; i++) delete_attr(path, v4[i]);
    delete_attr(path, "n_metrics");
    delete_attr(path, "negatives");
    v = 4;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'heads'");
    delete_attr(path, "task");
    delete_attr(path, "decoder");
    delete_attr(path, "hits");
    v = 3;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_true(d.heads == 0 && d.out_heads == 0 && d.attn_dropout == 0.0 &&
                d.negative_slope == 0.0);
    c.heads = c.out_heads = 0;
    c.attn_dropout = c.negative_slope = 0.0;
    as_before_v5(&c);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);

    /* Version 3 added the data trained on; a version 2 file, without it,
     * is read with those members at -1 and everything else as written. */
    make_ck(&c, 100, 2, g_seed + 6);
    path = write_good("v2.ck");
    delete_v6(path);
    static const char *const added[] = {"num_nodes", "parts", "train_nodes"};
    for (int i = 0; i < 3; i++) delete_attr(path, added[i]);
    delete_attr(path, "n_metrics");
    delete_attr(path, "task");
    delete_attr(path, "decoder");
    delete_attr(path, "hits");
    delete_attr(path, "negatives");
    v = 3;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'num_nodes'");
    v = 2;
    put_attr(path, "version", H5T_STD_I64LE, 0, &v);
    assert_int_equal(gnn_checkpoint_load(path, &d), 0);
    assert_true(d.num_nodes == -1 && d.parts == -1 && d.train_nodes == -1);
    c.num_nodes = c.parts = c.train_nodes = -1;
    c.heads = c.out_heads = 0;
    c.attn_dropout = c.negative_slope = 0.0;
    as_before_v5(&c);
    assert_ck_equal(&c, &d);
    gnn_checkpoint_free(&d);
    free_ck(&c);
}

static void test_bad_datasets(void **state)
{
    (void)state;
    const char *path = write_good("short-params.ck");
    put_dataset(path, "params", H5T_IEEE_F32LE, 99);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'params' has 99 entries, expected n_params = 100");

    path = write_good("long-best.ck");
    put_dataset(path, "best_params", H5T_IEEE_F32LE, 101);
    expect_load_error(path, GNN_EFORMAT, "dataset 'best_params' has 101 entries");

    path = write_good("short-runs.ck");
    put_dataset(path, "run_test_acc", H5T_IEEE_F64LE, 1);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'run_test_acc' has 1 entries, expected runs_done = 2");

    path = write_good("int-adam.ck");
    put_dataset(path, "adam_m", H5T_STD_I32LE, 100);
    expect_load_error(path, GNN_EFORMAT, "dataset 'adam_m' must hold floats");

    path = write_good("no-adam-v.ck");
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(f, "adam_v", H5P_DEFAULT) >= 0);
    H5Fclose(f);
    expect_load_error(path, GNN_EFORMAT, "missing dataset 'adam_v'");

    path = write_good("matrix.ck");
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(f, "run_valid_acc", H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {2, 1};
    hid_t s = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "run_valid_acc", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
    expect_load_error(path, GNN_EFORMAT, "dataset 'run_valid_acc' has 2 dimensions, expected 1");

    /* The learnable input table's: a length other than embed_rows x
     * embed_dim (15), or one the optimiser does not keep. */
    path = write_good("short-embed.ck");
    put_dataset(path, "embed", H5T_IEEE_F32LE, 14);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'embed' has 14 entries, expected embed_rows x embed_dim = 15");

    path = write_good("long-embed-best.ck");
    put_dataset(path, "embed_best", H5T_IEEE_F32LE, 16);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'embed_best' has 16 entries, expected embed_rows x embed_dim = 15");

    path = write_good("wide-embed.ck");
    int64_t dim = 4;
    put_attr(path, "embed_dim", H5T_STD_I64LE, 0, &dim);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'embed' has 15 entries, expected embed_rows x embed_dim = 20");

    path = write_good("adagrad-two-states.ck");
    put_attr_str(path, "embed_opt", "adagrad");
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'embed_state2' has 15 entries, expected embed_rows x embed_dim = 0");

    path = write_good("best-not-kept.ck");
    int64_t zero = 0;
    put_attr(path, "embed_best_kept", H5T_STD_I64LE, 0, &zero);
    expect_load_error(path, GNN_EFORMAT,
                      "dataset 'embed_best' has 15 entries, expected embed_rows x embed_dim = 0");

    path = write_good("int-embed.ck");
    put_dataset(path, "embed_state1", H5T_STD_I32LE, 15);
    expect_load_error(path, GNN_EFORMAT, "dataset 'embed_state1' must hold floats");

    path = write_good("no-embed-best.ck");
    delete_dataset(path, "embed_best");
    expect_load_error(path, GNN_EFORMAT, "missing dataset 'embed_best'");
}

static void test_bad_attributes(void **state)
{
    (void)state;
    const char *path = write_good("no-lr.ck");
    delete_attr(path, "lr");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'lr'");

    path = write_good("no-model.ck");
    delete_attr(path, "model");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'model'");

    path = write_good("no-seed.ck");
    delete_attr(path, "seed");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'seed'");

    path = write_good("float-epoch.ck");
    double x = 3.0;
    put_attr(path, "epoch", H5T_IEEE_F64LE, 0, &x);
    expect_load_error(path, GNN_EFORMAT, "attribute 'epoch' must be an integer");

    path = write_good("int-dropout.ck");
    int64_t i = 0;
    put_attr(path, "dropout", H5T_STD_I64LE, 0, &i);
    expect_load_error(path, GNN_EFORMAT, "attribute 'dropout' must be a float");

    path = write_good("int-aggr.ck");
    put_attr(path, "aggr", H5T_STD_I64LE, 0, &i);
    expect_load_error(path, GNN_EFORMAT, "attribute 'aggr' must be a string");

    path = write_good("two-epochs.ck");
    int64_t two[2] = {1, 2};
    put_attr(path, "epoch", H5T_STD_I64LE, 2, two);
    expect_load_error(path, GNN_EFORMAT, "attribute 'epoch' holds 2 values, expected one");

    path = write_good("two-lrs.ck");
    double lrs[2] = {0.1, 0.2};
    put_attr(path, "lr", H5T_IEEE_F64LE, 2, lrs);
    expect_load_error(path, GNN_EFORMAT, "attribute 'lr' holds 2 values");

    path = write_good("long-model.ck");
    put_attr_str(path, "model", "graph-attention-v2");
    expect_load_error(path, GNN_EFORMAT, "attribute 'model' is longer than 15 characters");

    path = write_good("empty-scope.ck");
    put_attr_str(path, "decay_scope", "");
    expect_load_error(path, GNN_EFORMAT, "decay_scope is empty");

    path = write_good("bad-init.ck");
    put_attr_str(path, "init", "xavier");
    expect_load_error(path, GNN_EFORMAT, "init = \"xavier\" (expected glorot or fan-in)");

    path = write_good("empty-embed-opt.ck");
    put_attr_str(path, "embed_opt", "");
    expect_load_error(path, GNN_EFORMAT, "embed_opt is empty");

    path = write_good("long-embed-opt.ck");
    put_attr_str(path, "embed_opt", "adagrad-with-decay");
    expect_load_error(path, GNN_EFORMAT, "attribute 'embed_opt' is longer than 15 characters");

    path = write_good("int-embed-opt.ck");
    put_attr(path, "embed_opt", H5T_STD_I64LE, 0, &i);
    expect_load_error(path, GNN_EFORMAT, "attribute 'embed_opt' must be a string");

    path = write_good("float-embed-rows.ck");
    put_attr(path, "embed_rows", H5T_IEEE_F64LE, 0, &x);
    expect_load_error(path, GNN_EFORMAT, "attribute 'embed_rows' must be an integer");

    path = write_good("no-embed-lr.ck");
    delete_attr(path, "embed_lr");
    expect_load_error(path, GNN_EFORMAT, "missing attribute 'embed_lr'");

    path = write_good("negative-seed.ck");
    int64_t neg = -5;
    put_attr(path, "seed", H5T_STD_I64LE, 0, &neg);
    expect_load_error(path, GNN_EFORMAT, "attribute 'seed' = -5 must not be negative");
    /* A non-negative signed seed, as a writer without uint64 might store it. */
    int64_t pos = 77;
    put_attr(path, "seed", H5T_STD_I64LE, 0, &pos);
    gnn_checkpoint_t c;
    assert_int_equal(gnn_checkpoint_load(path, &c), 0);
    assert_true(c.seed == 77);
    gnn_checkpoint_free(&c);
}

static void test_bad_values(void **state)
{
    (void)state;
    struct {
        const char *attr;
        int64_t v;
        const char *want;
    } cases[] = {
        {"runs_done", 11, "runs_done = 11 is outside [0, 10]"},
        {"runs_done", -1, "runs_done = -1 is outside [0, 10]"},
        {"run", 10, "run = 10 is outside [0, 9]"},
        {"run", -1, "run = -1 is outside [0, 9]"},
        {"runs", 0, "runs = 0, expected at least 1"},
        {"epoch", -1, "epoch = -1, expected at least 0"},
        {"step", -2, "step = -2, expected at least 0"},
        {"layers", 0, "layers = 0, expected at least 1"},
        {"hidden", -3, "hidden = -3, expected at least 1"},
        {"n_params", -100, "n_params = -100, expected at least 0"},
        {"best_epoch", -2, "best_epoch = -2, expected at least -1"},
        {"bad_evals", -1, "bad_evals = -1, expected at least 0"},
        {"normalize_features", 2, "normalize_features = 2 is outside [0, 1]"},
        {"num_nodes", 0, "num_nodes = 0, expected at least 1"},
        {"parts", -1, "parts = -1, expected at least 0"},
        {"train_nodes", 0, "train_nodes = 0 is outside [1, 2708]"},
        {"train_nodes", 2709, "train_nodes = 2709 is outside [1, 2708]"},
        {"num_edges", -1, "num_edges = -1, expected at least 0"},
        {"embed_dim", -1, "embed_dim = -1 is outside [0, 1048576]"},
        {"embed_dim", 1048577, "embed_dim = 1048577 is outside [0, 1048576]"},
        {"embed_all", 2, "embed_all = 2 is outside [0, 1]"},
        {"embed_rows", -1, "embed_rows = -1 is outside [0, 3074457345618258602]"},
        {"embed_rows", INT64_MAX, "embed_rows = 9223372036854775807 is outside [0, "},
        {"embed_step", -1, "embed_step = -1, expected at least 0"},
        {"embed_best_kept", -1, "embed_best_kept = -1 is outside [0, 1]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = write_good("values.ck");
        put_attr(path, cases[k].attr, H5T_STD_I64LE, 0, &cases[k].v);
        expect_load_error(path, GNN_EFORMAT, cases[k].want);
    }
    const char *path = write_good("dropout.ck");
    double v = NAN;
    put_attr(path, "dropout", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "dropout = nan is outside [0, 1)");
    path = write_good("lr.ck");
    v = 0;
    put_attr(path, "lr", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "lr = 0 must be positive");
    path = write_good("decay.ck");
    v = -0.1;
    put_attr(path, "weight_decay", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "weight_decay = -0.1 must not be negative");

    /* The learnable input table's optimiser and rate, checked when there
     * is a table (embed_dim > 0) and only then. */
    path = write_good("embed-opt.ck");
    put_attr_str(path, "embed_opt", "sgd");
    expect_load_error(path, GNN_EFORMAT, "embed_opt = \"sgd\" (expected adam or adagrad)");
    path = write_good("embed-opt-none.ck");
    put_attr_str(path, "embed_opt", "-");
    expect_load_error(path, GNN_EFORMAT, "embed_opt = \"-\" (expected adam or adagrad)");
    path = write_good("embed-lr.ck");
    v = 0;
    put_attr(path, "embed_lr", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "embed_lr = 0 must be positive");
    v = -0.5;
    put_attr(path, "embed_lr", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "embed_lr = -0.5 must be positive");
    v = INFINITY;
    put_attr(path, "embed_lr", H5T_IEEE_F64LE, 0, &v);
    expect_load_error(path, GNN_EFORMAT, "embed_lr = inf must be positive");

    /* Without a table (embed_dim 0, its datasets empty), neither matters. */
    path = write_good("no-table.ck");
    int64_t zero = 0;
    put_attr(path, "embed_dim", H5T_STD_I64LE, 0, &zero);
    put_attr_str(path, "embed_opt", "sgd");
    v = 0;
    put_attr(path, "embed_lr", H5T_IEEE_F64LE, 0, &v);
    static const char *const sets[] = {"embed", "embed_state1", "embed_state2", "embed_best"};
    for (int k = 0; k < 4; k++) put_dataset(path, sets[k], H5T_IEEE_F32LE, 0);
    gnn_checkpoint_t c;
    assert_int_equal(gnn_checkpoint_load(path, &c), 0);
    assert_string_equal(c.embed_opt, "sgd");
    assert_true(c.embed_dim == 0 && c.embed_rows == 5 && !c.embed_w && !c.embed_best);
    gnn_checkpoint_free(&c);
}

/* ---- Allocation failure -------------------------------------------------------- */

static void test_alloc_failure(void **state)
{
    (void)state;
    const char *path = write_good("oom.ck");
    int failures = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_checkpoint_t c;
        memset(&c, 0xab, sizeof c);
        gnn_alloc_fail_at(nth);
        int rc = gnn_checkpoint_load(path, &c);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(rc, 0);
            gnn_checkpoint_free(&c);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_int_equal(gnn_error_code(), GNN_ENOMEM);
        assert_non_null(strstr(gnn_error_message(), path));
        assert_zeroed(&c);
        assert_int_equal(open_objects(), 0);
        failures++;
    }
    assert_int_equal(failures, 12); /* the twelve arrays, the table's four included */

    /* Save and prediction writes: the target is never created half-way. */
    gnn_checkpoint_t c;
    make_ck(&c, 50, 1, g_seed + 7);
    const char *out = tu_path("oom-save.ck");
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        int rc = gnn_checkpoint_save(out, &c);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(rc, 0);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_false(tu_exists(out));
        assert_int_equal(tu_temp_files(), 0);
        assert_int_equal(open_objects(), 0);
    }
    assert_true(tu_exists(out));
    free_ck(&c);

    float logits[6] = {0}, hidden[6] = {0};
    int64_t pred[3] = {0, 1, 0};
    out = tu_path("oom-pred.h5");
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        int rc = gnn_predictions_write(out, 3, NULL, 2, logits, pred, 2, hidden);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(rc, 0);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_false(tu_exists(out));
        assert_int_equal(tu_temp_files(), 0);
        assert_int_equal(open_objects(), 0);
    }
    assert_true(tu_exists(out));
}

/* ---- Predictions ------------------------------------------------------------------ */

static int64_t get_i64_attr(hid_t f, const char *name)
{
    int64_t v = -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    return v;
}

/* Read dataset name (rank dims given by rows, cols; cols 0 = rank 1) of
 * memory type mtype into buf and check that it is chunked. */
static void read_dataset(hid_t f, const char *name, hid_t mtype, hsize_t rows, hsize_t cols,
                         void *buf)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    hid_t s = H5Dget_space(d), p = H5Dget_create_plist(d);
    hsize_t dims[2] = {0, 0};
    int rank = H5Sget_simple_extent_ndims(s);
    assert_int_equal(rank, cols ? 2 : 1);
    H5Sget_simple_extent_dims(s, dims, NULL);
    assert_int_equal(dims[0], rows);
    if (cols) assert_int_equal(dims[1], cols);
    assert_int_equal(H5Pget_layout(p), H5D_CHUNKED);
    assert_int_equal(H5Pget_nfilters(p), 0); /* uncompressed */
    if (rows) assert_true(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Pclose(p);
    H5Sclose(s);
    H5Dclose(d);
}

static void check_predictions(const char *path, int64_t n, const int64_t *node_id, int64_t classes,
                              const float *logits, const int64_t *pred, int64_t hdim,
                              const float *hidden)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    char format[32] = {0};
    hid_t a = H5Aopen(f, "format", H5P_DEFAULT), t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_true(H5Tget_size(t) < sizeof format);
    assert_true(H5Aread(a, t, format) >= 0);
    assert_string_equal(format, "gnn-predictions");
    H5Tclose(t);
    H5Aclose(a);
    assert_int_equal(get_i64_attr(f, "version"), 1);
    assert_int_equal(get_i64_attr(f, "num_nodes"), n);
    assert_int_equal(get_i64_attr(f, "num_classes"), classes);
    assert_int_equal(get_i64_attr(f, "hidden_dim"), hdim);

    size_t un = (size_t)n;
    int64_t *ids = malloc(sizeof(int64_t) * (un + 1)), *pr = malloc(sizeof(int64_t) * (un + 1));
    float *lg = malloc(sizeof(float) * (un * (size_t)classes + 1));
    float *hd = malloc(sizeof(float) * (un * (size_t)hdim + 1));
    read_dataset(f, "node_id", H5T_NATIVE_INT64, un, 0, ids);
    read_dataset(f, "logits", H5T_NATIVE_FLOAT, un, (hsize_t)classes, lg);
    read_dataset(f, "pred", H5T_NATIVE_INT64, un, 0, pr);
    read_dataset(f, "hidden", H5T_NATIVE_FLOAT, un, (hsize_t)hdim, hd);
    for (int64_t i = 0; i < n; i++) assert_int_equal(ids[i], node_id ? node_id[i] : i);
    if (n) {
        assert_memory_equal(lg, logits, sizeof(float) * un * (size_t)classes);
        assert_memory_equal(pr, pred, sizeof(int64_t) * un);
        assert_memory_equal(hd, hidden, sizeof(float) * un * (size_t)hdim);
    }
    free(ids);
    free(pr);
    free(lg);
    free(hd);
    H5Fclose(f);
    assert_int_equal(open_objects(), 0);
}

static void test_predictions(void **state)
{
    (void)state;
    uint64_t s = g_seed | 1;
    const int64_t n = 3000, classes = 7, hdim = 33;
    int64_t *ids = malloc(sizeof(int64_t) * n), *pred = malloc(sizeof(int64_t) * n);
    float *logits = malloc(sizeof(float) * n * classes), *hidden = malloc(sizeof(float) * n * hdim);
    for (int64_t i = 0; i < n; i++) {
        ids[i] = 1000000007LL * i + 11;
        int64_t best = 0;
        for (int64_t k = 0; k < classes; k++) {
            logits[i * classes + k] = (float)(rng_next(&s) % 100000) / 977.0f - 50.0f;
            if (logits[i * classes + k] > logits[i * classes + best]) best = k;
        }
        pred[i] = best;
        for (int64_t k = 0; k < hdim; k++)
            hidden[i * hdim + k] = (float)(rng_next(&s) % 1000) / 3.0f;
    }
    const char *path = tu_path("pred.h5");
    assert_int_equal(gnn_predictions_write(path, n, ids, classes, logits, pred, hdim, hidden), 0);
    check_predictions(path, n, ids, classes, logits, pred, hdim, hidden);
    /* Without ids (0..n-1), replacing the file. */
    assert_int_equal(gnn_predictions_write(path, n, NULL, classes, logits, pred, hdim, hidden), 0);
    check_predictions(path, n, NULL, classes, logits, pred, hdim, hidden);
    /* No nodes. */
    assert_int_equal(gnn_predictions_write(path, 0, NULL, classes, NULL, NULL, hdim, NULL), 0);
    check_predictions(path, 0, NULL, classes, NULL, NULL, hdim, NULL);
    assert_int_equal(tu_temp_files(), 0);

    /* Refusals leave the last file. */
    pred[5] = classes;
    assert_int_equal(gnn_predictions_write(path, n, ids, classes, logits, pred, hdim, hidden),
                     GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "pred[5] = 7 is outside [0, 7)"));
    assert_int_equal(gnn_predictions_write(path, n, ids, 0, logits, pred, hdim, hidden),
                     GNN_EINVAL);
    assert_int_equal(gnn_predictions_write(path, n, ids, classes, NULL, pred, hdim, hidden),
                     GNN_EINVAL);
    assert_int_equal(gnn_predictions_write(tu_path("none/p.h5"), 1, ids, classes, logits, pred,
                                           hdim, hidden),
                     GNN_EIO);
    check_predictions(path, 0, NULL, classes, NULL, NULL, hdim, NULL);
    assert_int_equal(tu_temp_files(), 0);
    free(ids);
    free(pred);
    free(logits);
    free(hidden);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_empty_arrays),
        cmocka_unit_test(test_embed_tables),
        cmocka_unit_test(test_overwrite),
        cmocka_unit_test(test_save_failures),
        cmocka_unit_test(test_not_a_checkpoint),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_bad_datasets),
        cmocka_unit_test(test_bad_attributes),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_predictions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
