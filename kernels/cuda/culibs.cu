/*
 * The table of culibs.cuh: cuBLAS and cuSPARSE opened with dlopen on the
 * first CUDA backend, their entry points looked up with dlsym.
 */
#include "kernels/cuda/culibs.cuh"

#include "graph/base/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define GNN_CULIBS_STR_(x) #x
#define GNN_CULIBS_STR(x) GNN_CULIBS_STR_(x)
#define CUBLAS_SONAME "libcublas.so." GNN_CULIBS_STR(CUBLAS_VER_MAJOR)
#define CUSPARSE_SONAME "libcusparse.so." GNN_CULIBS_STR(CUSPARSE_VER_MAJOR)

gnn_culibs_t gnn__culibs;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty when every symbol was found */

/* dlsym of `name` from lib into *slot; on failure the first error is kept. */
static void find(void *lib, const char *soname, const char *name, void **slot)
{
    if (load_error[0]) return;
    dlerror();
    *slot = dlsym(lib, name);
    if (!*slot) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s has no symbol %s (%s)", soname, name,
                 why ? why : "null");
    }
}

/* By soname (LD_LIBRARY_PATH, the loader cache), then from the toolkit's
 * library directory found at build time, where a linked library would
 * have been found through the run path. */
static void *open_lib(const char *soname)
{
    if (load_error[0]) return NULL;
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
    char why[256];
    const char *e = dlerror();
    snprintf(why, sizeof why, "%s", e ? e : "unknown reason");
#ifdef GNN_CUDA_LIBDIR
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GNN_CUDA_LIBDIR, soname);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
#endif
    snprintf(load_error, sizeof load_error, "cannot load %s (%s)", soname, why);
    return NULL;
}

/* The libraries stay loaded for the life of the process (the table points
 * into them); a failed load leaves the table unusable and is reported by
 * every later gnn__culibs_load. */
static void load(void)
{
    gnn_culibs_t t = {};
    void *blas = open_lib(CUBLAS_SONAME);
#define FIND_BLAS(name) find(blas, CUBLAS_SONAME, #name, (void **)&t.name);
    if (blas) {
        GNN_CULIBS_CUBLAS(FIND_BLAS)
    }
#undef FIND_BLAS
    void *sparse = open_lib(CUSPARSE_SONAME);
#define FIND_SPARSE(name) find(sparse, CUSPARSE_SONAME, #name, (void **)&t.name);
    if (sparse) {
        GNN_CULIBS_CUSPARSE(FIND_SPARSE)
    }
#undef FIND_SPARSE
    if (!load_error[0]) gnn__culibs = t;
}

int gnn__culibs_load(void)
{
    int e = pthread_once(&load_once, load);
    if (e) return GNN_FAIL(GNN_ENODEV, "CUDA libraries: pthread_once failed (%d)", e);
    if (load_error[0]) return GNN_FAIL(GNN_ENODEV, "CUDA libraries: %s", load_error);
    return 0;
}
