/*
 * The safetensors writer (trainer/safetensors.h): the file's bytes read
 * back by hand (the header length, the JSON header with its metadata,
 * shapes and offsets, the 8-byte padding, the data, a transposed matrix
 * written as its transpose), a replaced file, and the refusals: bad names,
 * duplicate names, bad shapes (nothing written), an unwritable path (no
 * file under either name).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "trainer/safetensors.h"
#include "tests/common/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file at path (malloc'd), its length in *len. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static void test_layout(void **state)
{
    (void)state;
    /* a: 2 x 3 as stored; w: written 3 x 2 from its 2 x 3 transpose; b: 3 */
    const float a[6] = {1, 2, 3, 4, 5, 6}, w[6] = {10, 11, 12, 13, 14, 15}, b[3] = {-1, 0.5f, 7};
    gnn_st_tensor_t t[3] = {
        {"convs.0.lin.weight", 2, {3, 2}, w, 1},
        {"a", 2, {2, 3}, a, 0},
        {"convs.0.bias", 1, {3}, b, 0},
    };
    const char *meta[4] = {"model", "gcn", "note", "quote \" and \\ and \xc3\xa9"};
    const char *path = tu_path("m.safetensors");
    assert_int_equal(gnn_safetensors_write(path, t, 3, meta, 2), 0);
    size_t len;
    unsigned char *f = slurp(path, &len);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++) n |= (uint64_t)f[k] << (8 * k);
    assert_int_equal(n % 8, 0);
    assert_int_equal(len, 8 + n + (6 + 6 + 3) * sizeof(float));
    char *h = strndup((const char *)f + 8, n);
    assert_non_null(h);
    assert_non_null(strstr(h, "\"__metadata__\":{\"model\":\"gcn\",\"note\":\"quote \\\" and \\\\ and \xc3\xa9\"}"));
    assert_non_null(strstr(h, "\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]}"));
    assert_non_null(strstr(h, "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,48]}"));
    assert_non_null(strstr(h, "\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[48,60]}"));
    size_t end = strlen(h);
    while (end > 0 && h[end - 1] == ' ') end--;
    assert_int_equal(h[end - 1], '}');
    assert_true(n - end < 8);
    const float *d = (const float *)(f + 8 + n);
    const float want[15] = {10, 13, 11, 14, 12, 15, 1, 2, 3, 4, 5, 6, -1, 0.5f, 7};
    assert_memory_equal(d, want, sizeof want);
    free(h);
    free(f);
    /* replaced, no metadata */
    assert_int_equal(gnn_safetensors_write(path, t + 2, 1, NULL, 0), 0);
    f = slurp(path, &len);
    assert_non_null(strstr((const char *)f + 8, "{\"convs.0.bias\":{"));
    assert_null(strstr((const char *)f + 8, "__metadata__"));
    free(f);
    assert_int_equal(tu_temp_files(), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    const float x[4] = {0};
    const char *path = tu_path("bad.safetensors");
    struct {
        gnn_st_tensor_t t[2];
        int n;
        const char *msg;
    } cases[] = {
        {{{"", 1, {4}, x, 0}}, 1, "no usable name"},
        {{{"__metadata__", 1, {4}, x, 0}}, 1, "no usable name"},
        {{{"a\"b", 1, {4}, x, 0}}, 1, "not plain ASCII"},
        {{{"a", 1, {4}, x, 0}, {"a", 1, {4}, x, 0}}, 2, "two tensors named a"},
        {{{"a", 4, {1, 1, 1}, x, 0}}, 1, "bad shape"},
        {{{"a", 1, {4}, x, 1}}, 1, "bad shape"},
        {{{"a", 1, {4}, NULL, 0}}, 1, "bad shape"},
        {{{"a", 2, {2, 0}, x, 0}}, 1, "dimension 1 is 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(gnn_safetensors_write(path, cases[i].t, cases[i].n, NULL, 0), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), cases[i].msg));
        assert_false(tu_exists(path));
    }
    gnn_st_tensor_t t = {"a", 1, {4}, x, 0};
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no/such/dir/m.safetensors", tu_tmpdir());
    assert_int_equal(gnn_safetensors_write(missing, &t, 1, NULL, 0), GNN_EIO);
    assert_non_null(strstr(gnn_error_message(), missing));
    assert_int_equal(tu_temp_files(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
