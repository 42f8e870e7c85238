#!/bin/sh
# R-GCN mini-batches on a typed graph with a featureless type (the shape
# of ogbn-mag, generated), and on the same graph with features on every
# type: gnn-train --model rgcn --mode minibatch (with learnable rows for
# the featureless type, --embed-dim, on the first), in one process and
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
#   FEATURES   1: also the same graph with features on every type (no
#              learnable rows), the same three trainers [1]
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
features=${FEATURES:-1}
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

per=$((threads / ranks))
[ "$per" -ge 1 ] || per=1

# case_run NAME GRAPH_SUFFIX EMBED GENERATE_ARGS...: the three trainers on
# one graph, their files NAME-ours, NAME-ranks and NAME-dgl, then the table
# (cn, not name: measure sets name).
case_run() {
    cn=$1 suffix=$2 emb=$3
    shift 3
    g=$dir/hsbm-$nodes-$degree-$suffix.h5
    [ -f "$g" ] || "$dataset" generate hsbm -n "$nodes" -d "$degree" "$@" -o "$g" -q
    parts=$dir/hsbm-$nodes-$degree-$suffix-k$ranks
    [ -d "$parts" ] || "$part" "$g" -k "$ranks" -o "$parts" -q
    for f in ours ranks dgl; do
        rm -f "$dir/$cn-$f.out" "$dir/$cn-$f.json" "$dir/$cn-$f.time"
    done
    eo='' ed=''
    if [ "$emb" -gt 0 ]; then eo="--embed-dim $emb" ed="--embed-dim $emb"; fi
    # shellcheck disable=SC2086 # eo and ed: empty or two words
    set -- --model rgcn --mode minibatch $eo --hidden "$hidden" --fanouts 10,10 \
        --batch-size "$batch" --epochs "$epochs" -q
    measure "$cn-ours" "$train" --data "$g" --threads "$threads" \
        --log-json "$dir/$cn-ours.json" "$@"
    measure "$cn-ranks" mpirun -np "$ranks" --oversubscribe -x OMP_NUM_THREADS="$per" \
        "$train" --data "$parts" --threads "$per" --log-json "$dir/$cn-ranks.json" "$@"
    if [ -n "$pyd" ]; then
        # shellcheck disable=SC2086
        measure "$cn-dgl" "$pyd" "$src/bench/reference/rgcn_minibatch_dgl.py" "$g" $ed \
            --hidden "$hidden" --fanouts 10,10 --batch-size "$batch" --epochs "$epochs" \
            --threads "$threads"
    else
        echo "   dgl: no environment, left out"
    fi
    "$pyd" "$src/bench/rgcn/mb_table.py" "$dir" "$ranks" "$cn" 2>/dev/null ||
        python3 "$src/bench/rgcn/mb_table.py" "$dir" "$ranks" "$cn"
}

echo "== hsbm, $nodes nodes (t2 featureless, --embed-dim $embed), $epochs epochs, $threads threads"
case_run fl fl "$embed" --featureless 1
if [ "$features" = 1 ]; then
    echo "== hsbm, $nodes nodes (features on every type), $epochs epochs, $threads threads"
    case_run feat feat 0
fi
