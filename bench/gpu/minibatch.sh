#!/usr/bin/env bash
# Mini-batch training on one GPU: one epoch of 3-layer GraphSAGE (hidden
# 256, fanouts 15,10,5, batches of 1024) on the products-size SBM of
# bench/minibatch (2.4M nodes, mean degree 50, 100 features, 47 classes),
# gnn-train --device cuda with the batches sampled on the host (--sampler
# host: --sampler-threads threads, --prefetch ahead; the rows gathered on
# the GPU) and on the GPU itself (--sampler device: sampling, block
# preparation and the gather all there), the last also with the feature
# table in host memory and a device cache of a quarter of it. All train the same batches, so
# the losses must agree. Then the device sampler reading the fanouts as
# PyG does (--sample-once: a node's neighbours drawn once, at the hop that
# reaches it, for every layer; other batches). Then the reference on the same GPU and graph:
# PyTorch Geometric (bench/reference/minibatch_pyg.py: NeighborLoader with
# SAMPLERS worker processes and SAGEConv, the same model and settings;
# where PyG has neither pyg-lib nor torch-sparse to sample with, the
# vectorised PyTorch sampler on the GPU, named in the table). Prints a
# table of the epoch, its sampling and compute times, the share of the
# epoch the GPU ran kernels (NVML's utilisation, sampled every 100 ms by
# nvidia-smi over the epoch's span), each epoch over the device sampler's,
# the loss and the test accuracy after the epoch (layer-wise inference
# over every node for both), and the issue's targets against PyG.
#
#   bash bench/gpu/minibatch.sh      (after bench/gpu/run.sh built build-gpu/)
#
# Epoch times and the kernels' share are the last epoch's; the accuracy is
# after EPOCHS epochs (3: on these graphs both trainers reach their
# plateau by then, PyG's sampling one epoch sooner unless ours samples
# once too: bench/gpu/README.md); the targets' accuracy is --sample-once's.
#
# Variables: BUILD (build-gpu), NODES (2400000), DEGREE (50), GRAPH (that
# graph, -f 100 -c 47, made beforehand: used instead of generating it), EPOCHS (3),
# THREADS (--threads, default half the cores), SAMPLERS (--sampler-threads
# and the reference's workers, the other half), LIMIT (seconds per run,
# 300; DEADLINE, common.sh: the runs that would start past it are
# skipped), RUNS (which of ours, by name: host, host-inline, device,
# device-hostfeat, device-once; default all), PY (python3: the
# interpreter with torch, PyG and CUDA; REF=0 skips the reference). Writes the table to $OUT/gpu-minibatch.txt when OUT is a
# directory. Exit status: 0; 1 when a run failed or the losses differ; 77
# without a CUDA device.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/env.sh
BUILD=${BUILD:-build-gpu}
NODES=${NODES:-2400000}
DEGREE=${DEGREE:-50}
EPOCHS=${EPOCHS:-3}
LIMIT=${LIMIT:-300}
PY=${PY:-python3}
REF=${REF:-1}
RUNS=${RUNS:-host,host-inline,device,device-hostfeat,device-once}
export RUNS
CORES=$(nproc)
THREADS=${THREADS:-$(( CORES / 2 > 0 ? CORES / 2 : 1 ))}
SAMPLERS=${SAMPLERS:-$(( CORES - THREADS > 0 ? CORES - THREADS : 1 ))}
. bench/gpu/common.sh
gpu_bench_setup minibatch gpu-minibatch.txt
G=${GRAPH:-$WORK/sbm.h5}
t0=$(date +%s)
if [ -z "${GRAPH:-}" ]; then
    "$BUILD/datasets/gnn-dataset" generate sbm -n "$NODES" -d "$DEGREE" -f 100 -c 47 -o "$G" -q ||
        { echo "bench/gpu/minibatch.sh: gnn-dataset generate failed" >&2; exit 1; }
fi
say "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)," \
    "$CORES cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), tree $(gnn_tree_id)"
made="$(( $(date +%s) - t0 )) s"
if [ -n "${GRAPH:-}" ]; then made="made beforehand: $G"; fi
say "== graph: gnn-dataset generate sbm -n $NODES -d $DEGREE -f 100 -c 47 ($made);" \
    "sage, 3 layers, hidden 256, fanouts 15,10,5, batch 1024, $EPOCHS epoch(s), --threads $THREADS"
# NVML's "utilisation": the share of each sample period in which a kernel
# ran, every 100 ms, for the whole script; each run's epoch is cut out of
# it by the wall clock its log gives for the epoch's end.
nvidia-smi -i 0 --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 \
    >"$WORK/util.csv" 2>/dev/null &
UTIL_PID=$!
BG_PIDS=$UTIL_PID
STATUS=0
run() { # NAME, then options
    local name=$1; shift
    case ",$RUNS," in *",$name,"*) ;; *) return ;; esac
    room "$name" || return
    if ! timeout "$(run_limit)" "$BUILD/trainer/gnn-train" --data "$G" --model sage \
        --mode minibatch --device cuda --layers 3 --hidden 256 --fanouts 15,10,5 --batch-size 1024 \
        --epochs "$EPOCHS" --eval-every "$EPOCHS" --threads "$THREADS" -q \
        --log-json "$WORK/$name.json" "$@" \
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
run device-once --sampler device --sample-once
if [ "$REF" = 1 ] && ! "$PY" -c 'import torch, torch_geometric, h5py' 2>/dev/null; then
    say "== reference skipped: $PY has no torch, torch_geometric or h5py"
    REF=0
fi
if [ "$REF" = 1 ] && ! room "== reference"; then REF=0; fi
if [ "$REF" = 1 ]; then
    say "== reference: $("$PY" -c 'import torch, torch_geometric as g, torch_geometric.typing as t
print("torch", torch.__version__, "torch_geometric", g.__version__, "pyg-lib" if t.WITH_PYG_LIB
      else "torch-sparse" if t.WITH_TORCH_SPARSE else "(neither pyg-lib nor torch-sparse)")' 2>&1 | tail -1)"
    if ! timeout "$(run_limit)" "$PY" bench/reference/minibatch_pyg.py "$G" --device cuda \
        --layers 3 --hidden 256 --fanouts 15,10,5 --batch-size 1024 --epochs "$EPOCHS" \
        --workers "$SAMPLERS" --threads "$THREADS" --log-json "$WORK/pyg.json" \
        >"$WORK/pyg.out" 2>&1; then
        say "pyg FAILED:"; tail -5 "$WORK/pyg.out" | tee -a "$OUTFILE"
        STATUS=1
    fi
fi
sleep 0.3
kill "$UTIL_PID" 2>/dev/null
wait "$UTIL_PID" 2>/dev/null
BG_PIDS=
python3 - "$WORK" <<'PYEOF' | tee -a "$OUTFILE"
import datetime, json, os, sys
work = sys.argv[1]
def read(name):
    try:
        lines = [json.loads(l) for l in open(f"{work}/{name}.json") if l.strip()]
    except (OSError, ValueError):
        return None
    ep = [l for l in lines if "epoch_s" in l and not l.get("final")]
    if not ep:
        return None
    fin = [l for l in lines if l.get("final")]
    r = dict(ep[-1])
    for k in ("test_acc", "sampler", "workers", "peak_mb"):  # the reference's final line
        if fin and k in fin[0] and r.get(k) is None:
            r[k] = fin[0][k]
    return r
samples = []
try:
    for line in open(f"{work}/util.csv"):
        stamp, _, util = line.rpartition(",")
        try:
            t = datetime.datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(util)))
        except ValueError:
            pass
except OSError:
    pass
def busy(r):
    """Mean utilisation over the epoch's span (None: too few samples)."""
    end = r.get("epoch_end_unix")
    if not isinstance(end, (int, float)):
        return None
    inside = [u for t, u in samples if end - r["epoch_s"] <= t <= end]
    return sum(inside) / len(inside) if len(inside) >= 3 else None
runs = {n: read(n) for n in ("host", "host-inline", "device", "device-hostfeat")}
once = read("device-once")
ref = read("pyg")
dev = runs["device"]
def fmt(v, f):
    return f.format(v) if isinstance(v, (int, float)) else ""
print("| run | epoch s | sampling s | compute s | kernels busy % | epoch / device's | loss | test acc % |")
print("|---|---|---|---|---|---|---|---|")
rows_all = list(runs.items()) + [("device, --sample-once", once)]
if ref is not None:
    how = (f"NeighborLoader, {ref.get('workers')} workers" if ref.get("sampler") == "pyg"
           else "PyTorch sampler on the GPU")
    rows_all.append((f"pyg ({how})", ref))
chosen = os.environ.get("RUNS", "").split(",")
for n, r in rows_all:
    key = "device-once" if n.startswith("device, --sample-once") else n
    if r is None and key not in chosen and not n.startswith("pyg"):
        print(f"| {n} | not run (RUNS) | | | | | | |")
        continue
    if r is None:
        print(f"| {n} | failed | | | | | | |")
        continue
    ratio = f"{r['epoch_s'] / dev['epoch_s']:.2f}x" if dev else ""
    acc = r.get("test_acc")
    print(f"| {n} | {r['epoch_s']:.2f} | {fmt(r.get('sample_s'), '{:.2f}')} | "
          f"{fmt(r.get('compute_s'), '{:.2f}')} | {fmt(busy(r), '{:.0f}')} | {ratio} | "
          f"{r['loss']:.6f} | {fmt(100 * acc if isinstance(acc, (int, float)) else None, '{:.1f}')} |")
if ref is not None and dev is not None:
    b = busy(dev)
    # accuracy against PyG's with the fanouts read as PyG reads them
    acc_d, acc_r = (once or dev).get("test_acc"), ref.get("test_acc")
    print(f"targets: PyG's epoch / the device sampler's {ref['epoch_s'] / dev['epoch_s']:.2f}x "
          f"(at least 3x); kernels busy {fmt(b, '{:.0f}') or '?'} % of the epoch (at least 80); "
          f"test accuracy {fmt(100 * acc_d if acc_d is not None else None, '{:.1f}')} against "
          f"PyG's {fmt(100 * acc_r if acc_r is not None else None, '{:.1f}')} %")
# The same batches: the losses agree up to the GPU's summation order
# (auto's SpMM choice may differ between the two runs).
losses = [r["loss"] for r in runs.values() if r]
if losses and max(losses) - min(losses) > 1e-4 * max(1.0, abs(losses[0])):
    print("LOSSES DIFFER:", {n: r["loss"] for n, r in runs.items() if r})
    sys.exit(1)
PYEOF
[ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
exit "$STATUS"
