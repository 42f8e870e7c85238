/*
 * The libraries of the CUDA backend loaded on demand (kernels/cuda/culibs.h):
 * libcublas and libcusparse of the toolkit the project was built with must
 * load and hold every entry point the backend calls. Needs no GPU, so it
 * runs in CI: a renamed symbol or a missing library fails here rather than
 * when a CUDA backend first opens on a GPU machine. That gnn-train does not
 * link them is checked by lint_no_cuda_libs_linked (tests/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "kernels/cuda/culibs.h"

#include <stdio.h>

static void test_load_finds_every_symbol(void **state)
{
    (void)state;
    int rc = gnn__culibs_load();
    if (rc != 0) fprintf(stderr, "load failed: %s\n", gnn_error_message());
    assert_int_equal(rc, 0);
}

static void test_second_load_gives_the_same_result(void **state)
{
    (void)state;
    assert_int_equal(gnn__culibs_load(), 0);
    assert_int_equal(gnn__culibs_load(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_finds_every_symbol),
        cmocka_unit_test(test_second_load_gives_the_same_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
