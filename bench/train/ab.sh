#!/bin/sh
# Two builds of gnn-train against each other in one run: a change that
# should not alter speed or results (a refactor) is measured against the
# commit before it. Trains what bench/train/run.sh trains (GCN and
# GraphSAGE full-graph on Cora and on the 1M-node SBM graph, the same
# settings), each configuration REPS times per build with the two builds
# alternating, and prints per epoch time (median over the repetitions of
# the mean over every epoch but the first of each run, from --log-json),
# the ratio new / base, and whether the per-epoch losses, validation
# losses and accuracies of the two builds agree to 1e-6 relative.
#
# Usage: bench/train/ab.sh BASE_REV [NEW_REV]   (NEW_REV default: the work tree)
#   BASE_REV and NEW_REV are git revisions of this repository; each is
#   built (Release) in BENCH_DIR from a checkout of its own.
# Environment (defaults in brackets):
#   BENCH_DIR  builds, graphs and logs [/tmp/gnn-ab]
#   THREADS    threads of gnn-train [nproc]     REPS  alternations [3]
#   DATASETS   any of: cora sbm [cora sbm]      MODELS  [gcn sage]
#   CORA_DIR   OGB-layout Cora [<repo>/../shared/datasets/cora]
#   SBM_NODES SBM_DEGREE SBM_FEAT [1000000 20 128]
#   SBM_HIDDEN SBM_EPOCHS SBM_EVAL_EVERY [256 10 5]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: bench/train/ab.sh BASE_REV [NEW_REV]" >&2; exit 2; }
base_rev=$1
new_rev=${2:-}
dir=${BENCH_DIR:-/tmp/gnn-ab}
threads=${THREADS:-$(nproc)}
reps=${REPS:-3}
datasets=${DATASETS:-cora sbm}
models=${MODELS:-gcn sage}
cora_dir=${CORA_DIR:-$src/../shared/datasets/cora}
sbm_nodes=${SBM_NODES:-1000000}
sbm_degree=${SBM_DEGREE:-20}
sbm_feat=${SBM_FEAT:-128}
sbm_hidden=${SBM_HIDDEN:-256}
sbm_epochs=${SBM_EPOCHS:-10}
sbm_eval=${SBM_EVAL_EVERY:-5}
mkdir -p "$dir"

# build NAME REV: a Release build of REV (empty: the work tree) in $dir/NAME.
build() {
    name=$1 rev=$2 tree=$dir/$1-src
    rm -rf "$tree"
    mkdir -p "$tree"
    if [ -n "$rev" ]; then
        git -C "$src" rev-parse --verify -q "$rev^{commit}" >/dev/null ||
            { echo "ab.sh: no revision $rev" >&2; exit 1; }
        git -C "$src" archive "$rev" | tar -xf - -C "$tree"
        echo "== build $name: $(git -C "$src" rev-parse --short "$rev")"
    else
        (cd "$src" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$tree"
        echo "== build $name: the work tree (on $(git -C "$src" rev-parse --short HEAD))"
    fi
    cmake -S "$tree" -B "$dir/$name" -DCMAKE_BUILD_TYPE=Release -DGNN_CUDA=OFF \
        >"$dir/$name.log" 2>&1 &&
        cmake --build "$dir/$name" -j"$threads" --target gnn-train gnn-dataset \
            >>"$dir/$name.log" 2>&1 || { cat "$dir/$name.log"; exit 1; }
}
build base "$base_rev"
build new "$new_rev"
dataset=$dir/new/datasets/gnn-dataset

# run NAME GRAPH OPTIONS...: both builds REPS times, alternating.
run() {
    name=$1 graph=$2
    shift 2
    i=1
    while [ "$i" -le "$reps" ]; do
        for b in base new; do
            OMP_NUM_THREADS=$threads "$dir/$b/trainer/gnn-train" --data "$graph" \
                --threads "$threads" -q --log-json "$dir/$name-$b-$i.json" "$@" ||
                { echo "ab.sh: $b failed on $name" >&2; exit 1; }
        done
        i=$((i + 1))
    done
    echo "   $name done"
}

echo "== $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' \
    /proc/cpuinfo | head -n 1)), $threads threads, $reps repetitions"
names=
for ds in $datasets; do
    case $ds in
    cora)
        g=$dir/cora.h5
        [ -s "$g" ] || "$dataset" ogb "$cora_dir" --symmetrize -q --force -o "$g"
        for m in $models; do
            run "cora-$m" "$g" --model "$m" --mode full --layers 2 --hidden 16 --dropout 0.5 \
                --lr 0.01 --weight-decay 5e-4 --epochs 200 --runs 3 --normalize-features
            names="$names cora-$m"
        done
        ;;
    sbm)
        g=$dir/sbm-$sbm_nodes-$sbm_degree-$sbm_feat.h5
        [ -s "$g" ] || "$dataset" generate sbm -n "$sbm_nodes" -d "$sbm_degree" \
            -f "$sbm_feat" -q --force -o "$g"
        for m in $models; do
            run "sbm-$m" "$g" --model "$m" --mode full --layers 2 --hidden "$sbm_hidden" \
                --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --epochs "$sbm_epochs" \
                --eval-every "$sbm_eval"
            names="$names sbm-$m"
        done
        ;;
    *) echo "ab.sh: unknown dataset $ds (cora, sbm)" >&2; exit 1 ;;
    esac
done

python3 - "$dir" "$reps" $names <<'EOF'
import json, statistics, sys
d, reps, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]
def epoch_ms(rows):  # mean over every epoch but the first of each run
    t = [r["epoch_s"] for r in rows if "epoch" in r and r["epoch"] > 1]
    return 1e3 * sum(t) / len(t)
keys = ("loss", "valid_loss", "train_acc", "valid_acc", "test_acc")
print("| config | ms/epoch base | ms/epoch new | new / base | results equal |")
print("|---|---|---|---|---|")
for n in names:
    ms = {b: statistics.median(epoch_ms(lines(f"{d}/{n}-{b}-{i}.json"))
                               for i in range(1, reps + 1)) for b in ("base", "new")}
    worst = 0.0
    for i in range(1, reps + 1):
        a = [r for r in lines(f"{d}/{n}-base-{i}.json") if "epoch" in r]
        b = [r for r in lines(f"{d}/{n}-new-{i}.json") if "epoch" in r]
        if len(a) != len(b):
            worst = float("inf")
            continue
        for x, y in zip(a, b):
            for k in keys:
                u, v = x.get(k), y.get(k)
                if u is None or v is None:
                    worst = worst if u == v else float("inf")
                    continue
                worst = max(worst, abs(u - v) / max(abs(u), 1e-30))
    same = "yes" if worst <= 1e-6 else f"NO (worst {worst:.3g})"
    print(f"| {n} | {ms['base']:.1f} | {ms['new']:.1f} | {ms['new'] / ms['base']:.3f} | {same} |")
EOF
