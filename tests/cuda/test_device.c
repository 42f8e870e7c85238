/*
 * CUDA device smoke test: allocation, copies and the fill kernel against
 * host values. Without a device it prints SKIPPED and exits 77, which CTest
 * reports as skipped (never as passed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "kernels/cuda/device.h"

#include <stdio.h>
#include <stdlib.h>

static void test_fill_and_copy(void **state)
{
    (void)state;
    const size_t n = 1000003; /* not a multiple of the block size */
    float *h = malloc(n * sizeof *h);
    void *d = NULL;
    assert_non_null(h);
    assert_int_equal(gnn_cuda_alloc(n * sizeof(float), &d), 0);
    assert_int_equal(gnn_cuda_fill_f32(d, n, 2.5f), 0);
    assert_int_equal(gnn_cuda_copy_to_host(h, d, n * sizeof(float)), 0);
    for (size_t i = 0; i < n; i++) assert_true(h[i] == 2.5f);
    for (size_t i = 0; i < n; i++) h[i] = (float)i;
    assert_int_equal(gnn_cuda_copy_to_device(d, h, n * sizeof(float)), 0);
    for (size_t i = 0; i < n; i++) h[i] = -1.0f;
    assert_int_equal(gnn_cuda_copy_to_host(h, d, n * sizeof(float)), 0);
    for (size_t i = 0; i < n; i += 9973) assert_true(h[i] == (float)i);
    gnn_cuda_free(d);
    free(h);
}

static void test_oversized_alloc_fails_cleanly(void **state)
{
    (void)state;
    void *d = NULL;
    int rc = gnn_cuda_alloc((size_t)1 << 62, &d);
    assert_int_equal(rc, GNN_ENOMEM);
    assert_null(d);
}

int main(void)
{
    int n = 0;
    int rc = gnn_cuda_device_count(&n);
    if (rc != 0 || n == 0) {
        printf("SKIPPED: no CUDA device on this machine%s%s\n", rc ? ": " : "",
               rc ? gnn_error_message() : "");
        return 77;
    }
    char name[256];
    size_t mem = 0;
    if (gnn_cuda_device_info(0, name, sizeof name, &mem) == 0)
        printf("device 0: %s, %.1f GiB\n", name, (double)mem / (1u << 30));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_and_copy),
        cmocka_unit_test(test_oversized_alloc_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
