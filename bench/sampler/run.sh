#!/bin/sh
# Build and run the neighbour-sampler benchmark on a generated R-MAT graph
# (written to a temporary directory and removed afterwards, never to the
# repository), with 1 and 2 OpenMP threads.
#
# Usage: bench/sampler/run.sh [BUILD_DIR] [sampler_bench options...]
# Environment: SCALE (R-MAT scale, default 20: 1M nodes), EDGE_FACTOR
# (default 16), BATCHES (default 100), THREADS (default "1 2").
# Prints one RESULT line per mode and thread count: batches per second and
# sampled edges per second, one batch at a time (per-node draws on the
# threads) and batches spread over the threads.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-sampler-bench}
[ $# -gt 0 ] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/sampler-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

cmake -S "$src" -B "$build" -DGNN_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; exit 1; }
cmake --build "$build" --target sampler_bench gnn-dataset -j"$(nproc)" >>"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; exit 1; }

graph=$work/rmat.h5
"$build/datasets/gnn-dataset" generate rmat --scale "${SCALE:-20}" -e "${EDGE_FACTOR:-16}" \
    --seed 1 -o "$graph" -q

echo "== sampler_bench ($(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), R-MAT scale ${SCALE:-20})"
for t in ${THREADS:-1 2}; do
    OMP_NUM_THREADS=$t OMP_PROC_BIND=${OMP_PROC_BIND:-close} \
        "$build/bench/sampler_bench" "$graph" -n "${BATCHES:-100}" "$@"
done
