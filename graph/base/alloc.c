/*
 * Allocation wrappers with overflow checks and a failure-injection hook.
 *
 * The hook counts allocations atomically across threads; when the count
 * reaches the armed value that one allocation returns NULL (and records
 * GNN_ENOMEM like a real failure). Tests arm it for N = 1, 2, ... until a
 * call succeeds, checking a clean error and no leak each time.
 */
#include "graph/base/alloc.h"

#include "graph/base/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static atomic_llong g_count;
static atomic_llong g_fail_at;
static atomic_int g_failed;

void gnn_alloc_fail_at(int64_t nth)
{
    atomic_store(&g_count, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail_at, nth);
}

int64_t gnn_alloc_count(void) { return atomic_load(&g_count); }
int gnn_alloc_failed(void) { return atomic_load(&g_failed); }

/* Count one allocation; true when this one must fail. */
static int injected_failure(void)
{
    long long n = atomic_fetch_add(&g_count, 1) + 1;
    long long at = atomic_load(&g_fail_at);
    if (at > 0 && n == at) {
        atomic_store(&g_failed, 1);
        return 1;
    }
    return 0;
}

static void *oom(size_t size, const char *file, int line)
{
    gnn__error_set(GNN_ENOMEM, file, line, "out of memory (allocating %zu bytes)", size);
    return NULL;
}

void *gnn__malloc(size_t size, const char *file, int line)
{
    if (injected_failure()) return oom(size, file, line);
    void *p = malloc(size ? size : 1);
    return p ? p : oom(size, file, line);
}

void *gnn__calloc(size_t n, size_t size, const char *file, int line)
{
    if (size && n > SIZE_MAX / size) return oom(SIZE_MAX, file, line);
    if (injected_failure()) return oom(n * size, file, line);
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size, file, line);
}

void *gnn__malloc_array(size_t n, size_t size, const char *file, int line)
{
    if (size && n > SIZE_MAX / size) return oom(SIZE_MAX, file, line);
    return gnn__malloc(n * size, file, line);
}

void *gnn__realloc_array(void *p, size_t n, size_t size, const char *file, int line)
{
    if (size && n > SIZE_MAX / size) return oom(SIZE_MAX, file, line);
    if (injected_failure()) return oom(n * size, file, line);
    size_t bytes = n * size;
    void *q = realloc(p, bytes ? bytes : 1);
    return q ? q : oom(n * size, file, line);
}

char *gnn__strdup(const char *s, const char *file, int line)
{
    size_t len = strlen(s) + 1;
    char *p = gnn__malloc(len, file, line);
    if (p) memcpy(p, s, len);
    return p;
}

void *gnn__aligned_alloc(size_t align, size_t size, const char *file, int line)
{
    if (size > SIZE_MAX - align) return oom(SIZE_MAX, file, line);
    size_t bytes = size ? (size + align - 1) / align * align : align;
    if (injected_failure()) return oom(size, file, line);
    void *p = NULL;
    if (posix_memalign(&p, align, bytes)) return oom(size, file, line);
    return p;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *gnn__alloc_large(size_t size, const char *file, int line)
{
    if (size < HUGE_PAGE) return gnn__aligned_alloc(64, size, file, line);
    void *p = gnn__aligned_alloc(HUGE_PAGE, size, file, line);
#ifdef MADV_HUGEPAGE
    /* Advice only: where the kernel has no huge pages the memory works as is. */
    if (p) (void)madvise(p, (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return p;
}

int gnn_grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (*buf && *cap >= need) return 0;
    size_t want = need + need / 4 + 64; /* headroom: batches vary in size */
    void *p = gnn_alloc_large(want * elem);
    if (!p) return GNN_ENOMEM;
    gnn_free(*buf);
    *buf = p;
    *cap = want;
    return 0;
}

void gnn_free(void *p) { free(p); }

void gnn_move_release(void *dst, void *src, size_t bytes)
{
    const size_t chunk = (size_t)64 << 20;
    const long ps = sysconf(_SC_PAGESIZE);
    const uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t done = ((uintptr_t)src + page - 1) & ~(page - 1); /* released below this */
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        memcpy((char *)dst + off, (char *)src + off, n);
        uintptr_t end = ((uintptr_t)src + off + n) & ~(page - 1);
        /* Advice only: where it fails the pages stay until src is freed. */
        if (end > done) (void)madvise((void *)done, end - done, MADV_DONTNEED);
        if (end > done) done = end;
    }
}

#define KEEP_MMAP_THRESHOLD ((int)32 << 20) /* mallopt(3)'s maximum on 64-bit */
#define KEEP_TRIM_THRESHOLD ((int)256 << 20)

int gnn_alloc_keep_freed(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    /* mallopt returns 1 when it took the setting. */
    if (mallopt(M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD) != 1) return -1;
    if (mallopt(M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD) != 1) return -1;
    return 0;
#else
    return -1;
#endif
}
