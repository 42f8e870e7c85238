#!/usr/bin/env bash
# Full-graph training on one GPU: gnn-train --device cuda against the
# PyTorch reference (bench/reference/gnn_torch.py --device cuda) and, where
# the interpreter has PyTorch Geometric, PyG's own layers, on the same GPU
# and the same graph (bench/train's SBM stand-in: 1M nodes, mean degree 20,
# 128 features, 10 classes; GCN and GraphSAGE, 2 layers, hidden 256; GAT,
# 2 layers, 8 heads of 32 features, attention dropout 0.6: PyG's GATConv);
# ours also with --tf32 (the dense products on TF32 tensor cores) and,
# for gcn and sage, with --cuda-graphs off (every step queued call by
# call instead of replayed from one CUDA graph; the table says how the
# last epoch's step ran).
#
#   bash bench/gpu/train.sh          (after bench/gpu/run.sh built build-gpu/)
#
# Builds gnn-train and gnn-dataset in $BUILD (default build-gpu, configured
# with GNN_CUDA=ON, as bench/gpu/run.sh leaves it), generates the graph
# into a temporary directory (removed at exit), trains each model with
# each trainer for $EPOCHS epochs (default 20, evaluated every 10) and
# prints a table: per-epoch time (mean of the training steps after the
# first; gnn-train's epoch_s, the reference's step up to a
# torch.cuda.synchronize), the reference's time over ours, the test
# accuracy at the best validation epoch, and the peak device memory
# (ours: gnn-train's device_peak_mb, the device memory it held beyond the
# CUDA context at the most; the references': torch.cuda.max_memory_allocated).
# Writes the table to $OUT/gpu-train.txt when OUT is a directory.
# Variables: BUILD, EPOCHS, NODES (1000000), DEGREE (20), GRAPH (that
# graph made beforehand: used instead of generating it), PY (python3: the
# interpreter with torch and CUDA), LIMIT (seconds per training run,
# default 240), MODELS (gcn,sage,gat), QUEUED (1: gcn and sage also with
# --cuda-graphs off; 0: not), DEADLINE (common.sh: the runs that would start past it are
# skipped). Exit status: 0, 1 when a run of gnn-train failed or was
# skipped, 77 without a CUDA device.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/env.sh
BUILD=${BUILD:-build-gpu}
EPOCHS=${EPOCHS:-20}
NODES=${NODES:-1000000}
DEGREE=${DEGREE:-20}
PY=${PY:-python3}
LIMIT=${LIMIT:-240}
MODELS=${MODELS:-gcn,sage,gat}
QUEUED=${QUEUED:-1}
. bench/gpu/common.sh
gpu_bench_setup train gpu-train.txt
G=${GRAPH:-$WORK/sbm.h5}
if [ -z "${GRAPH:-}" ]; then
    "$BUILD/datasets/gnn-dataset" generate sbm -n "$NODES" -d "$DEGREE" -f 128 -o "$G" -q ||
        { echo "bench/gpu/train.sh: gnn-dataset generate failed" >&2; exit 1; }
fi
say "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)," \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), tree $(gnn_tree_id)"
say "== graph: gnn-dataset generate sbm -n $NODES -d $DEGREE -f 128; $EPOCHS epochs, hidden 256" \
    "(gat: 8 heads of 32)"
refs=torch
if "$PY" -c 'import torch_geometric' 2>/dev/null; then refs="torch pyg"; fi
if ! "$PY" -c 'import torch, h5py' 2>/dev/null; then
    say "== references skipped: $PY has no torch or h5py"
    refs=
else
    say "== reference: $("$PY" -c 'import torch
try:
    import torch_geometric as g; v = ", torch_geometric " + g.__version__
except ImportError:
    v = ""
print("torch", torch.__version__ + v)' 2>&1)"
fi
STATUS=0
for m in ${MODELS//,/ }; do
    width="--hidden 256"
    if [ "$m" = gat ]; then width="--hidden 32 --heads 8"; fi
    # shellcheck disable=SC2086 # $width: words
    if room "gnn-train $m" && ! timeout "$(run_limit)" "$BUILD/trainer/gnn-train" --data "$G" \
        --model "$m" --mode full --device cuda --layers 2 $width --epochs "$EPOCHS" \
        --eval-every 10 -q \
        --log-json "$WORK/ours-$m.json" >"$WORK/ours-$m.out" 2>&1; then
        say "gnn-train $m FAILED:"; tail -5 "$WORK/ours-$m.out" | tee -a "$OUTFILE"
        STATUS=1
    fi
    # The same with the dense products on TF32 tensor cores (--tf32).
    # shellcheck disable=SC2086 # $width: words
    if room "gnn-train $m --tf32" && ! timeout "$(run_limit)" "$BUILD/trainer/gnn-train" \
        --data "$G" --model "$m" --mode full --device cuda --tf32 --layers 2 $width \
        --epochs "$EPOCHS" --eval-every 10 -q \
        --log-json "$WORK/ours-tf32-$m.json" >"$WORK/ours-tf32-$m.out" 2>&1; then
        say "gnn-train $m --tf32 FAILED:"; tail -5 "$WORK/ours-tf32-$m.out" | tee -a "$OUTFILE"
        STATUS=1
    fi
    # The same with every step queued call by call (--cuda-graphs off).
    # shellcheck disable=SC2086 # $width: words
    if [ "$m" != gat ] && [ "$QUEUED" = 1 ] && room "gnn-train $m --cuda-graphs off" &&
        ! timeout "$(run_limit)" "$BUILD/trainer/gnn-train" --data "$G" --model "$m" \
        --mode full --device cuda --cuda-graphs off --layers 2 $width --epochs "$EPOCHS" \
        --eval-every 10 -q --log-json "$WORK/ours-queued-$m.json" >"$WORK/ours-queued-$m.out" 2>&1; then
        say "gnn-train $m --cuda-graphs off FAILED:"; tail -5 "$WORK/ours-queued-$m.out" | tee -a "$OUTFILE"
        STATUS=1
    fi
    for r in $refs; do
        extra=
        if [ "$r" = pyg ]; then extra="--impl pyg"; fi
        # shellcheck disable=SC2086 # $extra, $width: words
        room "$r $m" || continue
        timeout "$(run_limit)" "$PY" bench/reference/gnn_torch.py "$G" --model "$m" $extra \
            --layers 2 $width --epochs "$EPOCHS" --eval-every 10 --device cuda \
            --log-json "$WORK/$r-$m.json" >"$WORK/$r-$m.out" 2>&1 ||
            { say "$r $m failed:"; tail -5 "$WORK/$r-$m.out" | tee -a "$OUTFILE"; }
    done
done
# shellcheck disable=SC2086 # $refs: words
"$PY" - "$WORK" "$MODELS" "$QUEUED" $refs <<'EOF' | tee -a "$OUTFILE"
import json, sys
work, models, queued, refs = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "1", sys.argv[4:]

def read(path):
    try:
        lines = [json.loads(l) for l in open(path) if l.strip()]
    except (OSError, ValueError):
        return None
    final = next((l for l in lines if l.get("final")), None)
    ep = [l["epoch_s"] for l in lines if "epoch_s" in l and not l.get("final")]
    if not final or not ep:
        return None
    warm = ep[1:] or ep
    steps = [l["step"] for l in lines if "step" in l and not l.get("final")]
    mem = final.get("device_peak_mb", final.get("gpu_peak_mb"))
    return {"ms": 1e3 * sum(warm) / len(warm), "acc": 100 * final["test_acc"],
            "mem": mem, "step": steps[-1] if steps else ""}

# Peak memory: ours the device memory held beyond the context at the most
# (gnn-train's device_peak_mb, the stream-ordered pool's high-water mark
# included); the references' torch.cuda.max_memory_allocated.
print("| model | trainer | ms/epoch | its time / ours | test acc % | peak GPU MB |")
print("|---|---|---|---|---|---|")
for m in models:
    ours = read(f"{work}/ours-{m}.json")
    mine = ["ours", "ours-tf32"] + (["ours-queued"] if m != "gat" and queued else [])
    for t in mine + refs:
        r = ours if t == "ours" else read(f"{work}/{t}-{m}.json")
        if r is None:
            print(f"| {m} | {t} | failed | | | |")
            continue
        ratio = f"{r['ms'] / ours['ms']:.2f}x" if ours and t != "ours" else ""
        mem = f"{r['mem']:.0f}" if r["mem"] is not None else ""
        name = f"{t} (step {r['step']})" if r["step"] else t
        print(f"| {m} | {name} | {r['ms']:.2f} | {ratio} | {r['acc']:.1f} | {mem} |")
EOF
exit "$STATUS"
