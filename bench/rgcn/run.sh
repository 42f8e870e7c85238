#!/bin/sh
# R-GCN on typed graphs: gnn-train --model rgcn against the references of
# bench/reference/rgcn_torch.py, the same model (2 layers, a weight per
# relation, per-relation means, a self weight; hidden HIDDEN, dropout 0.5,
# Adam lr 0.01, weight decay 5e-4), the same settings and threads,
# full-graph training: a plain PyTorch R-GCN (torch.sparse per relation)
# and DGL's RelGraphConv (the norm 1/|N_r(v)| per edge); every process
# under /usr/bin/time -v. Prints per-epoch time (training step, evaluation
# excluded, first epoch left out), peak RSS and test accuracy, with the
# ratios against each reference.
#
# Datasets (gnn-dataset generate hsbm: labels readable only through the
# relations): the default 30,000-node graph, trained ACC_EPOCHS epochs
# (accuracy), and one of BIG_NODES nodes, BIG_EPOCHS epochs (speed and
# memory).
#
# Usage: bench/rgcn/run.sh [BUILD_DIR]          (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR  graphs, logs and timings [/tmp/gnn-bench-rgcn]
#   THREADS    threads of every trainer [nproc]
#   DATASETS   any of: acc big [acc big]
#   ACC_EPOCHS [100]   BIG_NODES [1000000]   BIG_DEGREE [5]   BIG_EPOCHS [5]
#   HIDDEN     [64]    TIMEOUT seconds per process [3600]
#   REFERENCES any of: torch dgl [torch dgl]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench-rgcn}
threads=${THREADS:-$(nproc)}
datasets=${DATASETS:-acc big}
acc_epochs=${ACC_EPOCHS:-100}
big_nodes=${BIG_NODES:-1000000}
big_degree=${BIG_DEGREE:-5}
big_epochs=${BIG_EPOCHS:-5}
hidden=${HIDDEN:-64}
limit=${TIMEOUT:-3600}
refs=${REFERENCES:-torch dgl}

[ -x /usr/bin/time ] || { echo "run.sh: GNU time missing: apt-get install time" >&2; exit 1; }
py=$("$src/bench/reference/python.sh") || exit 1
pyd=
case " $refs " in *" dgl "*) pyd=$("$src/bench/reference/python.sh" dgl) || pyd= ;; esac
mkdir -p "$dir"

. "$src/bench/lib.sh"
bench_build

# bench DATASET GRAPH EPOCHS EVAL_EVERY
bench() {
    ds=$1 graph=$2 ep=$3 every=$4
    for f in ours $refs; do # no result of an earlier run read as this one's
        rm -f "$dir/$f-$ds.out" "$dir/$f-$ds.json" "$dir/$f-$ds.time"
    done
    set -- --hidden "$hidden" --epochs "$ep" --eval-every "$every" --threads "$threads"
    measure "ours-$ds" "$train" --data "$graph" --model rgcn --mode full \
        --log-json "$dir/ours-$ds.json" -q "$@"
    for r in $refs; do
        rpy=$py
        [ "$r" != dgl ] || rpy=$pyd
        [ -n "$rpy" ] || { echo "   $r: no environment, left out"; continue; }
        measure "$r-$ds" "$rpy" "$src/bench/reference/rgcn_torch.py" "$graph" --impl "$r" "$@"
    done
    "$py" "$src/bench/rgcn/table.py" "$dir" "$ds" $refs
}

for ds in $datasets; do
    case $ds in
    acc)
        echo "== hsbm, 30,000 nodes ($acc_epochs epochs)"
        g=$dir/hsbm-30000.h5
        [ -f "$g" ] || "$dataset" generate hsbm -o "$g" -q
        bench acc "$g" "$acc_epochs" 10
        ;;
    big)
        echo "== hsbm, $big_nodes nodes (degree $big_degree per relation, $big_epochs epochs)"
        g=$dir/hsbm-$big_nodes-$big_degree.h5
        [ -f "$g" ] || "$dataset" generate hsbm -n "$big_nodes" -d "$big_degree" -o "$g" -q
        bench big "$g" "$big_epochs" "$big_epochs"
        ;;
    *) echo "run.sh: unknown dataset $ds (acc, big)" >&2; exit 1 ;;
    esac
done
