#!/usr/bin/env bash
# Mini-batch training on one GPU: one epoch of 3-layer GraphSAGE (hidden
# 256, fanouts 15,10,5, batches of 1024) on the products-size SBM of
# bench/minibatch (2.4M nodes, mean degree 50, 100 features, 47 classes),
# gnn-train --device cuda with the batches sampled on the host (--sampler
# host: --sampler-threads threads, --prefetch ahead; the rows gathered on
# the GPU) and on the GPU itself (--sampler device: sampling, block
# preparation and the gather all there), the last also with the feature
# table in host memory and a device cache of a quarter of it. All train the same batches, so
# the losses must agree; prints a table of the epoch, its sampling and
# compute times, the time over the device sampler's, the loss and the
# test accuracy after the epoch.
#
#   bash bench/gpu/minibatch.sh      (after bench/gpu/run.sh built build-gpu/)
#
# Variables: BUILD (build-gpu), NODES (2400000), DEGREE (50), EPOCHS (1),
# THREADS (--threads, default half the cores), SAMPLERS (--sampler-threads,
# the other half), LIMIT (seconds per run, 300). Writes the table to
# $OUT/gpu-minibatch.txt when OUT is a directory. Exit status: 0; 1 when a
# run failed or the losses differ; 77 without a CUDA device.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/env.sh
BUILD=${BUILD:-build-gpu}
NODES=${NODES:-2400000}
DEGREE=${DEGREE:-50}
EPOCHS=${EPOCHS:-1}
LIMIT=${LIMIT:-300}
CORES=$(nproc)
THREADS=${THREADS:-$(( CORES / 2 > 0 ? CORES / 2 : 1 ))}
SAMPLERS=${SAMPLERS:-$(( CORES - THREADS > 0 ? CORES - THREADS : 1 ))}
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "bench/gpu/minibatch.sh: no CUDA device (nvidia-smi lists none)" >&2
    exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnn-gpu-mb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
OUTFILE=$WORK/table.txt
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then OUTFILE=$OUT/gpu-minibatch.txt; fi
: >"$OUTFILE"
say() { printf '%s\n' "$*" | tee -a "$OUTFILE"; }
cmake --build "$BUILD" -j"$CORES" --target gnn-train gnn-dataset >"$WORK/build.log" 2>&1 ||
    { tail -20 "$WORK/build.log" >&2; echo "bench/gpu/minibatch.sh: build failed" >&2; exit 1; }
G=$WORK/sbm.h5
t0=$(date +%s)
"$BUILD/datasets/gnn-dataset" generate sbm -n "$NODES" -d "$DEGREE" -f 100 -c 47 -o "$G" -q ||
    { echo "bench/gpu/minibatch.sh: gnn-dataset generate failed" >&2; exit 1; }
say "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)," \
    "$CORES cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), tree $(gnn_tree_id)"
say "== graph: gnn-dataset generate sbm -n $NODES -d $DEGREE -f 100 -c 47 ($(( $(date +%s) - t0 )) s);" \
    "sage, 3 layers, hidden 256, fanouts 15,10,5, batch 1024, $EPOCHS epoch(s), --threads $THREADS"
STATUS=0
run() { # NAME, then options
    local name=$1; shift
    if ! timeout "$LIMIT" "$BUILD/trainer/gnn-train" --data "$G" --model sage --mode minibatch \
        --device cuda --layers 3 --hidden 256 --fanouts 15,10,5 --batch-size 1024 \
        --epochs "$EPOCHS" --threads "$THREADS" -q --log-json "$WORK/$name.json" "$@" \
        >"$WORK/$name.out" 2>&1; then
        say "$name FAILED:"; tail -5 "$WORK/$name.out" | tee -a "$OUTFILE"
        STATUS=1
    fi
}
run host --sampler host --sampler-threads "$SAMPLERS" --prefetch 4
run host-inline --sampler host --prefetch 0
run device --sampler device
# The feature table left in host memory (read over the bus), with a device
# cache of the rows a pre-sampled epoch reads most, a quarter of the table.
run device-hostfeat --sampler device --features-on host \
    --feature-cache "$(( NODES * 100 * 4 / 4 / 1048576 ))M"
python3 - "$WORK" <<'PYEOF' | tee -a "$OUTFILE"
import json, sys
work = sys.argv[1]
def read(name):
    try:
        lines = [json.loads(l) for l in open(f"{work}/{name}.json") if l.strip()]
    except (OSError, ValueError):
        return None
    ep = [l for l in lines if "epoch_s" in l and not l.get("final")]
    return ep[-1] if ep else None
runs = {n: read(n) for n in ("host", "host-inline", "device", "device-hostfeat")}
dev = runs["device"]
print("| sampler | epoch s | sampling s | compute s | epoch / device's | loss | test acc % |")
print("|---|---|---|---|---|---|---|")
for n, r in runs.items():
    if r is None:
        print(f"| {n} | failed | | | | | |")
        continue
    ratio = f"{r['epoch_s'] / dev['epoch_s']:.2f}x" if dev else ""
    acc = r.get("test_acc")
    acc = f"{100 * acc:.1f}" if isinstance(acc, (int, float)) else ""
    print(f"| {n} | {r['epoch_s']:.2f} | {r['sample_s']:.2f} | {r['compute_s']:.2f} | {ratio} | "
          f"{r['loss']:.6f} | {acc} |")
# The same batches: the losses agree up to the GPU's summation order
# (auto's SpMM choice may differ between the two runs).
losses = [r["loss"] for r in runs.values() if r]
if losses and max(losses) - min(losses) > 1e-4 * max(1.0, abs(losses[0])):
    print("LOSSES DIFFER:", {n: r["loss"] for n, r in runs.items() if r})
    sys.exit(1)
PYEOF
[ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
exit "$STATUS"
