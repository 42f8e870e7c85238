#!/bin/sh
# Build and run the CPU SpMM benchmark, then time torch.sparse.mm (PyPI's
# torch, from bench/reference/python.sh; PYTHON or BENCH_VENV choose
# another) on the same graphs and print the speed-up.
#
# Usage: bench/spmm/run.sh [BUILD_DIR] [spmm_bench options...]
# Prints the bench's own table, then one table of every measurement: our
# time, GB/s of the byte model, % of the copy bandwidth measured in the same
# run, torch's time and torch time / ours (sum, mean, gcn).
# Environment: OMP_NUM_THREADS (default: all cores; torch gets the same),
# REPS (default 3), NODES (default 1048576), WIDTHS (default 16,64,128,256),
# HUGE (default 1: feature matrices on transparent huge pages, both sides).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-spmm-bench}
[ $# -gt 0 ] && shift
threads=${OMP_NUM_THREADS:-$(nproc)}
reps=${REPS:-3}
huge=${HUGE:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/spmm-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

cmake -S "$src" -B "$build" -DGNN_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; exit 1; }
cmake --build "$build" --target spmm_bench -j"$threads" >>"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; exit 1; }

echo "== spmm_bench ($(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $threads threads)"
OMP_NUM_THREADS=$threads OMP_PROC_BIND=${OMP_PROC_BIND:-close} \
    "$build/bench/spmm_bench" -n "${NODES:-1048576}" -r "$reps" -f "${WIDTHS:-16,64,128,256}" \
    -p "$huge" -o "$work/graph" "$@" | tee "$work/bench.out"

if py=$("$src/bench/reference/python.sh"); then
    echo "== torch.sparse.mm (torch $($py -W ignore -c 'import torch; print(torch.__version__)'))"
    SPMM_HUGE=$huge OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads PYTHONWARNINGS=ignore \
        $py "$src/bench/spmm/torch_spmm.py" "$work/bench.out" "$work/graph" "$threads" "$reps"
else
    echo "== no torch: torch comparison skipped"
fi
