#!/bin/sh
# Distributed training on a generated SBM graph: mpirun -np P gnn-train
# over METIS and random partitions, P = 1, 2, 4 (oversubscribed where the
# machine has fewer cores), full-graph GCN. Per run: the mean epoch time
# (every epoch but the first), the slowest rank's halo-exchange
# (fetch_s) and gradient-allreduce time, the rest (compute_s), the bytes
# all ranks sent per epoch for halo rows (feat_bytes) and gradients
# (grad_bytes), the edge cut, and random's feature bytes over METIS's for
# the same P. One process on the graph file is the reference line.
# Then GraphSAGE mini-batches (2 layers, fanouts 10,10, batches of 1024
# seeds per rank) on partitions with 2 hops of halo, P = 2 and 4, METIS and
# random, with feature caches of 0, CACHE_MID and CACHE_BIG per rank, each
# filled by both --cache-policy rankings (rows, sample): epoch time, the
# slowest rank's fetch and allreduce time, the feature rows every rank
# holds (owned, first hop of halo, cache; all ranks), fetched feature
# bytes per epoch (all ranks), the share of remote input rows held (hit
# rate), and random's feature bytes over METIS's at the same cache size
# and policy (random parts hold a larger first hop).
# Then sampling by owners: the same mini-batches (no cache) on parts with
# 1 hop of halo, whose second hop the owners draw, against the 2-hop
# parts: the parts' stored edges, epoch time, fetch wait and busy time,
# the bytes of the owners' draws (sample_bytes) and of features.
# Section ideal (not run by default): the SBM's planted blocks as parts
# (ideal_parts), the best partition any partitioner could find on this
# graph, beside METIS's and random ones: edge cut, full-graph and
# mini-batch feature bytes, random's bytes over each.
#
# Usage: bench/dist/run.sh [BUILD_DIR]     (default /tmp/build-bench-dist)
# Environment (defaults in brackets):
#   BENCH_DIR  graph, partitions and logs [/tmp/gnn-bench-dist]; the graph is
#              kept and reused
#   N D F      SBM nodes, mean degree, features [1000000 10 128]
#   HOMOPHILY  fraction of edges within a class [0.9]. At 0.9 METIS cuts 5.5 %
#              (P = 2) and 15 % (P = 4) of the edges, still more than on
#              Cora (3.8 % and 6.2 %); at the generator's default, 0.7, it
#              cuts 16 % and 30 %: no partition keeps 2-hop batches local
#              there (docs/BENCHMARKS.md)
#   EPOCHS     epochs per run [6]
#   RANKS      rank counts [1 2 4]; MB_RANKS for mini-batches [2 4]
#   MB_EPOCHS  mini-batch epochs per run [3]
#   CACHE_MID CACHE_BIG  --feature-cache sizes [64M 256M]
#   SECTIONS   which to run [full mb owners]; also: ideal (the planted
#              blocks of the SBM as parts, beside METIS's and random ones)
#   OUT        results file [bench/dist/results-YYYY-MM-DD.txt]
# Needs cmake, a C compiler, Open MPI (mpirun) and python3 (reads the logs).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench-dist}
dir=${BENCH_DIR:-/tmp/gnn-bench-dist}
n=${N:-1000000}
d=${D:-10}
f=${F:-128}
hom=${HOMOPHILY:-0.9}
epochs=${EPOCHS:-6}
ranks=${RANKS:-1 2 4}
mb_ranks=${MB_RANKS:-2 4}
mb_epochs=${MB_EPOCHS:-3}
cache_mid=${CACHE_MID:-64M}
cache_big=${CACHE_BIG:-256M}
sections=${SECTIONS:-full mb owners}
out=${OUT:-$src/bench/dist/results-$(date -u +%Y-%m-%d).txt}
has() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target gnn-dataset gnn-partition gnn-train ideal_parts >/dev/null
bin=$build
mkdir -p "$dir"
graph=$dir/sbm-$n-d$d-f$f-h$hom.h5
[ -f "$graph" ] || "$bin/datasets/gnn-dataset" generate sbm -n "$n" -d "$d" -f "$f" \
  --homophily "$hom" -o "$graph" -q
dir=$dir/h$hom
mkdir -p "$dir"

# The edge cut and METIS's scheme of a partition directory, as "CUT LABEL".
cut_label() {
    "$bin/partition/gnn-partition" --info "$2" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
s = j.get("scheme") or "-"
print(j["edge_cut"], sys.argv[1] + ("" if s == "-" else " (" + s + ")"))' "$1"
}

summary() { # log.json: mean epoch_s (all but the first), fetch_s, allreduce_s, compute_s, bytes
    python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l]
rows = rows[1:] if len(rows) > 1 else rows
m = lambda k: sum(r.get(k, 0) or 0 for r in rows) / len(rows)
print("%.3f %.3f %.3f %.3f %d %d" % (m("epoch_s"), m("fetch_s"), m("allreduce_s"),
      m("compute_s") if "compute_s" in rows[0] else m("epoch_s"), m("feat_bytes"), m("grad_bytes")))
PY
}

{
echo "# distributed training, SBM $n nodes, mean degree $d, $f features, homophily $hom ($(date -u +%Y-%m-%dT%H:%MZ))"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); commit $(git -C "$src" rev-parse --short HEAD)"
echo "# times: seconds per epoch (mean over epochs 2..E); fetch/allreduce: the slowest rank's; bytes: sent by all ranks per epoch"
echo
if has full; then
echo "Full-graph GCN, $epochs epochs"
echo
echo "| P | partition | edge cut | epoch s | fetch s | allreduce s | compute s | feat MB | grad KB | feat bytes random / METIS |"
echo "|---|---|---|---|---|---|---|---|---|---|"
log=$dir/one.json
"$bin/trainer/gnn-train" --data "$graph" --epochs "$epochs" --eval-every 0 --log-json "$log" -q
set -- $(summary "$log")
echo "| 1 process | (graph file) | - | $1 | - | - | $4 | - | - | - |"
for p in $ranks; do
  metis_bytes=0
  for method in metis random; do
    part=$dir/parts-$method-$p
    [ -d "$part" ] || "$bin/partition/gnn-partition" "$graph" -k "$p" --method "$method" -o "$part" -q
    set -- $(cut_label "$method" "$part")
    cut=$1; shift; label="$*"
    log=$dir/$method-$p.json
    mpirun -np "$p" --oversubscribe --bind-to none "$bin/trainer/gnn-train" --data "$part" --epochs "$epochs" \
      --eval-every 0 --log-json "$log" -q
    set -- $(summary "$log")
    ratio=-
    if [ "$method" = metis ]; then metis_bytes=$5; elif [ "$metis_bytes" -gt 0 ]; then
      ratio=$(python3 -c "print('%.2f' % ($5 / $metis_bytes))"); fi
    echo "| $p | $label | $cut | $1 | $2 | $3 | $4 | $(python3 -c "print('%.1f' % ($5/1e6))") | $(python3 -c "print('%.1f' % ($6/1e3))") | $ratio |"
  done
done
echo
fi
if has mb; then
echo "GraphSAGE mini-batches (2 layers, fanouts 10,10, 1024 seeds per rank and step), $mb_epochs epochs"
echo
echo "| P | partition | cache | policy | epoch s | fetch s | fetch / epoch | allreduce s | held MB | feat MB | hit rate | feat bytes random / METIS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for p in $mb_ranks; do
  for cp in 0/- "$cache_mid/rows" "$cache_mid/sample" "$cache_big/rows" "$cache_big/sample"; do
    cache=${cp%/*} policy=${cp#*/}
    metis_bytes=0
    for method in metis random; do
      part=$dir/parts-$method-$p-h2
      [ -d "$part" ] || "$bin/partition/gnn-partition" "$graph" -k "$p" --method "$method" \
        --halo-hops 2 -o "$part" -q
      log=$dir/mb-$method-$p-$cache-$policy.json
      mpirun -np "$p" --oversubscribe --bind-to none "$bin/trainer/gnn-train" --data "$part" --model sage \
        --mode minibatch --layers 2 --hidden 64 --fanouts 10,10 --batch-size 1024 \
        --epochs "$mb_epochs" --eval-every 0 --feature-cache "$cache" \
        --cache-policy "$([ "$policy" = - ] && echo sample || echo "$policy")" --log-json "$log" -q
      set -- $(python3 - "$log" "$f" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l]
rows = rows[1:] if len(rows) > 1 else rows
m = lambda k: sum(r[k] for r in rows) / len(rows)
print("%.2f %.3f %.3f %.3f %d %.3f %.1f" % (m("epoch_s"), m("fetch_s"), m("fetch_s") / m("epoch_s"),
      m("allreduce_s"), m("feat_bytes"), m("cache_hit_rate"),
      rows[0]["rows_held"] * int(sys.argv[2]) * 4 / 1e6))
PY
)
      ratio=-
      if [ "$method" = metis ]; then metis_bytes=$5; elif [ "$metis_bytes" -gt 0 ]; then
        ratio=$(python3 -c "print('%.2f' % ($5 / $metis_bytes))")
      elif [ "$5" -gt 0 ]; then ratio="(METIS moves none)"; fi
      echo "| $p | $method | $cache | $policy | $1 | $2 | $3 | $4 | $7 | $(python3 -c "print('%.1f' % ($5/1e6))") | $6 | $ratio |"
    done
  done
done
echo
fi
if has owners; then
echo "Sampling by owners: the same mini-batches, no cache, on parts with 1 hop of halo (hop 2 drawn by the owners) and with 2"
echo
echo "| P | partition | halo hops | stored edges (all parts) | epoch s | fetch wait s | fetch busy s | sample MB | feat MB |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in $mb_ranks; do
  for method in metis random; do
    for hops in 1 2; do
      part=$dir/parts-$method-$p-h$hops
      [ -d "$part" ] || "$bin/partition/gnn-partition" "$graph" -k "$p" --method "$method" \
        --halo-hops "$hops" -o "$part" -q
      stored=$("$bin/partition/gnn-partition" --info "$part" --json | python3 -c 'import json,sys; print(sum(q["stored_edges"] for q in json.load(sys.stdin)["parts"]))')
      log=$dir/own-$method-$p-h$hops.json
      mpirun -np "$p" --oversubscribe --bind-to none "$bin/trainer/gnn-train" --data "$part" --model sage \
        --mode minibatch --layers 2 --hidden 64 --fanouts 10,10 --batch-size 1024 \
        --epochs "$mb_epochs" --eval-every 0 --log-json "$log" -q
      set -- $(python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l]
rows = rows[1:] if len(rows) > 1 else rows
m = lambda k: sum(r[k] for r in rows) / len(rows)
print("%.2f %.3f %.3f %.1f %.1f" % (m("epoch_s"), m("fetch_s"), m("fetch_busy_s"),
      m("sample_bytes") / 1e6, m("feat_bytes") / 1e6))
PY
)
      echo "| $p | $method | $hops | $stored | $1 | $2 | $3 | $4 | $5 |"
    done
  done
done
echo
fi
if has ideal; then
echo "The best partition of this graph: its planted blocks (ideal_parts: nodes by class, cut into P equal runs) beside METIS's and random parts"
echo
echo "| P | partition | edge cut | full-graph feat MB | mini-batch feat MB, no cache | mini-batch feat MB, $cache_mid cache | random / this, no cache | random / this, cache |"
echo "|---|---|---|---|---|---|---|---|"
for p in $mb_ranks; do
  rnd0=0 rndc=0
  for method in random metis ideal; do
    for hops in 1 2; do
      part=$dir/parts-$method-$p-h$hops
      if [ "$method" = ideal ]; then
        [ -d "$part" ] || "$bin/bench/ideal_parts" "$graph" "$p" "$hops" "$part" >/dev/null
      else
        [ -d "$part" ] || "$bin/partition/gnn-partition" "$graph" -k "$p" --method "$method" \
          --halo-hops "$hops" -o "$part" -q
      fi
    done
    set -- $(cut_label "$method" "$dir/parts-$method-$p-h1")
    cut=$1; shift; label="$*"
    log=$dir/ideal-full-$method-$p.json
    mpirun -np "$p" --oversubscribe --bind-to none "$bin/trainer/gnn-train" --data "$dir/parts-$method-$p-h1" \
      --epochs 2 --eval-every 0 --log-json "$log" -q
    full=$(python3 -c "import json,sys; r=[json.loads(l) for l in open('$log') if '\"epoch\"' in l]; print(r[-1]['feat_bytes'])")
    mb=""
    for cache in 0 "$cache_mid"; do
      log=$dir/ideal-mb-$method-$p-$cache.json
      mpirun -np "$p" --oversubscribe --bind-to none "$bin/trainer/gnn-train" --data "$dir/parts-$method-$p-h2" \
        --model sage --mode minibatch --layers 2 --hidden 64 --fanouts 10,10 --batch-size 1024 \
        --epochs 2 --eval-every 0 --feature-cache "$cache" --log-json "$log" -q
      mb="$mb $(python3 -c "import json,sys; r=[json.loads(l) for l in open('$log') if '\"epoch\"' in l]; print(r[-1]['feat_bytes'])")"
    done
    set -- $mb
    if [ "$method" = random ]; then rnd0=$1 rndc=$2; fi
    echo "| $p | $label | $cut | $(python3 -c "print('%.1f' % ($full/1e6))") | $(python3 -c "print('%.1f' % ($1/1e6))") | $(python3 -c "print('%.1f' % ($2/1e6))") | $(python3 -c "print('%.2f' % ($rnd0/$1))") | $(python3 -c "print('%.2f' % ($rndc/$2) if $2 else '-')") |"
  done
done
fi
} | tee "$out"
