/*
 * The allocation wrapper: overflow checks, the failure-injection hook
 * (exactly the Nth allocation fails and records GNN_ENOMEM), counting,
 * gnn_alloc_keep_freed (a freed array of a few MiB stays in malloc's
 * heap for the next one), gnn_grow (batch buffers that only grow), and
 * gnn_move_release (a copy that gives the source's pages back).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void test_basic(void **state)
{
    (void)state;
    gnn_alloc_fail_at(0);
    int *a = gnn_calloc(10, sizeof *a);
    assert_non_null(a);
    for (int i = 0; i < 10; i++) assert_int_equal(a[i], 0);
    a = gnn_realloc_array(a, 1000, sizeof *a);
    assert_non_null(a);
    char *s = gnn_strdup("halo");
    assert_string_equal(s, "halo");
    assert_int_equal(gnn_alloc_count(), 3);
    gnn_free(a);
    gnn_free(s);
    gnn_free(NULL);
}

static void test_overflow(void **state)
{
    (void)state;
    gnn_error_clear();
    assert_null(gnn_malloc_array(SIZE_MAX / 2, 4));
    assert_int_equal(gnn_error_code(), GNN_ENOMEM);
    assert_null(gnn_calloc(SIZE_MAX / 8, 16));
    void *p = gnn_malloc(8);
    assert_null(gnn_realloc_array(p, SIZE_MAX / 4, 8));
    gnn_free(p); /* a failed realloc leaves p valid */
}

static void test_nth_fails(void **state)
{
    (void)state;
    for (int nth = 1; nth <= 4; nth++) {
        gnn_alloc_fail_at(nth);
        void *p[4];
        for (int i = 0; i < 4; i++) {
            gnn_error_clear();
            p[i] = gnn_malloc(16);
            if (i + 1 == nth) {
                assert_null(p[i]);
                assert_int_equal(gnn_error_code(), GNN_ENOMEM);
                assert_non_null(strstr(gnn_error_message(), "16 bytes"));
            } else {
                assert_non_null(p[i]);
            }
        }
        assert_true(gnn_alloc_failed());
        for (int i = 0; i < 4; i++) gnn_free(p[i]);
    }
    gnn_alloc_fail_at(0);
    void *q = gnn_malloc(1);
    assert_non_null(q);
    assert_false(gnn_alloc_failed());
    gnn_free(q);
}

/* gnn_grow: room for what is asked (64-byte aligned), the buffer kept
 * while it has it, replaced with a quarter more when not; a failed
 * allocation leaves buffer and count as they were. */
static void test_grow(void **state)
{
    (void)state;
    int64_t *a = NULL;
    size_t cap = 0;
    assert_int_equal(gnn_grow((void **)&a, &cap, 100, sizeof *a), 0);
    assert_non_null(a);
    assert_true(cap >= 100 && (uintptr_t)a % 64 == 0);
    for (size_t i = 0; i < 100; i++) a[i] = (int64_t)i;
    int64_t *same = a;
    size_t cap0 = cap;
    assert_int_equal(gnn_grow((void **)&a, &cap, cap0, sizeof *a), 0);
    assert_ptr_equal(a, same);
    assert_int_equal(cap, cap0);
    gnn_alloc_fail_at(1);
    assert_int_equal(gnn_grow((void **)&a, &cap, 10 * cap0, sizeof *a), GNN_ENOMEM);
    assert_ptr_equal(a, same);
    assert_int_equal(cap, cap0);
    gnn_alloc_fail_at(0);
    assert_int_equal(gnn_grow((void **)&a, &cap, 10 * cap0, sizeof *a), 0);
    assert_true(cap >= 10 * cap0 + 10 * cap0 / 4);
    a[10 * cap0 - 1] = 7; /* all of it is there */
    gnn_free(a);
}

/* After gnn_alloc_keep_freed, 8 MiB come from the heap (no mapping of
 * their own) and stay there once freed (not trimmed): the next batch's
 * arrays reuse those pages instead of faulting in fresh ones. */
static void test_keep_freed(void **state)
{
    (void)state;
    int rc = gnn_alloc_keep_freed();
#ifdef GNN_TEST_SANITIZED
    if (rc < 0) return; /* a sanitizer's allocator ignores mallopt */
#endif
#ifndef __GLIBC__
    if (rc < 0) skip(); /* no mallopt: nothing to check */
#endif
    assert_int_equal(rc, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    const size_t n = (size_t)8 << 20;
    struct mallinfo2 before = mallinfo2();
    char *p = gnn_malloc(n);
    assert_non_null(p);
    memset(p, 1, n);
    struct mallinfo2 during = mallinfo2();
    assert_int_equal(during.hblkhd, before.hblkhd); /* not mapped on its own */
    gnn_free(p);
    struct mallinfo2 after = mallinfo2();
    assert_true(after.arena >= n); /* the heap kept the freed pages */
    assert_true(after.fordblks >= n);
#endif
}

/* gnn_move_release from a source that starts and ends inside pages: the
 * copy is exact; the source's whole pages read as zeros after (given
 * back), the bytes of its first and last partial pages stay. */
static void test_move_release(void **state)
{
    (void)state;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = ((size_t)6 << 20) + 23;
    unsigned char *base = gnn_alloc_large(bytes + 2 * page), *dst = gnn_malloc(bytes);
    assert_non_null(base);
    assert_non_null(dst);
    unsigned char *src = base + 100; /* not on a page boundary */
    for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)(1 + i % 251);
    gnn_move_release(dst, src, bytes);
    for (size_t i = 0; i < bytes; i++)
        if (dst[i] != (unsigned char)(1 + i % 251)) fail_msg("byte %zu not copied", i);
    uintptr_t lo = ((uintptr_t)src + page - 1) & ~(uintptr_t)(page - 1),
              hi = ((uintptr_t)src + bytes) & ~(uintptr_t)(page - 1);
    size_t zeros = 0;
    for (size_t i = 0; i < bytes; i++) {
        uintptr_t a = (uintptr_t)(src + i);
        if (a >= lo && a < hi) {
            zeros += src[i] == 0;
        } else if (src[i] != (unsigned char)(1 + i % 251)) {
            fail_msg("byte %zu outside the whole pages changed", i);
        }
    }
#ifdef __linux__
    assert_int_equal(zeros, hi - lo); /* MADV_DONTNEED: anonymous pages read as zeros */
#endif
    gnn_free(base);
    gnn_free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_nth_fails),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_keep_freed),
        cmocka_unit_test(test_move_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
