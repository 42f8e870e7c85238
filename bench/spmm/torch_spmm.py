#!/usr/bin/env python3
"""Time torch.sparse.mm on the graphs spmm_bench wrote, against its results.

Reads PREFIX.<graph>.csr (int64 n_rows, n_cols, nnz, indptr, indices; see
spmm_bench.c) and the bench's RESULT lines, times torch.sparse.mm(A, X)
(forward) and torch.sparse.mm(A^T, dY) (backward) on the same thread count
in torch's CSR layout (faster than COO in every case we measured with torch
1.13; set TORCH_SPMM_COO=1 to time COO too and keep the faster), and prints torch's time over ours for sum, mean and gcn: in torch all three are
the same product with precomputed values (the normalisation is not timed,
which favours torch). max has no torch.sparse counterpart and is not timed.

Usage: torch_spmm.py BENCH_OUTPUT PREFIX THREADS [REPS]
"""
import os
import sys
import time
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")


def load(path):
    head = np.fromfile(path, dtype=np.int64, count=3)
    n_rows, n_cols, nnz = (int(v) for v in head)
    data = np.fromfile(path, dtype=np.int64, offset=24)
    indptr = torch.from_numpy(data[: n_rows + 1].copy())
    indices = torch.from_numpy(data[n_rows + 1 : n_rows + 1 + nnz].copy())
    return n_rows, n_cols, indptr, indices


def best_time(fn, reps):
    fn()  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    out_path, prefix, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    torch.set_num_threads(threads)
    coo = os.environ.get("TORCH_SPMM_COO") == "1"
    ours = {}
    for line in open(out_path):
        p = line.split()
        if p and p[0] == "RESULT":
            ours[(p[1], p[2], p[3], int(p[4]))] = float(p[5])
    graphs = sorted({k[0] for k in ours})
    widths = sorted({k[3] for k in ours})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          "speed-up = torch time / our time (best of %d after a warm-up)" % reps)
    print(f"{'graph':<8} {'pass':<8} {'F':>5} {'torch ms':>10} {'layout':>6} "
          f"{'x sum':>7} {'x mean':>7} {'x gcn':>7}")
    for g in graphs:
        n_rows, n_cols, indptr, indices = load(f"{prefix}.{g}.csr")
        vals = torch.ones(indices.numel(), dtype=torch.float32)
        a_csr = torch.sparse_csr_tensor(indptr, indices, vals, size=(n_rows, n_cols))
        a_coo = a_csr.to_sparse_coo().coalesce()
        at_coo = a_coo.t().coalesce()
        at_csr = at_coo.to_sparse_csr()
        if not coo:
            a_coo = at_coo = None
        mats = {"forward": (a_csr, a_coo, n_cols), "backward": (at_csr, at_coo, n_rows)}
        for f in widths:
            for pas, (m_csr, m_coo, n_in) in mats.items():
                x = torch.rand(n_in, f)
                t_csr = best_time(lambda: torch.sparse.mm(m_csr, x), reps)
                t_coo = best_time(lambda: torch.sparse.mm(m_coo, x), reps) if coo else t_csr * 2
                t, lay = (t_csr, "csr") if t_csr <= t_coo else (t_coo, "coo")
                ratios = []
                for aggr in ("sum", "mean", "gcn"):
                    o = ours.get((g, aggr, pas, f))
                    ratios.append(f"{t / o:7.2f}" if o else f"{'-':>7}")
                print(f"{g:<8} {pas:<8} {f:>5} {t * 1e3:>10.1f} {lay:>6} " + " ".join(ratios))
                print(f"TORCH {g} {pas} {f} {t:.6f} {lay}", flush=True)
                del x


if __name__ == "__main__":
    main()
