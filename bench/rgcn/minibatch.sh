#!/bin/sh
# R-GCN mini-batches on a typed graph with a featureless type (the shape
# of ogbn-mag, generated): gnn-train --model rgcn --mode minibatch with
# learnable rows for the featureless type (--embed-dim), in one process and
# on RANKS ranks over a partition of 1 hop of halo (the owners draw the
# second hop per relation and serve the learnable rows), against DGL's
# R-GCN on sampled heterogeneous blocks (bench/reference/rgcn_minibatch_dgl.py:
# per-edge-type fanouts, dgl.nn.NodeEmbedding rows updated by SparseAdam,
# DistDGL's R-GCN recipe) in one process, with the same model and settings:
# 2 layers, hidden HIDDEN, fanouts 10,10 per relation, batches of BATCH
# seeds, dropout 0.5, Adam lr 0.01. Every process under /usr/bin/time -v.
# Prints the mean time of an epoch (every epoch counted, sampling
# included), peak RSS (for the ranks: the largest process) and the test
# accuracy after EPOCHS epochs, with the ratios against DGL.
#
# Usage: bench/rgcn/minibatch.sh [BUILD_DIR]     (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR  graphs, logs and timings [/tmp/gnn-bench-rgcn-mb]
#   THREADS    threads of each one-process trainer; the ranks share them [nproc]
#   NODES [300000]  DEGREE [5]  EPOCHS [3]  HIDDEN [64]  BATCH [1024]
#   EMBED [32]      RANKS [2]   TIMEOUT seconds per process [3600]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench-rgcn-mb}
threads=${THREADS:-$(nproc)}
nodes=${NODES:-300000}
degree=${DEGREE:-5}
epochs=${EPOCHS:-3}
hidden=${HIDDEN:-64}
batch=${BATCH:-1024}
embed=${EMBED:-32}
ranks=${RANKS:-2}
limit=${TIMEOUT:-3600}

[ -x /usr/bin/time ] || { echo "minibatch.sh: GNU time missing: apt-get install time" >&2; exit 1; }
pyd=$("$src/bench/reference/python.sh" dgl) || pyd=
mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

. "$src/bench/lib.sh"
bench_build
part=$build/partition/gnn-partition
cmake --build "$build" -j"$threads" --target gnn-partition >>"$dir/build.log" 2>&1 ||
    { cat "$dir/build.log"; exit 1; }

g=$dir/hsbm-$nodes-$degree-fl.h5
[ -f "$g" ] || "$dataset" generate hsbm -n "$nodes" -d "$degree" --featureless 1 -o "$g" -q
parts=$dir/hsbm-$nodes-$degree-fl-k$ranks
[ -d "$parts" ] || "$part" "$g" -k "$ranks" -o "$parts" -q
echo "== hsbm, $nodes nodes (t2 featureless, --embed-dim $embed), $epochs epochs, $threads threads"
for f in ours ranks dgl; do rm -f "$dir/$f.out" "$dir/$f.json" "$dir/$f.time"; done
set -- --model rgcn --mode minibatch --embed-dim "$embed" --hidden "$hidden" --fanouts 10,10 \
    --batch-size "$batch" --epochs "$epochs" -q
measure ours "$train" --data "$g" --threads "$threads" --log-json "$dir/ours.json" "$@"
per=$((threads / ranks))
[ "$per" -ge 1 ] || per=1
measure ranks mpirun -np "$ranks" --oversubscribe -x OMP_NUM_THREADS="$per" "$train" \
    --data "$parts" --threads "$per" --log-json "$dir/ranks.json" "$@"
if [ -n "$pyd" ]; then
    measure dgl "$pyd" "$src/bench/reference/rgcn_minibatch_dgl.py" "$g" --embed-dim "$embed" \
        --hidden "$hidden" --fanouts 10,10 --batch-size "$batch" --epochs "$epochs" \
        --threads "$threads"
else
    echo "   dgl: no environment, left out"
fi
"$pyd" "$src/bench/rgcn/mb_table.py" "$dir" "$ranks" 2>/dev/null ||
    python3 "$src/bench/rgcn/mb_table.py" "$dir" "$ranks"
