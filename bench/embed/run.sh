#!/bin/sh
# Learnable input rows: gnn-train --embed-dim on graphs without features
# against the references of bench/reference/embed_torch.py, the same model
# (GCN 2 layers, hidden 16, a 64-wide learnable row per node, lazy Adam on
# the rows: torch's nn.Embedding + SparseAdam, DGL's dgl.nn.NodeEmbedding +
# dgl.optim.SparseAdam), the same settings and threads, full-graph
# training; every process under /usr/bin/time -v. Prints per-epoch time
# (training step, evaluation excluded, first epoch left out), peak RSS and
# test accuracy, with the ratios against each reference.
#
# Datasets: Cora without its features (gnn-dataset ogb --no-features;
# accuracy over --runs, the check against the PyTorch reference) and an
# SBM graph without features (gnn-dataset generate sbm -f 0; speed and
# memory).
#
# Usage: bench/embed/run.sh [BUILD_DIR]          (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR  graphs, logs and timings [/tmp/gnn-bench-embed]
#   THREADS    threads of every trainer [nproc]
#   DATASETS   any of: cora sbm [cora sbm]
#   CORA_DIR   OGB-layout Cora [<repo>/../shared/datasets/cora]
#   CORA_RUNS  [10]   SBM_NODES SBM_DEGREE [1000000 20]   SBM_EPOCHS [5]
#   EMBED_DIM  [64]   TIMEOUT seconds per process [3600]
#   REFERENCES any of: torch dgl [torch dgl]
#   MINIBATCH  1: also mini-batches on an SBM graph without features of
#              MB_NODES nodes [200000]: GraphSAGE 2 layers, hidden 64,
#              fanouts 10,10, batches of 1024, sampling in the training
#              loop (gnn-train --prefetch 0), MB_EPOCHS epochs [3], against
#              DGL's NodeEmbedding + SparseAdam on its NeighborSampler
#              (bench/reference/minibatch_dgl.py --embed-dim) [1]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench-embed}
threads=${THREADS:-$(nproc)}
datasets=${DATASETS:-cora sbm}
cora_dir=${CORA_DIR:-$src/../shared/datasets/cora}
cora_runs=${CORA_RUNS:-10}
sbm_nodes=${SBM_NODES:-1000000}
sbm_degree=${SBM_DEGREE:-20}
sbm_epochs=${SBM_EPOCHS:-5}
dim=${EMBED_DIM:-64}
limit=${TIMEOUT:-3600}
refs=${REFERENCES:-torch dgl}
minibatch=${MINIBATCH:-1}

[ -x /usr/bin/time ] || { echo "run.sh: GNU time missing: apt-get install time" >&2; exit 1; }
py=$("$src/bench/reference/python.sh") || exit 1
pyd=
case " $refs " in *" dgl "*) want_dgl=1 ;; *) want_dgl=$minibatch ;; esac
[ "$want_dgl" = 1 ] && { pyd=$("$src/bench/reference/python.sh" dgl) || pyd=; }
mkdir -p "$dir"

. "$src/bench/lib.sh"
bench_build

# bench DATASET GRAPH EPOCHS RUNS
bench() {
    ds=$1 graph=$2 ep=$3 runs=$4
    for f in ours $refs; do # no result of an earlier run read as this one's
        rm -f "$dir/$f-$ds.out" "$dir/$f-$ds.json" "$dir/$f-$ds.time"
    done
    set -- --embed-dim "$dim" --epochs "$ep" --runs "$runs" --threads "$threads"
    measure "ours-$ds" "$train" --data "$graph" --model gcn --mode full \
        --log-json "$dir/ours-$ds.json" -q "$@"
    for r in $refs; do
        rpy=$py
        [ "$r" != dgl ] || rpy=$pyd
        [ -n "$rpy" ] || { echo "   $r: no environment, left out"; continue; }
        measure "$r-$ds" "$rpy" "$src/bench/reference/embed_torch.py" "$graph" --impl "$r" "$@"
    done
    "$py" "$src/bench/embed/table.py" "$dir" "$ds" $refs
}

for ds in $datasets; do
    case $ds in
    cora)
        echo "== cora without features ($cora_runs runs)"
        "$dataset" ogb "$cora_dir" -o "$dir/cora-nofeat.h5" --no-features --force -q
        bench cora "$dir/cora-nofeat.h5" 200 "$cora_runs"
        ;;
    sbm)
        echo "== sbm without features ($sbm_nodes nodes, degree $sbm_degree, $sbm_epochs epochs)"
        g=$dir/sbm-$sbm_nodes-$sbm_degree-0.h5
        [ -f "$g" ] || "$dataset" generate sbm -n "$sbm_nodes" -d "$sbm_degree" -f 0 -s 1 -o "$g" -q
        bench sbm "$g" "$sbm_epochs" 1
        if [ "$minibatch" = 1 ]; then
            mbn=${MB_NODES:-200000}
            gm=$dir/sbm-$mbn-$sbm_degree-0.h5
            [ -f "$gm" ] || "$dataset" generate sbm -n "$mbn" -d "$sbm_degree" -f 0 -s 1 -o "$gm" -q
            echo "== sbm without features, mini-batches ($mbn nodes)"
            rm -f "$dir/ours-mb-sbm.json" "$dir/dgl-mb-sbm.json"
            set -- --layers 2 --hidden 64 --fanouts 10,10 --batch-size 1024 \
                --epochs "${MB_EPOCHS:-3}" --embed-dim "$dim" --threads "$threads"
            measure ours-mb-sbm "$train" --data "$gm" --model sage --mode minibatch \
                --prefetch 0 --eval-every 0 --log-json "$dir/ours-mb-sbm.json" -q "$@"
            if [ -n "$pyd" ]; then
                measure dgl-mb-sbm "$pyd" "$src/bench/reference/minibatch_dgl.py" "$gm" \
                    --workers 0 --log-json "$dir/dgl-mb-sbm.json" "$@"
            else
                echo "   dgl: no environment, left out"
            fi
            "$py" "$src/bench/embed/table.py" --minibatch "$dir" sbm
        fi
        ;;
    *) echo "run.sh: unknown dataset $ds (cora, sbm)" >&2; exit 1 ;;
    esac
done
