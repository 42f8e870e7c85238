#!/bin/sh
# Link prediction: gnn-train --task link (GCN encoder, dot decoder, full
# graph) against the PyTorch reference bench/reference/link_torch.py
# (--impl torch: torch.sparse; pyg: PyG's GCNConv and negative_sampling;
# dgl: DGL's GraphConv and its Uniform negative sampler), the same settings
# and threads, on Cora and on a 1M-node SBM graph, each split by
# gnn-dataset split-edges; every process under /usr/bin/time -v. Prints per
# epoch time (training step, evaluation excluded, first epoch left out),
# peak RSS and test AUC / AP, with the ratios against each reference.
#
# Usage: bench/link/run.sh [BUILD_DIR]          (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR  graphs, logs and timings [/tmp/gnn-bench-link]
#   THREADS    threads of every trainer [nproc]
#   DATASETS   any of: cora sbm [cora sbm]
#   CORA_DIR   OGB-layout Cora [<repo>/../shared/datasets/cora]
#   CORA_EPOCHS [200]    SBM_NODES SBM_DEGREE SBM_FEAT [1000000 20 128]
#   SBM_EPOCHS [5]       TIMEOUT seconds per process [1800]
#   REFERENCES any of: torch pyg dgl [all three]
#   MINIBATCH  1: also edge mini-batches, gnn-train --mode minibatch (GraphSAGE
#              32 -> 16, fanouts 10,10, the batch's edges left out of the
#              sampled neighbourhoods, sampling in the training loop:
#              --prefetch 0, and with its default loader, --prefetch auto:
#              batches ahead on a sampler thread where it has a core of its
#              own, else the same as --prefetch 0)
#              against DGL's edge loader (bench/reference/link_minibatch_dgl.py:
#              as_edge_prediction_sampler, exclude="reverse_id", Uniform
#              negatives, workers 0). PyG's LinkNeighborLoader needs pyg-lib
#              or torch-sparse, which PyPI does not serve for this torch. [1]
#   MB_EPOCHS_CORA MB_BATCH_CORA [20 256]   MB_EPOCHS_SBM MB_BATCH_SBM [2 4096]
#   MB_SBM_NODES  nodes of the SBM graph the mini-batches run on [100000]
#              (an epoch of DGL's edge loader on the 1M-node graph takes hours)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench-link}
threads=${THREADS:-$(nproc)}
datasets=${DATASETS:-cora sbm}
cora_dir=${CORA_DIR:-$src/../shared/datasets/cora}
cora_epochs=${CORA_EPOCHS:-200}
sbm_nodes=${SBM_NODES:-1000000}
sbm_degree=${SBM_DEGREE:-20}
sbm_feat=${SBM_FEAT:-128}
sbm_epochs=${SBM_EPOCHS:-5}
limit=${TIMEOUT:-1800}
refs=${REFERENCES:-torch pyg dgl}
minibatch=${MINIBATCH:-1}

[ -x /usr/bin/time ] || { echo "run.sh: GNU time missing: apt-get install time" >&2; exit 1; }
py=$("$src/bench/reference/python.sh") || exit 1
case " $refs " in *" dgl "*) want_dgl=1 ;; *) want_dgl=${MINIBATCH:-1} ;; esac
pyd=
[ "$want_dgl" = 1 ] && { pyd=$("$src/bench/reference/python.sh" dgl) || pyd=; }
mkdir -p "$dir"

. "$src/bench/lib.sh"
bench_build

# bench DATASET GRAPH EPOCHS
bench() {
    ds=$1 graph=$2 ep=$3
    for f in ours $refs; do # no result of an earlier run read as this one's
        rm -f "$dir/$f-$ds.out" "$dir/$f-$ds.json" "$dir/$f-$ds.time"
    done
    set -- --layers 2 --hidden 32 --out-dim 16 --dropout 0 --lr 0.01 --weight-decay 5e-4 \
        --negatives 1 --epochs "$ep" --threads "$threads"
    measure "ours-$ds" "$train" --data "$graph" --task link --model gcn --mode full \
        --eval-every "$ep" --log-json "$dir/ours-$ds.json" -q "$@"
    for r in $refs; do
        rpy=$py
        [ "$r" != dgl ] || rpy=$pyd
        [ -n "$rpy" ] || { echo "   $r: no environment, left out"; continue; }
        measure "$r-$ds" "$rpy" "$src/bench/reference/link_torch.py" "$graph" --impl "$r" \
            --eval-every "$ep" "$@"
    done
    "$py" "$src/bench/link/table.py" full "$dir" "$ds" $refs
}

# bench_mb DATASET GRAPH EPOCHS BATCH: edge mini-batches.
bench_mb() {
    ds=$1 graph=$2 ep=$3 bs=$4
    for f in ours-mb0 ours-mb dgl-mb; do # no result of an earlier run read as this one's
        rm -f "$dir/$f-$ds.out" "$dir/$f-$ds.json" "$dir/$f-$ds.time"
    done
    set -- --layers 2 --hidden 32 --out-dim 16 --dropout 0 --lr 0.01 --weight-decay 5e-4 \
        --negatives 1 --epochs "$ep" --batch-size "$bs" --fanouts 10,10
    measure "ours-mb0-$ds" "$train" --data "$graph" --task link --model sage --mode minibatch \
        --prefetch 0 --threads "$threads" --eval-every "$ep" --log-json "$dir/ours-mb0-$ds.json" -q "$@"
    measure "ours-mb-$ds" "$train" --data "$graph" --task link --model sage --mode minibatch \
        --threads "$threads" --eval-every "$ep" --log-json "$dir/ours-mb-$ds.json" -q "$@"
    if [ -n "$pyd" ]; then
        measure "dgl-mb-$ds" env PYTHONPATH="$src/bench/reference" "$pyd" \
            "$src/bench/reference/link_minibatch_dgl.py" "$graph" --threads "$threads" \
            --workers 0 --eval-every "$ep" "$@"
    else
        echo "   dgl: no environment, left out"
    fi
    "$py" "$src/bench/link/table.py" minibatch "$dir" "$ds"
}

for ds in $datasets; do
    case $ds in
    cora)
        echo "== cora"
        "$dataset" ogb "$cora_dir" -o "$dir/cora.h5" --force -q
        "$dataset" split-edges "$dir/cora.h5" -o "$dir/cora-link.h5" --seed 0 --force -q
        bench cora "$dir/cora-link.h5" "$cora_epochs"
        [ "$minibatch" = 1 ] && bench_mb cora "$dir/cora-link.h5" "${MB_EPOCHS_CORA:-20}" \
            "${MB_BATCH_CORA:-256}"
        ;;
    sbm)
        echo "== sbm ($sbm_nodes nodes, degree $sbm_degree, $sbm_feat features)"
        g=$dir/sbm-$sbm_nodes-$sbm_degree-$sbm_feat.h5
        [ -f "$g" ] || "$dataset" generate sbm -n "$sbm_nodes" -d "$sbm_degree" -f "$sbm_feat" \
            -s 1 -o "$g" -q
        [ -f "$g.link.h5" ] || "$dataset" split-edges "$g" -o "$g.link.h5" --seed 0 -q
        bench sbm "$g.link.h5" "$sbm_epochs"
        if [ "$minibatch" = 1 ]; then # on a smaller SBM: DGL's epoch on 1M nodes takes hours
            mbn=${MB_SBM_NODES:-100000}
            gm=$dir/sbm-$mbn-$sbm_degree-$sbm_feat.h5
            [ -f "$gm" ] || "$dataset" generate sbm -n "$mbn" -d "$sbm_degree" -f "$sbm_feat" \
                -s 1 -o "$gm" -q
            [ -f "$gm.link.h5" ] || "$dataset" split-edges "$gm" -o "$gm.link.h5" --seed 0 -q
            echo "== sbm edge mini-batches ($mbn nodes)"
            bench_mb sbm "$gm.link.h5" "${MB_EPOCHS_SBM:-2}" "${MB_BATCH_SBM:-4096}"
        fi
        ;;
    *) echo "run.sh: unknown dataset $ds (cora, sbm)" >&2; exit 1 ;;
    esac
done
