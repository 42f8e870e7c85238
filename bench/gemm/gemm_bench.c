/*
 * Benchmark of the CPU products of a GNN layer: gnn_gemm (kernels/cpu/
 * dense.c, which takes the narrow shapes to kernels/cpu/gemm_skinny.c on a
 * CPU with AVX-512) against OpenBLAS's cblas_sgemm on the same operands,
 * in the same run, on the same OpenMP / OpenBLAS thread count.
 *
 * For a tall matrix X (ROWS x FIN, random in [-1, 1)) and a weight W (FIN x
 * FOUT) it times the three products of a layer's step:
 *   fwd   Y = X W                (ROWS x FOUT)
 *   dW    G = X^T dY             (FIN x FOUT; the sum over the rows)
 *   dX    D = dY W^T             (ROWS x FIN)
 * each one warm-up call, then the best of REPS calls, and prints ms, the
 * multiply-add rate and the ratio BLAS time / gnn_gemm time, and checks
 * that both agree within 1e-4 of the largest |C| (float rounding). Result lines
 * start with "RESULT" for scripts.
 *
 * Usage: gemm_bench [-r ROWS] [-s FIN,FOUT[;FIN,FOUT...]] [-n REPS]
 *   default: 1000000 rows; 128,32 128,64 128,256 32,16 1433,64 602,128
 * Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS (set both alike).
 * The first line names OpenBLAS's kernels: on a CPU newer than the
 * library it may run generic ones (set OPENBLAS_CORETYPE, as gnn-train
 * does by itself).
 */
#include "graph/base/alloc.h"
#include "kernels/dense.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) * 0x1p-23) - 1.0f;
    }
}

typedef struct {
    int ta, tb;
    int64_t m, n, k;
    const float *a, *b;
    int64_t lda, ldb;
    float *c;
    int64_t ldc;
} prod_t;

static int run_gnn(const prod_t *p)
{
    return gnn_gemm(p->ta, p->tb, p->m, p->n, p->k, 1.0f, p->a, p->lda, p->b, p->ldb, 0.0f,
                    p->c, p->ldc);
}

static int run_blas(const prod_t *p)
{
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                p->tb ? CblasTrans : CblasNoTrans, (int)p->m, (int)p->n, (int)p->k, 1.0f, p->a,
                (int)p->lda, p->b, (int)p->ldb, 0.0f, p->c, (int)p->ldc);
    return 0;
}

static double best(int (*f)(const prod_t *), const prod_t *p, int reps)
{
    if (f(p) != 0) return -1.0;
    double t = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        f(p);
        double dt = now() - t0;
        t = dt < t ? dt : t;
    }
    return t;
}

static int bench(const char *what, prod_t p, float *c2, int reps)
{
    double tg = best(run_gnn, &p, reps);
    if (tg < 0) {
        fprintf(stderr, "gemm_bench: %s: gnn_gemm failed\n", what);
        return 1;
    }
    float *c1 = p.c;
    p.c = c2;
    double tb = best(run_blas, &p, reps);
    double err = 0.0, cmax = 0.0;
    for (int64_t i = 0; i < p.m; i++)
        for (int64_t j = 0; j < p.n; j++) {
            err = fmax(err, fabs((double)c1[i * p.ldc + j] - (double)c2[i * p.ldc + j]));
            cmax = fmax(cmax, fabs((double)c2[i * p.ldc + j]));
        }
    err /= cmax > 0.0 ? cmax : 1.0;
    double tol = 1e-4;
    double gmac = (double)p.m * (double)p.n * (double)p.k * 1e-9;
    printf("RESULT %-4s m=%-8ld n=%-5ld k=%-8ld gnn %9.2f ms (%6.1f GMAC/s)  blas %9.2f ms"
           "  blas/gnn %5.2fx  max diff %.2g of max |C|%s\n",
           what, (long)p.m, (long)p.n, (long)p.k, tg * 1e3, gmac / tg, tb * 1e3, tb / tg, err,
           err <= tol ? "" : "  MISMATCH");
    return err <= tol ? 0 : 1;
}

int main(int argc, char **argv)
{
    int64_t rows = 1000000;
    int reps = 5;
    const char *shapes = "128,32;128,64;128,256;32,16;1433,64;602,128";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) shapes = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: gemm_bench [-r ROWS] [-s FIN,FOUT[;FIN,FOUT...]] [-n REPS]\n");
            return 2;
        }
    }
    if (rows < 1 || reps < 1) {
        fprintf(stderr, "gemm_bench: rows and reps must be positive\n");
        return 2;
    }
    /* Which kernels the reference runs: an OpenBLAS older than the CPU
     * falls back to generic ones (Prescott), several times slower than
     * its AVX-512 kernels; OPENBLAS_CORETYPE=SkylakeX picks those (as
     * gnn-train does by itself). */
    char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
    const char *core = corename ? corename() : NULL;
    printf("BLAS kernels: %s%s\n", core ? core : "(not OpenBLAS)",
           core && (!strcmp(core, "Prescott") || !strcmp(core, "Core2"))
               ? " (generic: set OPENBLAS_CORETYPE=SkylakeX or Haswell for a fair reference)"
               : "");
    int bad = 0;
    for (const char *s = shapes; *s;) {
        long fin = 0, fout = 0;
        int used = 0;
        if (sscanf(s, "%ld,%ld%n", &fin, &fout, &used) != 2 || fin < 1 || fout < 1) {
            fprintf(stderr, "gemm_bench: bad shape list at '%s'\n", s);
            return 2;
        }
        s += used;
        if (*s == ';') s++;
        size_t big = (size_t)rows * (size_t)(fin > fout ? fin : fout);
        float *x = gnn_malloc_array(big, sizeof *x), *dy = gnn_malloc_array(big, sizeof *dy);
        float *w = gnn_malloc_array((size_t)(fin * fout), sizeof *w);
        float *c1 = gnn_malloc_array(big, sizeof *c1), *c2 = gnn_malloc_array(big, sizeof *c2);
        if (!x || !dy || !w || !c1 || !c2) {
            fprintf(stderr, "gemm_bench: out of memory for %ld rows x %ld\n", (long)rows, fin);
            return 1;
        }
        fill(x, rows * fin, 1), fill(dy, rows * fout, 2), fill(w, fin * fout, 3);
        memset(c1, 0, big * sizeof *c1), memset(c2, 0, big * sizeof *c2);
        printf("== %ld rows, %ld -> %ld\n", (long)rows, fin, fout);
        bad |= bench("fwd", (prod_t){0, 0, rows, fout, fin, x, w, fin, fout, c1, fout}, c2, reps);
        bad |= bench("dW", (prod_t){1, 0, fin, fout, rows, x, dy, fin, fout, c1, fout}, c2, reps);
        bad |= bench("dX", (prod_t){0, 1, rows, fin, fout, dy, w, fout, fout, c1, fin}, c2, reps);
        gnn_free(x), gnn_free(dy), gnn_free(w), gnn_free(c1), gnn_free(c2);
    }
    return bad;
}
