/*
 * The one allocator of library code.
 *
 * Every allocation of the libraries goes through these wrappers so that a
 * test can make the Nth allocation fail (gnn_alloc_fail_at) and check that
 * each failure path returns GNN_ENOMEM and releases what it held. Array
 * variants check the size product for overflow. On failure they record
 * GNN_ENOMEM (see error.h) and return NULL; gnn_free(NULL) is a no-op.
 */
#ifndef GNN_BASE_ALLOC_H
#define GNN_BASE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *gnn__malloc(size_t size, const char *file, int line);
void *gnn__calloc(size_t n, size_t size, const char *file, int line);
void *gnn__malloc_array(size_t n, size_t size, const char *file, int line);
void *gnn__realloc_array(void *p, size_t n, size_t size, const char *file, int line);
char *gnn__strdup(const char *s, const char *file, int line);
/* size bytes (size rounded up to a multiple of align, at least align) at an
 * address that is a multiple of align (a power of two >= sizeof(void *));
 * released with gnn_free. */
void *gnn__aligned_alloc(size_t align, size_t size, const char *file, int line);
/* A large array (features, activations): 64-byte aligned, and from 2 MiB
 * on aligned to 2 MiB and marked for transparent huge pages (madvise), which
 * spares the TLB misses of random row gathers. Released with gnn_free. */
void *gnn__alloc_large(size_t size, const char *file, int line);
void gnn_free(void *p);
/* *buf with room for need elements of elem bytes: kept when it has it,
 * else replaced (contents not kept) by an array from gnn_alloc_large with
 * a quarter more room, *cap its element count. For buffers that grow from
 * batch to batch. 0, or GNN_ENOMEM (recorded; *buf and *cap unchanged). */
int gnn_grow(void **buf, size_t *cap, size_t need, size_t elem);
/* Copy bytes of src into dst (not overlapping), giving src's whole pages
 * back to the system as they are copied, so that moving a large array into
 * a larger one never holds both in memory. src stays allocated (freed as
 * usual) but its contents are lost: the pages wholly inside it read as
 * zeros after (the bytes on its first and last partial pages stay). */
void gnn_move_release(void *dst, void *src, size_t bytes);

/*
 * Keep what the process frees for its next allocations (process-wide,
 * through mallopt): allocations under 32 MiB come from malloc's heap
 * rather than fresh mappings, and up to 256 MiB freed at the heap's top
 * stay mapped. For programs that allocate and free arrays of a few MiB at
 * every step (mini-batches): by default glibc hands them back to the
 * kernel at each free and the next step faults in fresh zeroed pages.
 * Returns 0, or -1 where the C library does not take the settings (a
 * sanitizer's allocator ignores them); either way allocation works.
 */
int gnn_alloc_keep_freed(void);

#define gnn_malloc(size) gnn__malloc((size), __FILE__, __LINE__)
#define gnn_calloc(n, size) gnn__calloc((n), (size), __FILE__, __LINE__)
#define gnn_malloc_array(n, size) gnn__malloc_array((n), (size), __FILE__, __LINE__)
#define gnn_realloc_array(p, n, size) gnn__realloc_array((p), (n), (size), __FILE__, __LINE__)
#define gnn_strdup(s) gnn__strdup((s), __FILE__, __LINE__)
#define gnn_aligned_alloc(align, size) gnn__aligned_alloc((align), (size), __FILE__, __LINE__)
#define gnn_alloc_large(size) gnn__alloc_large((size), __FILE__, __LINE__)

/*
 * Test hook: make the nth allocation from now on fail (1 = the next one);
 * 0 turns failure injection off. Counting covers every wrapper above except
 * gnn_free, across all threads.
 */
void gnn_alloc_fail_at(int64_t nth);
/* Allocations made since the last gnn_alloc_fail_at call. */
int64_t gnn_alloc_count(void);
/* True when the armed failure has been triggered since it was armed. */
int gnn_alloc_failed(void);

#ifdef __cplusplus
}
#endif

#endif
