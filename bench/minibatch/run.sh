#!/bin/sh
# Mini-batch training on a generated graph of ogbn-products size (SBM,
# 2.4M nodes, about 120M stored edges, 100 features, 47 classes):
#   1. sampler throughput, fanouts 15,10,5 and batches of 1024, on 1 and 2
#      threads (sampler_bench), against DGL's sampler (its NeighborSampler's
#      sample_blocks, as its DataLoader calls it: the fused kernel on more
#      than one thread) and the straightforward
#      PyTorch sampler (bench/reference/sample_torch.py --impl dgl|torch)
#      on the same graph and seeds;
#   2. one epoch of 3-layer GraphSAGE (hidden 256) with gnn-train (and with
#      DGL: DGL_RUNS), for
#      each count of compute threads first with --prefetch 0 (each batch
#      sampled when needed, so its compute_s is the pure compute time of
#      the epoch's batches), then with the prefetching loader: epoch time
#      over that pure compute time. Every run trains the same batches (the
#      loader's batches do not depend on its threads or queue depth). The
#      first run also evaluates (layer-wise inference over all nodes).
#
# Usage: bench/minibatch/run.sh [BUILD_DIR]          (default /tmp/build-bench)
# Environment (defaults in brackets):
#   BENCH_DIR  graph and logs [/tmp/gnn-bench-minibatch]; the graph is kept
#              there and reused by later runs
#   NODES DEGREE FEAT CLASSES  [2400000 50 100 47]
#   BATCHES    batches timed by the sampler benchmarks [50; torch: TORCH_BATCHES 10;
#              DGL: DGL_BATCHES, as BATCHES]
#   EPOCH_RUNS "COMPUTE:SAMPLER:PREFETCH ..." gnn-train --threads,
#              --sampler-threads, --prefetch; each COMPUTE needs its
#              COMPUTE:0:0 run first; none: no epochs
#              [2:0:0 2:1:2 2:2:4 1:0:0 1:1:2]
#   EVAL       1: the first of those runs also evaluates; 0: none does [1]
#   DGL_RUNS   "COMPUTE:WORKERS ..." the same epoch with DGL
#              (bench/reference/minibatch_dgl.py: torch threads, DataLoader
#              worker processes, 0 sampling in the loop); none: no DGL
#              [2:0 1:1]
# Prints RESULT lines and a summary table. Needs cmake, a C compiler, and
# for the references PyPI's torch and DGL (bench/reference/python.sh
# installs them once; PYTHON or BENCH_VENV choose another torch; each
# skipped with a note when it cannot be had).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench}
dir=${BENCH_DIR:-/tmp/gnn-bench-minibatch}
nodes=${NODES:-2400000}
degree=${DEGREE:-50}
feat=${FEAT:-100}
classes=${CLASSES:-47}
batches=${BATCHES:-50}
epoch_runs=${EPOCH_RUNS:-2:0:0 2:1:2 2:2:4 1:0:0 1:1:2}
py=$("$src/bench/reference/python.sh") || py=
[ -x /usr/bin/time ] || { echo "bench/minibatch/run.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
pyd=$("$src/bench/reference/python.sh" dgl) || pyd=
mkdir -p "$dir"

echo "== build ($build, Release)"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$dir/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target gnn-train gnn-dataset sampler_bench \
        >>"$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }

graph=$dir/sbm-$nodes-$degree-$feat.h5
if [ ! -s "$graph" ]; then
    echo "== generate $graph"
    "$build/datasets/gnn-dataset" generate sbm -n "$nodes" -d "$degree" -f "$feat" \
        -c "$classes" -s 1 -o "$graph" --force -q
fi
"$build/datasets/gnn-dataset" info "$graph" | sed -n '1,12p'

echo "== sampler: batch 1024, fanouts 15,10,5 ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
for t in 1 2; do
    OMP_NUM_THREADS=$t "$build/bench/sampler_bench" "$graph" -b 1024 -f 15,10,5 -n "$batches" |
        grep RESULT
done
if [ -n "$py" ]; then
    $py -W ignore -c 'import torch; print("reference: torch", torch.__version__)'
    for t in 1 2; do
        $py "$src/bench/reference/sample_torch.py" "$graph" -b 1024 -f 15,10,5 \
            -n "${TORCH_BATCHES:-10}" --threads "$t"
    done
else
    echo "(no torch: PyTorch reference skipped)"
fi
if [ -n "$pyd" ]; then
    $pyd -W ignore -c 'import dgl, torch; print("reference: dgl", dgl.__version__, "on torch", torch.__version__)'
    for t in 1 2; do
        # DGL's sampling kernels run on OMP_NUM_THREADS threads.
        OMP_NUM_THREADS=$t $pyd -W ignore "$src/bench/reference/sample_torch.py" "$graph" -b 1024 \
            -f 15,10,5 -n "${DGL_BATCHES:-$batches}" --threads "$t" --impl dgl ||
            echo "DGL sampler on $t threads FAILED"
    done
else
    echo "(no DGL: DGL reference skipped)"
fi

if [ "$epoch_runs" = none ]; then exit 0; fi
echo "== GraphSAGE, 3 layers, hidden 256, fanouts 15,10,5, batch 1024: one epoch"
train() { # NAME, then gnn-train options
    name=$1
    shift
    /usr/bin/time -f %M -o "$dir/$name.rss" \
        "$build/trainer/gnn-train" --data "$graph" --model sage --mode minibatch --layers 3 \
        --hidden 256 --fanouts 15,10,5 --batch-size 1024 --epochs 1 \
        --eval-batch-size 16384 --log-json "$dir/$name.json" -q "$@"
    python3 - "$dir/$name.json" "$name" "$dir/$name.rss" <<'EOF'
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l][-1]
rss = int(open(sys.argv[3]).read().split()[-1]) / 1024
print(f"RESULT run={sys.argv[2]} epoch_s={e['epoch_s']:.2f} compute_s={e['compute_s']:.2f} "
      f"sample_s={e['sample_s']:.2f} gather_s={e['gather_s']:.2f} prepare_s={e['prepare_s']:.2f} "
      f"stall_s={e['stall_s']:.2f} stalls={e['prefetch_stalls']} batches={e['batches']} "
      f"sampled_edges={e['sampled_edges']} input_nodes_mean={e['input_nodes_mean']:.0f} "
      f"loss={e['loss']:.4f} peak_rss_mb={rss:.0f} eval_s={e['eval_s']:.2f} "
      f"test_acc={e['test_acc']}")
EOF
}
first=${EVAL:-1}
for r in $epoch_runs; do
    c=${r%%:*} rest=${r#*:}
    t=${rest%%:*} k=${rest#*:}
    eval_opt="--eval-every 0"
    [ $first = 1 ] && eval_opt=""
    first=0
    # shellcheck disable=SC2086
    train "run-$r" --threads "$c" --sampler-threads "$((t > 0 ? t : 1))" --prefetch "$k" $eval_opt
done

# The same epoch with DGL: COMPUTE:WORKERS, torch threads and DataLoader
# worker processes (0: sampling in the training loop).
dgl_runs=${DGL_RUNS:-2:0 1:1}
if [ -n "$pyd" ] && [ "$dgl_runs" != none ]; then
    echo "== the same epoch with DGL (bench/reference/minibatch_dgl.py)"
    ok_dgl=
    for r in $dgl_runs; do
        c=${r%%:*} w=${r#*:}
        OMP_NUM_THREADS=$c /usr/bin/time -f %M -o "$dir/dgl-$r.rss" $pyd -W ignore \
            "$src/bench/reference/minibatch_dgl.py" "$graph" --layers 3 --hidden 256 \
            --fanouts 15,10,5 --batch-size 1024 --epochs 1 --threads "$c" --workers "$w" \
            --log-json "$dir/dgl-$r.json" >"$dir/dgl-$r.out" || {
            echo "dgl-$r FAILED (see $dir/dgl-$r.out)"
            continue
        }
        ok_dgl="$ok_dgl $r"
        python3 - "$dir/dgl-$r.json" "dgl-$r" "$dir/dgl-$r.rss" <<'EOF'
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if '"final"' in l][-1]
rss = int(open(sys.argv[3]).read().split()[-1]) / 1024
print(f"RESULT run={sys.argv[2]} epoch_s={e['epoch_s']:.2f} batches={e['batches']} "
      f"sampled_edges={e['sampled_edges']} input_nodes_mean={e['input_nodes_mean']:.0f} "
      f"loss={e['loss']:.4f} peak_rss_mb={rss:.0f} dgl={e['dgl']} torch={e['torch']}")
EOF
    done
    dgl_runs=${ok_dgl:-none}
else
    dgl_runs=none
fi

echo "== summary"
python3 - "$dir" "$dgl_runs" $epoch_runs <<'EOF'
import json, sys
d, dgl_runs, runs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def last(name):
    return [json.loads(l) for l in open(f"{d}/{name}.json") if '"epoch"' in l][-1]
def rss(name):
    return int(open(f"{d}/{name}.rss").read().split()[-1]) / 1024
print("| compute threads | sampler threads | prefetch | epoch s | pure compute s | "
      "epoch / pure compute | sampler-thread s | stall s |")
print("|---|---|---|---|---|---|---|---|")
for r in runs:
    c, t, k = r.split(":")
    e, base = last(f"run-{r}"), last(f"run-{c}:0:0")
    work = e['sample_s'] + e['gather_s'] + e['prepare_s']
    print(f"| {c} | {t if k != '0' else '- (in the step)'} | {k} | {e['epoch_s']:.1f} | "
          f"{base['compute_s']:.1f} | {e['epoch_s'] / base['compute_s']:.2f} | {work:.1f} | "
          f"{e['stall_s']:.2f} |")
if dgl_runs and dgl_runs != ["none"]:
    # DGL's run against ours with the same compute threads, sampling in the
    # step (workers 0: prefetch 0) or ahead of it (workers w: w sampler
    # threads, the first such run).
    print()
    print("| compute threads | sampling | DGL epoch s | ours epoch s | DGL / ours | "
          "DGL peak RSS MB | ours peak RSS MB | DGL loss | ours loss |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in dgl_runs:
        c, w = r.split(":")
        match = [x for x in runs if x.split(":")[0] == c and
                 (x.split(":")[2] == "0" if w == "0" else
                  x.split(":")[1] == w and x.split(":")[2] != "0")]
        g = [json.loads(l) for l in open(f"{d}/dgl-{r}.json") if '"final"' in l][-1]
        how = "in the step" if w == "0" else f"{w} worker(s) / sampler thread(s) ahead"
        if not match:
            print(f"| {c} | {how} | {g['epoch_s']:.1f} | (no run) | | {rss('dgl-' + r):.0f} | | "
                  f"{g['loss']:.3f} | |")
            continue
        e = last(f"run-{match[0]}")
        print(f"| {c} | {how} | {g['epoch_s']:.1f} | {e['epoch_s']:.1f} | "
              f"{g['epoch_s'] / e['epoch_s']:.2f}x | {rss('dgl-' + r):.0f} | "
              f"{rss('run-' + match[0]):.0f} | {g['loss']:.3f} | {e['loss']:.3f} |")
EOF
