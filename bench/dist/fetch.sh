#!/bin/sh
# Remote feature fetches, all-to-all against one-sided RMA (fetch_bench.c),
# on the 1-hop METIS parts of bench/dist/run.sh's graph (made here when
# missing), P = 2 and 4 ranks, 1K, 10K and 100K rows per rank.
#
# Usage: bench/dist/fetch.sh [BUILD_DIR]    (default /tmp/build-bench-dist)
# Environment: BENCH_DIR, N D F HOMOPHILY as run.sh; RANKS [2 4]; REPS [7];
#   OUT results file [bench/dist/results-YYYY-MM-DD-fetch.txt]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench-dist}
dir=${BENCH_DIR:-/tmp/gnn-bench-dist}
n=${N:-1000000} d=${D:-10} f=${F:-128} hom=${HOMOPHILY:-0.7}
ranks=${RANKS:-2 4}
reps=${REPS:-7}
out=${OUT:-$src/bench/dist/results-$(date -u +%Y-%m-%d)-fetch.txt}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target gnn-dataset gnn-partition fetch_bench >/dev/null
mkdir -p "$dir/h$hom"
graph=$dir/sbm-$n-d$d-f$f-h$hom.h5
[ -f "$graph" ] || "$build/datasets/gnn-dataset" generate sbm -n "$n" -d "$d" -f "$f" \
  --homophily "$hom" -o "$graph" -q
# The results go to $out and, at the end (also on a failure, which exits
# non-zero), to the terminal.
trap 'cat "$out"' EXIT
{
echo "# remote feature fetches, SBM $n nodes, $f features, METIS parts with 1 hop of halo ($(date -u +%Y-%m-%dT%H:%MZ))"
echo "# machine: $(nproc) cores; $(mpirun --version | head -1); commit $(git -C "$src" rev-parse --short HEAD)"
echo "# RESULT P rows-per-rank method median-ms rows/s-per-rank MB/s-per-rank (the slowest rank's time)"
for p in $ranks; do
  part=$dir/h$hom/parts-metis-$p-h1
  [ -d "$part" ] || "$build/partition/gnn-partition" "$graph" -k "$p" -o "$part" -q
  mpirun -np "$p" --oversubscribe --bind-to none "$build/bench/fetch_bench" "$part" \
    -m 1000,10000,100000 -r "$reps"
done
} >"$out"
