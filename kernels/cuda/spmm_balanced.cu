/*
 * Balanced SpMM: the scaled CSR product (kernels/cuda/spmm_kernels.cuh),
 * max forward and max backward with the work split evenly whatever the
 * row lengths, for power-law graphs whose hub rows would keep one rowcache
 * warp busy long after the others are done.
 *
 * Split. The merge path of the CSR (every nonzero, and every row's end
 * right after its last nonzero: n_rows + nnz items) is cut into `units`
 * equal ranges; a unit finds its two end points by binary search over
 * indptr, so empty rows cost like nonzeros and nothing is precomputed. A
 * unit is a lane group of L lanes (the lanes that cover one row's columns,
 * see the layout in spmm_kernels.cuh): a warp runs 32 / L units, so narrow
 * feature rows keep every lane busy. A unit walks its nonzeros in chunks
 * staged in its slice of shared memory (column ids and, for the scaled
 * product, entry scales, loaded once per entry by the unit's lanes), loads
 * U entries' feature rows ahead, and takes them in entry order, writing
 * each row as its end is reached. There are as many units as the lane
 * groups of one wave of resident warps (the kernel's occupancy times the
 * multiprocessors), fewer for small graphs, so the split costs nothing and
 * every unit runs from start to end at once.
 *
 * Rows shared by units. A row that a unit ends but did not start (its
 * first nonzeros lie in earlier units) is written raw: a partial sum
 * without scale, or a partial maximum; a unit that stops inside a row
 * leaves its partial result in its slot of the carry buffer. The diagonal
 * term is added by the unit holding the row's first item, so exactly once.
 * A second kernel then finishes every raw row: it locates the unit of the
 * row's first item by binary search over the split (no memory traffic),
 * combines that unit's carry and every later one's in unit order, then the
 * raw part, and (sums) applies the row scale once. The order is fixed by
 * the split alone, so the results are the same bits on every run, with no
 * atomics; sums differ from rowcache's only by rounding.
 *
 * Max forward. Per column a unit keeps the running maximum and its column
 * id, -1 while it has none. The row's first entry is always taken; any
 * other entry is taken when the unit has none yet and the value is not a
 * NaN, or when it is strictly greater. A unit's partial result of a row is
 * then the first entry holding the largest non-NaN value of its part (or
 * the row's first entry when that is a NaN), and the fix-up folds the
 * parts in unit order with the same strict >, skipping parts with none:
 * exactly the CPU's sequential scan (kernels/cpu/spmm.c), NaNs included, so
 * values and arg-max are identical to the CPU's. Empty rows get 0 and -1.
 *
 * Max backward. The scaled-product kernel in a second mode, over the
 * transpose: an entry v of row u adds dy[v][k] where argmax[v][k] == u; a
 * repeat of the previous entry of the same row (the transpose's rows are
 * sorted, so repeated edges are adjacent) is skipped, since the forward
 * routed dy[v][k] to u once. No scales and no diagonal, so the carries and
 * the fix-up are those of a plain sum.
 */
#include "kernels/cuda/spmm_kernels.cuh"

/* Multiprocessors assumed when the caller does not know. */
#define DEFAULT_SMS 108
/* Items (nonzeros plus row ends) per unit at least: tiny graphs get few units. */
#define MIN_UNIT_ITEMS 32
/* Carry elements at most (units are fewer for very wide rows). */
#define MAX_CARRY_FLOATS ((int64_t)1 << 26)
/* Shared-memory entry slots per warp: a unit stages max(L, 8) entries. */
#define SLOTS_PER_WARP 256
#define MIN_SLOTS 8

/* ---- Shared by the kernels ------------------------------------------------ */

/*
 * The last unit u < h whose range starts at or before path position
 * `first` (the first item of a row that unit h ends but did not start, so
 * h >= 1 and that unit exists).
 */
static __device__ __forceinline__ int64_t first_unit(int64_t first, int64_t h, int64_t items,
                                                    int64_t units)
{
    int64_t lo = 0, hi = h - 1;
    while (lo < hi) {
        const int64_t mid = lo + ((hi - lo + 1) >> 1);
        if (gnn__split(mid, items, units) <= first)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* ---- Sum-like (and max backward) ------------------------------------------ */

/*
 * The scaled-CSR product of p on in over `units` merge-path ranges, a
 * unit per lane group (lg: log2 of its lanes). Rows a unit ends and
 * started are written to out; a row it ends but did not start is written
 * raw and its id put in head[unit] (-1 otherwise); the partial sum of the
 * row it stops inside goes to carry[unit * f ...].
 * MAXB: max backward instead (p without scales or diagonal, argmax the
 * forward's arg-max): entry c of row r adds in[c][k] where argmax[c][k] ==
 * r, a repeat of the row's previous entry skipped.
 */
template <int VEC, int NT, bool MAXB>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_balanced(const gnn__scsr_t p, const int64_t f, const int lg, const int64_t units,
               const float *__restrict__ in, const int32_t *__restrict__ argmax,
               float *__restrict__ out, float *__restrict__ carry, int64_t *__restrict__ head)
{
    constexpr int U = NT >= 4 ? 1 : 4 / NT; /* entries in flight per lane */
    __shared__ int64_t sh_col[GNN_SPMM_WPB][SLOTS_PER_WARP];
    __shared__ float sh_scale[GNN_SPMM_WPB][MAXB ? 1 : SLOTS_PER_WARP];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int slots = L > MIN_SLOTS ? L : MIN_SLOTS; /* G * slots <= SLOTS_PER_WARP */
    const int64_t unit = ((int64_t)blockIdx.x * GNN_SPMM_WPB + wib) * G + grp;
    if (unit >= units) return; /* the whole unit: its lanes only sync among themselves */
    const unsigned umask =
        L == 32 ? GNN_SPMM_FULL_MASK : ((1u << L) - 1u) << (unsigned)(grp * L);
    int64_t *const scol = sh_col[wib] + grp * slots;
    float *const sscale = MAXB ? nullptr : sh_scale[wib] + grp * slots;

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
        int64_t rbeg = 0;         /* indptr[r] */
        int64_t rend = INT64_MAX; /* indptr[r + 1] while r < n */
        /* MAXB: the column of the entry before the next one (y0 - 1 lies in
         * row x0 whenever row x0 started before y0). */
        int64_t prev = MAXB && y0 > 0 ? p.indices[y0 - 1] : -1;

        /* acc = the start of row rr (< n) beginning at nonzero rb: its
         * diagonal term when the row's first item (path position rr + rb)
         * lies in this unit. */
        auto start_row = [&](int64_t rr, int64_t rb) {
            const int64_t first = rr + rb;
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
            rbeg = rb;
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
                scol[i] = c;
                if constexpr (!MAXB) {
                    float s = p.weights ? p.weights[e0 + i] : 1.0f;
                    if (p.col_scale) s *= p.col_scale[c];
                    sscale[i] = s;
                }
            }
            __syncwarp(umask);
            for (int k = 0; k < cnt; k += U) {
                float v[U][NT][VEC];
                int32_t am[U][NT][MAXB ? VEC : 1];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const bool ok = k + u < cnt;
                    const int64_t rowoff = (ok ? scol[k + u] : 0) * f;
#pragma unroll
                    for (int t = 0; t < NT; t++) {
                        const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                        if (ok && col < f) {
                            gnn__ldf<VEC>(in + rowoff + col, v[u][t]);
                            if constexpr (MAXB) gnn__ldi<VEC>(argmax + rowoff + col, am[u][t]);
                        } else {
#pragma unroll
                            for (int j = 0; j < VEC; j++) {
                                v[u][t][j] = 0.0f;
                                if constexpr (MAXB) am[u][t][j] = -1;
                            }
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
                    if constexpr (MAXB) {
                        const int64_t c = scol[k + u];
                        const bool repeat = e > rbeg && c == prev;
                        prev = c;
                        if (!repeat) {
                            const int32_t self = (int32_t)r;
#pragma unroll
                            for (int t = 0; t < NT; t++)
#pragma unroll
                                for (int j = 0; j < VEC; j++)
                                    if (am[u][t][j] == self) acc[t][j] += v[u][t][j];
                        }
                    } else {
                        const float s = sscale[k + u];
#pragma unroll
                        for (int t = 0; t < NT; t++)
#pragma unroll
                            for (int j = 0; j < VEC; j++)
                                acc[t][j] = fmaf(s, v[u][t][j], acc[t][j]);
                    }
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
        const int64_t lo = first_unit(r + p.indptr[r], h, items, units);
        const float rs = p.row_scale ? p.row_scale[r] : 1.0f;
        for (int64_t c = lane; c < f; c += 32) {
            float acc = carry[lo * f + c];
            for (int64_t u = lo + 1; u < h; u++) acc += carry[u * f + c];
            acc += out[r * f + c];
            out[r * f + c] = rs * acc;
        }
    }
}

/* ---- Max forward ------------------------------------------------------------- */

/*
 * y, argmax = max over each row of (indptr, indices) (n rows, nnz entries)
 * over `units` merge-path ranges, a unit per lane group. Per column a lane
 * keeps the running maximum m and its column id a (-1: none yet). Rows the
 * unit ends and started are final; a row it ends but did not start is
 * written raw (its part's m and a, a = -1 when the part has none) and its
 * id put in head[unit]; the part of the row it stops inside goes to
 * carry_m / carry_a[unit * f ...].
 */
template <int VEC, int NT>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_balanced_max_fwd(const int64_t *__restrict__ indptr, const int64_t *__restrict__ indices,
                       const int64_t n, const int64_t nnz, const int64_t f, const int lg,
                       const int64_t units, const float *__restrict__ x, float *__restrict__ y,
                       int32_t *__restrict__ argmax, float *__restrict__ carry_m,
                       int32_t *__restrict__ carry_a, int64_t *__restrict__ head)
{
    constexpr int U = NT >= 4 ? 1 : 4 / NT; /* entries in flight per lane */
    __shared__ int64_t sh_col[GNN_SPMM_WPB][SLOTS_PER_WARP];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int slots = L > MIN_SLOTS ? L : MIN_SLOTS;
    const int64_t unit = ((int64_t)blockIdx.x * GNN_SPMM_WPB + wib) * G + grp;
    if (unit >= units) return; /* the whole unit: its lanes only sync among themselves */
    const unsigned umask =
        L == 32 ? GNN_SPMM_FULL_MASK : ((1u << L) - 1u) << (unsigned)(grp * L);
    int64_t *const scol = sh_col[wib] + grp * slots;

    const int64_t items = n + nnz;
    const int64_t d0 = gnn__split(unit, items, units), d1 = gnn__split(unit + 1, items, units);
    int64_t x0, y0, x1, y1;
    gnn__merge_path(indptr, n, nnz, d0, &x0, &y0);
    gnn__merge_path(indptr, n, nnz, d1, &x1, &y1);
    const bool head_raw = x0 < x1 && indptr[x0] < y0;
    if (sub == 0) head[unit] = head_raw ? x0 : -1;

    const int64_t span = (int64_t)L * VEC * NT;
    for (int64_t c0 = 0; c0 < f; c0 += span) {
        float m[NT][VEC];
        int32_t a[NT][VEC];
        int64_t r = x0;
        int64_t rend = INT64_MAX; /* indptr[r + 1] while r < n */
        bool fresh = false;       /* the next entry is row r's first */

        /* Row rr (< n) beginning at nonzero rb: nothing yet. */
        auto start_row = [&](int64_t rr, int64_t rb) {
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    m[t][j] = 0.0f;
                    a[t][j] = -1;
                }
            fresh = rb >= y0; /* else it started in an earlier unit */
            rend = indptr[rr + 1];
        };
        auto end_row = [&]() {
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                if (col < f) {
                    gnn__stf<VEC>(y + r * f + col, m[t]);
                    gnn__sti<VEC>(argmax + r * f + col, a[t]);
                }
            }
        };

        if (r < n) start_row(r, indptr[r]);
        for (int64_t e0 = y0; e0 < y1; e0 += slots) {
            const int cnt = y1 - e0 < slots ? (int)(y1 - e0) : slots;
            for (int i = sub; i < cnt; i += L) scol[i] = indices[e0 + i];
            __syncwarp(umask);
            for (int k = 0; k < cnt; k += U) {
                float v[U][NT][VEC];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const bool ok = k + u < cnt;
                    gnn__ld_tiles<VEC, NT>(x + (ok ? scol[k + u] : 0) * f, ok, c0, L, sub, f, v[u]);
                }
#pragma unroll
                for (int u = 0; u < U; u++) {
                    if (k + u >= cnt) break;
                    const int64_t e = e0 + k + u;
                    while (e >= rend) {
                        end_row();
                        r++;
                        start_row(r, rend);
                    }
                    const int32_t c = (int32_t)scol[k + u];
                    const bool row_first = fresh;
                    fresh = false;
#pragma unroll
                    for (int t = 0; t < NT; t++)
#pragma unroll
                        for (int j = 0; j < VEC; j++) {
                            const float xv = v[u][t][j];
                            /* The row's first entry always counts; a NaN elsewhere never
                             * does (strict >), nor starts a part. */
                            const bool take =
                                a[t][j] < 0 ? (row_first || !isnan(xv)) : xv > m[t][j];
                            if (take) {
                                m[t][j] = xv;
                                a[t][j] = c;
                            }
                        }
                }
            }
            __syncwarp(umask); /* the chunk is read before the next one overwrites it */
        }
        while (r < x1) {
            end_row();
            r++;
            if (r < n) start_row(r, rend);
        }
        if (x1 < n && indptr[x1] < y1) {
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                if (col < f) {
                    gnn__stf<VEC>(carry_m + unit * f + col, m[t]);
                    gnn__sti<VEC>(carry_a + unit * f + col, a[t]);
                }
            }
        }
    }
}

/*
 * Finish the raw rows of the max: a warp per unit h with head[h] = r >= 0
 * folds, in unit order, the part of the unit holding row r's first entry
 * (which has that entry, so a part), the parts of the later units up to
 * h - 1, then the raw part: a part replaces the result only when it has a
 * candidate strictly greater.
 */
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_balanced_max_fixup(const int64_t *__restrict__ indptr, const int64_t n, const int64_t nnz,
                         const int64_t f, const int64_t units, const float *__restrict__ carry_m,
                         const int32_t *__restrict__ carry_a, const int64_t *__restrict__ head,
                         float *__restrict__ y, int32_t *__restrict__ argmax)
{
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;
    const int64_t items = n + nnz;
    for (int64_t h = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; h < units; h += nwarps) {
        const int64_t r = head[h];
        if (r < 0) continue;
        const int64_t lo = first_unit(r + indptr[r], h, items, units);
        for (int64_t c = lane; c < f; c += 32) {
            float m = carry_m[lo * f + c];
            int32_t a = carry_a[lo * f + c];
            for (int64_t u = lo + 1; u <= h; u++) {
                const float pm = u < h ? carry_m[u * f + c] : y[r * f + c];
                const int32_t pa = u < h ? carry_a[u * f + c] : argmax[r * f + c];
                if (pa >= 0 && pm > m) {
                    m = pm;
                    a = pa;
                }
            }
            y[r * f + c] = m;
            argmax[r * f + c] = a;
        }
    }
}

/* ---- Launch ------------------------------------------------------------------ */

typedef decltype(&k_balanced<1, 1, false>) balanced_kernel_t;
typedef decltype(&k_balanced_max_fwd<1, 1>) max_fwd_kernel_t;

/* k_balanced<vec, nt, maxb> (vec: 1, 2 or 4; nt: 1, 2 or 4). */
template <bool MAXB>
static balanced_kernel_t pick_kernel(int vec, int nt)
{
    if (vec == 4)
        return nt == 1 ? k_balanced<4, 1, MAXB> : nt == 2 ? k_balanced<4, 2, MAXB>
                                                           : k_balanced<4, 4, MAXB>;
    if (vec == 2)
        return nt == 1 ? k_balanced<2, 1, MAXB> : nt == 2 ? k_balanced<2, 2, MAXB>
                                                           : k_balanced<2, 4, MAXB>;
    return nt == 1 ? k_balanced<1, 1, MAXB> : nt == 2 ? k_balanced<1, 2, MAXB>
                                                       : k_balanced<1, 4, MAXB>;
}

static max_fwd_kernel_t pick_max_kernel(int vec, int nt)
{
    if (vec == 4)
        return nt == 1 ? k_balanced_max_fwd<4, 1> : nt == 2 ? k_balanced_max_fwd<4, 2>
                                                             : k_balanced_max_fwd<4, 4>;
    if (vec == 2)
        return nt == 1 ? k_balanced_max_fwd<2, 1> : nt == 2 ? k_balanced_max_fwd<2, 2>
                                                             : k_balanced_max_fwd<2, 4>;
    return nt == 1 ? k_balanced_max_fwd<1, 1> : nt == 2 ? k_balanced_max_fwd<1, 2>
                                                         : k_balanced_max_fwd<1, 4>;
}

/*
 * *units for kernel kern (G units per warp) over `items` path items at
 * width f: one wave of resident warps (every unit is as long as the
 * others, so a second wave would double the time for a fraction of the
 * work), at least MIN_UNIT_ITEMS items each (so at least one: the split is
 * then strictly increasing), and a bounded carry buffer.
 */
static int unit_count(const void *kern, int64_t G, int64_t items, int64_t f, int sm_count,
                      int64_t *units)
{
    int per_sm = 0;
    GNN_CUDA_RET(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, GNN_SPMM_THREADS, 0),
                 "balanced spmm: occupancy");
    if (per_sm < 1) per_sm = 1;
    int64_t u = (int64_t)(sm_count > 0 ? sm_count : DEFAULT_SMS) * per_sm * GNN_SPMM_WPB * G;
    const int64_t by_items = (items + MIN_UNIT_ITEMS - 1) / MIN_UNIT_ITEMS;
    const int64_t by_carry = MAX_CARRY_FLOATS / f;
    if (u > by_items) u = by_items;
    if (u > by_carry) u = by_carry;
    if (u < 1) u = 1;
    *units = u;
    return 0;
}

/* Bytes rounded up to the scratch's sub-buffer alignment. */
static size_t align_up(size_t bytes)
{
    return (bytes + 255) & ~(size_t)255;
}

/* The scaled product (MAXB false) or max backward (argmax set) of p. */
static int launch_sumlike(const gnn__scsr_t *p, int64_t f, const float *in, const int32_t *argmax,
                          float *out, gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s)
{
    if (p->n_rows == 0) return 0;
    const bool maxb = argmax != NULL;
    const gnn__spmm_shape_t sh =
        gnn__spmm_shape(f, (uintptr_t)in | (uintptr_t)out | (uintptr_t)argmax);
    const balanced_kernel_t kern =
        maxb ? pick_kernel<true>(sh.vec, sh.nt) : pick_kernel<false>(sh.vec, sh.nt);
    const int64_t G = (int64_t)32 >> sh.lg;
    int64_t units = 0;
    GNN_TRY_RET(unit_count((const void *)kern, G, p->n_rows + p->nnz, f, sm_count, &units));

    const size_t head_bytes = align_up((size_t)units * sizeof(int64_t));
    GNN_TRY_RET(gnn__cuda_buf_reserve(
        scratch, head_bytes + (size_t)units * (size_t)f * sizeof(float), s));
    int64_t *head = (int64_t *)scratch->p;
    float *carry = (float *)((char *)scratch->p + head_bytes);

    const int64_t warps = (units + G - 1) / G;
    const unsigned blocks = (unsigned)((warps + GNN_SPMM_WPB - 1) / GNN_SPMM_WPB);
    kern<<<blocks, GNN_SPMM_THREADS, 0, s>>>(*p, f, sh.lg, units, in, argmax, out, carry, head);
    GNN_CUDA_LAUNCHED("balanced spmm");
    k_balanced_fixup<<<gnn__cuda_blocks(units, GNN_SPMM_WPB), GNN_SPMM_THREADS, 0, s>>>(
        *p, f, units, carry, head, out);
    GNN_CUDA_LAUNCHED("balanced spmm fix-up");
    return 0;
}

int gnn__balanced_scaled(const gnn__scsr_t *p, int64_t f, const float *in, float *out,
                         gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s)
{
    return launch_sumlike(p, f, in, NULL, out, scratch, sm_count, s);
}

int gnn__balanced_max_backward(const int64_t *t_indptr, const int64_t *t_indices, int64_t n_rows,
                               int64_t n_cols, int64_t nnz, int64_t f, const float *dy,
                               const int32_t *argmax, float *dx, gnn__cuda_buf_t *scratch,
                               int sm_count, cudaStream_t s)
{
    gnn__scsr_t p = {}; /* no weights, scales or diagonal */
    p.indptr = t_indptr;
    p.indices = t_indices;
    p.n_rows = n_rows;
    p.n_cols = n_cols;
    p.nnz = nnz;
    return launch_sumlike(&p, f, dy, argmax, dx, scratch, sm_count, s);
}

int gnn__balanced_max_forward(const int64_t *indptr, const int64_t *indices, int64_t n_rows,
                              int64_t nnz, int64_t f, const float *x, float *y, int32_t *argmax,
                              gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s)
{
    if (n_rows == 0) return 0;
    const gnn__spmm_shape_t sh =
        gnn__spmm_shape(f, (uintptr_t)x | (uintptr_t)y | (uintptr_t)argmax);
    const max_fwd_kernel_t kern = pick_max_kernel(sh.vec, sh.nt);
    const int64_t G = (int64_t)32 >> sh.lg;
    int64_t units = 0;
    GNN_TRY_RET(unit_count((const void *)kern, G, n_rows + nnz, f, sm_count, &units));

    const size_t head_bytes = align_up((size_t)units * sizeof(int64_t));
    const size_t part_bytes = align_up((size_t)units * (size_t)f * sizeof(float));
    GNN_TRY_RET(gnn__cuda_buf_reserve(
        scratch, head_bytes + part_bytes + (size_t)units * (size_t)f * sizeof(int32_t), s));
    int64_t *head = (int64_t *)scratch->p;
    float *carry_m = (float *)((char *)scratch->p + head_bytes);
    int32_t *carry_a = (int32_t *)((char *)scratch->p + head_bytes + part_bytes);

    const int64_t warps = (units + G - 1) / G;
    const unsigned blocks = (unsigned)((warps + GNN_SPMM_WPB - 1) / GNN_SPMM_WPB);
    kern<<<blocks, GNN_SPMM_THREADS, 0, s>>>(indptr, indices, n_rows, nnz, f, sh.lg, units, x, y,
                                             argmax, carry_m, carry_a, head);
    GNN_CUDA_LAUNCHED("balanced max forward");
    k_balanced_max_fixup<<<gnn__cuda_blocks(units, GNN_SPMM_WPB), GNN_SPMM_THREADS, 0, s>>>(
        indptr, n_rows, nnz, f, units, carry_m, carry_a, head, y, argmax);
    GNN_CUDA_LAUNCHED("balanced max fix-up");
    return 0;
}
