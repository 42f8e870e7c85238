/*
 * Balanced SpMM: the scaled CSR product (kernels/cuda/spmm_kernels.cuh)
 * with the work split evenly whatever the row lengths, for power-law
 * graphs whose hub rows would keep one rowcache warp busy long after the
 * others are done.
 *
 * Split. The merge path of the CSR (every nonzero, and every row's end
 * right after its last nonzero: n_rows + nnz items) is cut into `units`
 * equal ranges; a unit finds its two end points by binary search over
 * indptr, so empty rows cost like nonzeros and nothing is precomputed. A
 * unit is a lane group of L lanes (the lanes that cover one row's columns,
 * see the layout in spmm_kernels.cuh): a warp runs 32 / L units, so narrow
 * feature rows keep every lane busy. A unit walks its nonzeros in chunks
 * staged in its slice of shared memory (column ids and entry scales,
 * loaded once per entry by the unit's lanes), loads U entries' feature
 * rows ahead, and adds them in entry order, writing each row as its end
 * is reached. There are as many units as the lane groups of one wave
 * of resident warps (the kernel's occupancy times the multiprocessors),
 * fewer for small graphs, so the split costs nothing and every unit runs
 * from start to end at once.
 *
 * Rows shared by units. A row that a unit ends but did not start (its
 * first nonzeros lie in earlier units) is written raw, without scale; a
 * unit that stops inside a row leaves its partial sum in its slot of the
 * carry buffer. The diagonal term is added by the unit holding the row's
 * first item, so exactly once. A second kernel then finishes every raw
 * row: it locates the unit of the row's first item by binary search over
 * the split (no memory traffic), adds that unit's carry and every later
 * one's in unit order, then the raw part, and applies the row scale. The
 * order of additions is fixed by the split alone, so the results are the
 * same bits on every run, with no atomics; they differ from rowcache's
 * only by rounding.
 *
 * Max has no balanced kernel: the dispatcher runs the rowcache max kernels
 * when balanced is chosen (sum-like aggregation is what this family is
 * for).
 */
#include "kernels/cuda/spmm_kernels.cuh"

/* Multiprocessors assumed when the caller does not know. */
#define DEFAULT_SMS 108
/* Items (nonzeros plus row ends) per unit at least: tiny graphs get few units. */
#define MIN_UNIT_ITEMS 32
/* Carry floats at most (units are fewer for very wide rows). */
#define MAX_CARRY_FLOATS ((int64_t)1 << 26)
/* Shared-memory entry slots per warp: a unit stages max(L, 8) entries. */
#define SLOTS_PER_WARP 256
#define MIN_SLOTS 8

/*
 * The scaled-CSR product of p on in over `units` merge-path ranges, a
 * unit per lane group (lg: log2 of its lanes). Rows a unit ends and
 * started are written to out; a row it ends but did not start is written
 * raw and its id put in head[unit] (-1 otherwise); the partial sum of the
 * row it stops inside goes to carry[unit * f ...].
 */
template <int VEC, int NT>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_balanced(const gnn__scsr_t p, const int64_t f, const int lg, const int64_t units,
               const float *__restrict__ in, float *__restrict__ out, float *__restrict__ carry,
               int64_t *__restrict__ head)
{
    constexpr int U = NT >= 4 ? 1 : 4 / NT; /* entries in flight per lane */
    __shared__ int64_t sh_col[GNN_SPMM_WPB][SLOTS_PER_WARP];
    __shared__ float sh_scale[GNN_SPMM_WPB][SLOTS_PER_WARP];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int slots = L > MIN_SLOTS ? L : MIN_SLOTS; /* G * slots <= SLOTS_PER_WARP */
    const int64_t unit = ((int64_t)blockIdx.x * GNN_SPMM_WPB + wib) * G + grp;
    if (unit >= units) return; /* the whole unit: its lanes only sync among themselves */
    const unsigned umask =
        L == 32 ? GNN_SPMM_FULL_MASK : ((1u << L) - 1u) << (unsigned)(grp * L);
    int64_t *const scol = sh_col[wib] + grp * slots;
    float *const sscale = sh_scale[wib] + grp * slots;

    const int64_t n = p.n_rows, items = n + p.nnz;
    const int64_t d0 = gnn__split(unit, items, units), d1 = gnn__split(unit + 1, items, units);
    int64_t x0, y0, x1, y1;
    gnn__merge_path(p.indptr, n, p.nnz, d0, &x0, &y0);
    gnn__merge_path(p.indptr, n, p.nnz, d1, &x1, &y1);
    /* Row x0 started in an earlier unit when its first nonzero precedes y0
     * (indptr[x0] <= y0 always); it is ended here when x0 < x1. */
    const bool head_raw = x0 < x1 && p.indptr[x0] < y0;
    if (sub == 0) head[unit] = head_raw ? x0 : -1;

    const int64_t span = (int64_t)L * VEC * NT;
    for (int64_t c0 = 0; c0 < f; c0 += span) {
        float acc[NT][VEC];
        int64_t r = x0;
        int64_t rend = INT64_MAX; /* indptr[r + 1] while r < n */

        /* acc = the start of row rr (< n): its diagonal term when the row's
         * first item (path position rr + indptr[rr]) lies in this unit. */
        auto start_row = [&](int64_t rr, int64_t rbeg) {
            const int64_t first = rr + rbeg;
            const bool diag = first >= d0 && first < d1 && p.diag_scale && rr < p.n_diag;
            const float ds = diag ? p.diag_scale[rr] : 0.0f;
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                float v[VEC];
                if (diag && col < f) {
                    gnn__ldf<VEC>(in + rr * f + col, v);
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[t][j] = ds * v[j];
                } else {
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[t][j] = 0.0f;
                }
            }
            rend = p.indptr[rr + 1];
        };
        /* Row r ends in this unit: write it (raw when started earlier). */
        auto end_row = [&]() {
            const bool raw = r == x0 && head_raw;
            const float rs = (!raw && p.row_scale) ? p.row_scale[r] : 1.0f;
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                if (col < f) {
                    float o[VEC];
#pragma unroll
                    for (int j = 0; j < VEC; j++) o[j] = rs * acc[t][j];
                    gnn__stf<VEC>(out + r * f + col, o);
                }
            }
        };

        if (r < n) start_row(r, p.indptr[r]);
        for (int64_t e0 = y0; e0 < y1; e0 += slots) {
            const int cnt = y1 - e0 < slots ? (int)(y1 - e0) : slots;
            for (int i = sub; i < cnt; i += L) {
                const int64_t c = p.indices[e0 + i];
                float s = p.weights ? p.weights[e0 + i] : 1.0f;
                if (p.col_scale) s *= p.col_scale[c];
                scol[i] = c;
                sscale[i] = s;
            }
            __syncwarp(umask);
            for (int k = 0; k < cnt; k += U) {
                float v[U][NT][VEC];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const bool ok = k + u < cnt;
                    const float *src = in + (ok ? scol[k + u] : 0) * f;
#pragma unroll
                    for (int t = 0; t < NT; t++) {
                        const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                        if (ok && col < f) {
                            gnn__ldf<VEC>(src + col, v[u][t]);
                        } else {
#pragma unroll
                            for (int j = 0; j < VEC; j++) v[u][t][j] = 0.0f;
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < U; u++) {
                    if (k + u >= cnt) break;
                    const int64_t e = e0 + k + u;
                    /* Rows ending before nonzero e (all before x1, and < n). */
                    while (e >= rend) {
                        end_row();
                        r++;
                        start_row(r, rend);
                    }
                    const float s = sscale[k + u];
#pragma unroll
                    for (int t = 0; t < NT; t++)
#pragma unroll
                        for (int j = 0; j < VEC; j++)
                            acc[t][j] = fmaf(s, v[u][t][j], acc[t][j]);
                }
            }
            __syncwarp(umask); /* the chunk is read before the next one overwrites it */
        }
        /* Rows ending after the last nonzero of the range (empty rows too). */
        while (r < x1) {
            end_row();
            r++;
            if (r < n) start_row(r, rend);
        }
        /* Row x1 continues in later units: leave this unit's part of it. */
        if (x1 < n && p.indptr[x1] < y1) {
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                if (col < f) gnn__stf<VEC>(carry + unit * f + col, acc[t]);
            }
        }
    }
}

/*
 * Finish the raw rows: a warp per unit h with head[h] = r >= 0 adds the
 * carries of the units from the one holding row r's first item up to
 * h - 1, in unit order, then the raw part, and scales the row.
 */
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_balanced_fixup(const gnn__scsr_t p, const int64_t f, const int64_t units,
                     const float *__restrict__ carry, const int64_t *__restrict__ head,
                     float *__restrict__ out)
{
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;
    const int64_t items = p.n_rows + p.nnz;
    for (int64_t h = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; h < units; h += nwarps) {
        const int64_t r = head[h];
        if (r < 0) continue;
        /* Last unit u < h with split(u) <= first item of row r (h >= 1:
         * the row started before unit h). */
        const int64_t first = r + p.indptr[r];
        int64_t lo = 0, hi = h - 1;
        while (lo < hi) {
            const int64_t mid = lo + ((hi - lo + 1) >> 1);
            if (gnn__split(mid, items, units) <= first)
                lo = mid;
            else
                hi = mid - 1;
        }
        const float rs = p.row_scale ? p.row_scale[r] : 1.0f;
        for (int64_t c = lane; c < f; c += 32) {
            float acc = carry[lo * f + c];
            for (int64_t u = lo + 1; u < h; u++) acc += carry[u * f + c];
            acc += out[r * f + c];
            out[r * f + c] = rs * acc;
        }
    }
}

typedef decltype(&k_balanced<1, 1>) balanced_kernel_t;

/* k_balanced<vec, nt> (vec: 1, 2 or 4; nt: 1, 2 or 4). */
static balanced_kernel_t pick_kernel(int vec, int nt)
{
    if (vec == 4) return nt == 1 ? k_balanced<4, 1> : nt == 2 ? k_balanced<4, 2> : k_balanced<4, 4>;
    if (vec == 2) return nt == 1 ? k_balanced<2, 1> : nt == 2 ? k_balanced<2, 2> : k_balanced<2, 4>;
    return nt == 1 ? k_balanced<1, 1> : nt == 2 ? k_balanced<1, 2> : k_balanced<1, 4>;
}

int gnn__balanced_scaled(const gnn__scsr_t *p, int64_t f, const float *in, float *out,
                         gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s)
{
    if (p->n_rows == 0) return 0;
    const gnn__spmm_shape_t sh = gnn__spmm_shape(f, (uintptr_t)in | (uintptr_t)out);
    const balanced_kernel_t kern = pick_kernel(sh.vec, sh.nt);
    const int64_t G = (int64_t)32 >> sh.lg;
    const int64_t items = p->n_rows + p->nnz;
    /* Units: one wave of resident warps (every unit is as long as the
     * others, so a second wave would double the time for a fraction of the
     * work), at least MIN_UNIT_ITEMS items each (so at least one: the split
     * is strictly increasing), and a bounded carry buffer. */
    int per_sm = 0;
    GNN_CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, GNN_SPMM_THREADS, 0),
                 "balanced spmm: occupancy");
    if (per_sm < 1) per_sm = 1;
    int64_t units = (int64_t)(sm_count > 0 ? sm_count : DEFAULT_SMS) * per_sm * GNN_SPMM_WPB * G;
    const int64_t by_items = (items + MIN_UNIT_ITEMS - 1) / MIN_UNIT_ITEMS;
    const int64_t by_carry = MAX_CARRY_FLOATS / f;
    if (units > by_items) units = by_items;
    if (units > by_carry) units = by_carry;
    if (units < 1) units = 1;

    const size_t head_bytes = ((size_t)units * sizeof(int64_t) + 255) & ~(size_t)255;
    GNN_TRY_RET(gnn__cuda_buf_reserve(
        scratch, head_bytes + (size_t)units * (size_t)f * sizeof(float), s));
    int64_t *head = (int64_t *)scratch->p;
    float *carry = (float *)((char *)scratch->p + head_bytes);

    const int64_t warps = (units + G - 1) / G;
    const unsigned blocks = (unsigned)((warps + GNN_SPMM_WPB - 1) / GNN_SPMM_WPB);
    kern<<<blocks, GNN_SPMM_THREADS, 0, s>>>(*p, f, sh.lg, units, in, out, carry, head);
    GNN_CUDA_LAUNCHED("balanced spmm");
    k_balanced_fixup<<<gnn__cuda_blocks(units, GNN_SPMM_WPB), GNN_SPMM_THREADS, 0, s>>>(
        *p, f, units, carry, head, out);
    GNN_CUDA_LAUNCHED("balanced spmm fix-up");
    return 0;
}
