#!/bin/sh
# Train GCN, GraphSAGE and GAT full-graph with gnn-train, with the PyTorch
# reference (bench/reference/gnn_torch.py, same models, same loop), with
# PyTorch Geometric's layers (the same script, --impl pyg --adj csr; GAT
# on edge_index) and with DGL's (--impl dgl) on Cora and on a large SBM
# graph, each process
# under /usr/bin/time -v, and print per-epoch time, peak RSS and test
# accuracy side by side with the ratios, against each reference and
# against the fastest. torch, PyG and DGL are PyPI's releases
# (bench/reference/python.sh installs them once into two virtual
# environments; a library that cannot be had is left out with a note):
#   torch, pyg          the newest torch (2.15.0) with PyG
#   torch-dgl, pyg-dgl  the same scripts under DGL's environment, whose
#                       older torch (2.2.1) is faster on some CPUs
#   dgl                 DGL 2.1.0 on that torch
#
# Usage: bench/train/run.sh [BUILD_DIR]         (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR   graphs, logs and timings [/tmp/gnn-bench]
#   THREADS     threads of both trainers (OMP_NUM_THREADS, --threads) [nproc]
#   DATASETS    any of: cora sbm [cora sbm]
#   MODELS      any of: gcn sage gat [gcn sage]
#   CORA_DIR    OGB-layout Cora [<repo>/../shared/datasets/cora]
#   CORA_RUNS   runs per trainer on Cora, 200 epochs each [5]
#   SBM_NODES SBM_DEGREE SBM_FEAT [1000000 20 128]
#   SBM_HIDDEN SBM_EPOCHS SBM_EVAL_EVERY [256 10 5]  (SBM_HIDDEN: gcn, sage)
#   GAT_HEADS GAT_HIDDEN  heads of GAT's hidden layer, features each [8 8]
# Settings (the same for every trainer): Cora, gcn and sage: hidden 16,
# dropout 0.5, lr 0.01; gat: the GAT paper's (GAT_HEADS x GAT_HIDDEN,
# one output head, dropout and attention dropout 0.6, LeakyReLU slope
# 0.2, lr 0.005); all with weight decay 5e-4 and row-normalised features.
# SBM: dropout 0.5, lr 0.01, weight decay 5e-4; gcn and sage SBM_HIDDEN
# wide, gat GAT_HEADS x GAT_HIDDEN with one output head, attention dropout
# 0.6, slope 0.2. Two layers throughout.
#   TIMEOUT     seconds allowed to one training process [900]
#   FIG_DIR     where the Cora GCN curves go (needs gnuplot) [BENCH_DIR]
#   PYTHON, BENCH_VENV, BENCH_VENV_DGL   see bench/reference/python.sh
#   REFERENCES  any of: torch pyg torch-dgl pyg-dgl dgl [all five]
#   PYG_ADJ     how PyG gets the graph: csr (adj_t) or edge_index [csr]
# Per-epoch time is the training step only (no evaluation), averaged over
# every epoch but the first of each run, computed the same way from both
# trainers' --log-json files. Needs cmake, a C compiler, GNU time
# (apt-get install time) and python3 with venv (or PYTHON).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
here=$src/bench/train
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench}
threads=${THREADS:-$(nproc)}
datasets=${DATASETS:-cora sbm}
models=${MODELS:-gcn sage}
cora_dir=${CORA_DIR:-$src/../shared/datasets/cora}
cora_runs=${CORA_RUNS:-5}
sbm_nodes=${SBM_NODES:-1000000}
sbm_degree=${SBM_DEGREE:-20}
sbm_feat=${SBM_FEAT:-128}
sbm_hidden=${SBM_HIDDEN:-256}
sbm_epochs=${SBM_EPOCHS:-10}
sbm_eval=${SBM_EVAL_EVERY:-5}
gat_heads=${GAT_HEADS:-8}
gat_hidden=${GAT_HIDDEN:-8}
limit=${TIMEOUT:-900}
fig_dir=${FIG_DIR:-$dir}
pyg_adj=${PYG_ADJ:-csr}

[ -x /usr/bin/time ] || { echo "run.sh: GNU time missing: apt-get install time" >&2; exit 1; }
py=$("$src/bench/reference/python.sh") || exit 1
trainers=ours
pyd=
for r in ${REFERENCES:-torch pyg torch-dgl pyg-dgl dgl}; do
    case $r in
    torch) trainers="$trainers torch" ;;
    pyg)
        if $py -c 'import torch_geometric' 2>/dev/null; then
            trainers="$trainers pyg"
        else
            echo "run.sh: torch_geometric not importable by $py: PyG left out" >&2
        fi
        ;;
    dgl | torch-dgl | pyg-dgl)
        [ -n "$pyd" ] || pyd=$("$src/bench/reference/python.sh" dgl) || pyd=none
        if [ "$pyd" != none ]; then
            trainers="$trainers $r"
        else
            echo "run.sh: no DGL environment: $r left out" >&2
        fi
        ;;
    *) echo "run.sh: unknown reference $r (torch, pyg, torch-dgl, pyg-dgl, dgl)" >&2; exit 1 ;;
    esac
done
mkdir -p "$dir" "$fig_dir"

echo "== build ($build, Release)"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$dir/build.log" 2>&1 &&
    cmake --build "$build" -j"$threads" --target gnn-train gnn-dataset >>"$dir/build.log" 2>&1 ||
    { cat "$dir/build.log"; exit 1; }
train=$build/trainer/gnn-train
dataset=$build/datasets/gnn-dataset

# One training process: NAME, then the command. Writes NAME.time (GNU
# time), NAME.out (its output) and, through the command, NAME.json.
measure() {
    name=$1
    shift
    printf '   %-22s ' "$name"
    rm -f "$dir/$name.json"
    if OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads \
        PYTHONWARNINGS=ignore /usr/bin/time -v \
        -o "$dir/$name.time" timeout "$limit" "$@" >"$dir/$name.out" 2>&1; then
        echo "$(sed -n "s/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p" "$dir/$name.time") wall"
    else
        rc=$?
        case $rc in
        124) why="timed out after $limit s" ;;
        137) why="killed by SIGKILL, out of memory?" ;;
        *) why="exit $rc" ;;
        esac
        kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/$name.time")
        echo "FAILED ($why; peak RSS $((${kb:-0} / 1024)) MB); see $dir/$name.out"
    fi
}

# settings DATASET MODEL: the training options both trainers get, as words.
settings() {
    case $1-$2 in
    cora-gat)
        echo "--layers 2 --heads $gat_heads --hidden $gat_hidden --out-heads 1 --dropout 0.6" \
            "--attn-dropout 0.6 --negative-slope 0.2 --lr 0.005 --weight-decay 5e-4" \
            "--epochs 200 --runs $cora_runs --normalize-features"
        ;;
    cora-*)
        echo "--layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4" \
            "--epochs 200 --runs $cora_runs --normalize-features"
        ;;
    sbm-gat)
        echo "--layers 2 --heads $gat_heads --hidden $gat_hidden --out-heads 1 --dropout 0.5" \
            "--attn-dropout 0.6 --negative-slope 0.2 --lr 0.01 --weight-decay 5e-4" \
            "--epochs $sbm_epochs --eval-every $sbm_eval"
        ;;
    sbm-*)
        echo "--layers 2 --hidden $sbm_hidden --dropout 0.5 --lr 0.01 --weight-decay 5e-4" \
            "--epochs $sbm_epochs --eval-every $sbm_eval"
        ;;
    esac
}

# bench DATASET GRAPH: every trainer, every model, with its settings.
bench() {
    ds=$1 graph=$2
    for m in $models; do
        opts=$(settings "$ds" "$m")
        echo "   $m: $opts"
        # PyG's GATConv has no sparse-product path: it takes edge_index.
        adj=$pyg_adj
        [ "$m" != gat ] || adj=edge_index
        # shellcheck disable=SC2086 # $opts: words
        measure "ours-$ds-$m" "$train" --data "$graph" --model "$m" --mode full \
            --threads "$threads" -q \
            --log-json "$dir/ours-$ds-$m.json" $opts
        for r in $trainers; do
            case $r in
            torch) rpy=$py extra= ;;
            pyg) rpy=$py extra="--impl pyg --adj $adj" ;;
            torch-dgl) rpy=$pyd extra= ;;
            pyg-dgl) rpy=$pyd extra="--impl pyg --adj $adj" ;;
            dgl) rpy=$pyd extra="--impl dgl" ;;
            *) continue ;;
            esac
            # shellcheck disable=SC2086 # $extra, $opts: words
            measure "$r-$ds-$m" "$rpy" "$src/bench/reference/gnn_torch.py" "$graph" \
                --model "$m" $extra --threads "$threads" --log-json "$dir/$r-$ds-$m.json" $opts
        done
    done
}

echo "== reference: $($py -W ignore -c 'import torch
try:
    import torch_geometric as g; v = ", torch_geometric " + g.__version__
except ImportError:
    v = ""
print("torch", torch.__version__ + v, "(" + ("MKL" if torch.backends.mkl.is_available() else "no MKL") + ")")')"
if [ -n "$pyd" ] && [ "$pyd" != none ]; then
    echo "== reference (DGL's environment): $($pyd -W ignore -c 'import torch, dgl, torch_geometric as g
print("dgl", dgl.__version__, "and torch_geometric", g.__version__, "on torch", torch.__version__)' 2>/dev/null)"
fi
echo "== $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -n 1)), $threads threads, load:$(uptime | sed 's/.*load average://')"
for m in $models; do
    case $m in
    gcn | sage | gat) ;;
    *) echo "run.sh: unknown model $m (gcn, sage, gat)" >&2; exit 1 ;;
    esac
done
for ds in $datasets; do
    case $ds in
    cora)
        g=$dir/cora.h5
        [ -s "$g" ] || "$dataset" ogb "$cora_dir" --symmetrize -q --force -o "$g"
        echo "== cora: 200 epochs, $cora_runs runs"
        bench cora "$g"
        ;;
    sbm)
        g=$dir/sbm-$sbm_nodes-$sbm_degree-$sbm_feat.h5
        [ -s "$g" ] || "$dataset" generate sbm -n "$sbm_nodes" -d "$sbm_degree" \
            -f "$sbm_feat" -q --force -o "$g"
        echo "== sbm: $sbm_nodes nodes, degree $sbm_degree, $sbm_feat features;" \
            "$sbm_epochs epochs, evaluated every $sbm_eval"
        bench sbm "$g"
        ;;
    *) echo "run.sh: unknown dataset $ds (cora, sbm)" >&2; exit 1 ;;
    esac
done

echo
$py "$here/table.py" "$dir" $datasets -- $models

if [ -s "$dir/ours-cora-gcn.json" ] && [ -s "$dir/torch-cora-gcn.json" ]; then
    if "$here/plot.sh" -o "$fig_dir/train-cora-gcn.png" -t "GCN on Cora (run 1)" \
        "$dir/ours-cora-gcn.json" "$dir/torch-cora-gcn.json"; then
        echo "curves: $fig_dir/train-cora-gcn.png"
    fi
fi
