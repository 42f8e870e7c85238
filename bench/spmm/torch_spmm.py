#!/usr/bin/env python3
"""Time torch.sparse.mm on the graphs spmm_bench wrote, and print the table.

Reads PREFIX.<graph>.csr (int64 n_rows, n_cols, nnz, indptr, indices; see
spmm_bench.c) and the bench's COPY and RESULT lines, times
torch.sparse.mm(A, X) (forward) and torch.sparse.mm(A^T, dY) (backward) on
the same thread count in torch's CSR layout (faster than COO in every case
we measured with torch 1.13; set TORCH_SPMM_COO=1 to time COO too and keep
the faster). In torch sum, mean and gcn are the same product with
precomputed values (the normalisation is not timed, which favours torch);
max has no torch.sparse counterpart and is not compared.

With SPMM_HUGE=1 (run.sh passes the bench's -p setting) the input matrix
lives in an anonymous mapping advised MADV_HUGEPAGE, as the bench's do, so
both sides gather from the same kind of memory.

Prints one line per measurement (graph, aggregator, pass, F, our ms, GB/s
of the byte model, % of the copy bandwidth, torch ms, torch time / ours).

Usage: torch_spmm.py BENCH_OUTPUT PREFIX THREADS [REPS]
"""
import mmap
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


def features(n, f, huge):
    """Uniform [0, 1) n x f float32 matrix, on huge pages when asked."""
    if not huge:
        return torch.rand(n, f)
    buf = mmap.mmap(-1, n * f * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_HUGEPAGE)
    x = torch.from_numpy(np.frombuffer(buf, dtype=np.float32).reshape(n, f))
    x.uniform_()
    return x


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
    huge = os.environ.get("SPMM_HUGE", "1") == "1"
    torch.set_num_threads(threads)
    coo = os.environ.get("TORCH_SPMM_COO") == "1"
    ours, copy_gbs = {}, None
    for line in open(out_path):
        p = line.split()
        if p and p[0] == "RESULT":  # graph aggr pass F seconds GB/s ratio
            ours[(p[1], p[2], p[3], int(p[4]))] = (float(p[5]), float(p[6]), float(p[7]))
        elif p and p[0] == "COPY":
            copy_gbs = float(p[1])
    graphs = [g for g in ("rmat", "uniform") if any(k[0] == g for k in ours)]
    widths = sorted({k[3] for k in ours})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, input on "
          f"{'huge pages' if huge else '4 KiB pages'}; copy {copy_gbs:.2f} GB/s; "
          f"x torch = torch time / our time (best of {reps} after a warm-up)")
    print(f"{'graph':<8} {'aggr':<5} {'pass':<8} {'F':>4} {'ms':>9} {'GB/s':>7} "
          f"{'% copy':>7} {'torch ms':>9} {'x torch':>8}")
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
                x = features(n_in, f, huge)
                t_csr = best_time(lambda: torch.sparse.mm(m_csr, x), reps)
                t_coo = best_time(lambda: torch.sparse.mm(m_coo, x), reps) if coo else t_csr * 2
                t = min(t_csr, t_coo)
                for aggr in ("sum", "mean", "gcn", "max"):
                    o = ours.get((g, aggr, pas, f))
                    if not o:
                        continue
                    ratio = f"{t / o[0]:8.2f}" if aggr != "max" else f"{'-':>8}"
                    tms = f"{t * 1e3:9.1f}" if aggr != "max" else f"{'-':>9}"
                    print(f"{g:<8} {aggr:<5} {pas:<8} {f:>4} {o[0] * 1e3:9.1f} {o[1]:7.2f} "
                          f"{100 * o[2]:6.0f}% {tms} {ratio}", flush=True)
                del x


if __name__ == "__main__":
    main()
