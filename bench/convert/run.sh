#!/usr/bin/env bash
# Conversion benchmark: gnn-dataset ogb against pandas.read_csv (what OGB's
# loader uses) on the same synthetic OGB csv-layout files, in one run.
# Prints uncompressed MB/s and peak RSS of both, their ratios, and the
# memory bound (output CSR + edge buffer).
#
#   bench/convert/run.sh [NODES EDGES FEAT]     default: ogbn-products size
#                                               2449029 61859140 100
# Data goes to $GNN_BENCH_DIR (default build/bench-data) and is reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/env.sh
N=${1:-2449029} E=${2:-61859140} F=${3:-100}
data=${GNN_BENCH_DIR:-build/bench-data}
dir=$data/ogb-synth-$N-$E-$F
out=$data/ogb-synth-$N-$E-$F.h5

[ -x build/datasets/gnn-dataset ] && [ -x build/bench/ogb_synth ] || {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$GNN_JOBS" --target gnn-dataset ogb_synth >/dev/null; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
/usr/bin/python3 -c 'import pandas' 2>/dev/null || {
  echo "needs Debian's python3-pandas (apt-get install python3-pandas)" >&2; exit 1; }
mkdir -p "$data"
if [ ! -f "$dir/raw/node-label.csv.gz" ]; then
  echo "generating $dir"
  build/bench/ogb_synth "$dir" "$N" "$E" "$F" 47 1
fi

echo "== gnn-dataset ogb --symmetrize (threads: $(nproc) cores)"
/usr/bin/time -f '%e %M' -o "$data/time.txt" \
  build/datasets/gnn-dataset ogb "$dir" -o "$out" --force --symmetrize
read -r g_wall g_rss_kb <"$data/time.txt"

echo "== pandas.read_csv"
/usr/bin/time -f '%e %M' -o "$data/time-pd.txt" \
  /usr/bin/python3 bench/convert/pandas_read.py "$dir" >"$data/pandas.json"
read -r p_wall p_rss_kb <"$data/time-pd.txt"

/usr/bin/python3 - "$data/pandas.json" "$g_wall" "$g_rss_kb" "$p_wall" "$p_rss_kb" "$out" "$N" <<'PY'
import json, os, subprocess, sys
pd = json.load(open(sys.argv[1]))
g_wall, g_rss = float(sys.argv[2]), int(sys.argv[3]) * 1024
p_wall, p_rss = float(sys.argv[4]), int(sys.argv[5]) * 1024
out, n = sys.argv[6], int(sys.argv[7])
info = json.loads(subprocess.check_output(["build/datasets/gnn-dataset", "info", out, "--json"]))
mb = pd["bytes"] / 1e6
csr = 8 * (n + 1) + 8 * info["num_edges"]
buffer = 64 << 20
size = os.path.getsize(out)
print(f"uncompressed csv: {mb:.0f} MB (edges, features, labels)")
print(f"{'':22s} {'wall s':>8s} {'MB/s':>8s} {'peak RSS MB':>12s}")
print(f"{'gnn-dataset ogb':22s} {g_wall:8.2f} {mb / g_wall:8.1f} {g_rss / 1e6:12.0f}")
print(f"{'pandas.read_csv':22s} {pd['seconds']:8.2f} {mb / pd['seconds']:8.1f} {pd['peak_rss_bytes'] / 1e6:12.0f}"
      f"   (process wall {p_wall:.2f} s, pandas {pd['pandas']})")
print(f"speed ratio (pandas read time / gnn-dataset wall): {pd['seconds'] / g_wall:.2f}x  (target >= 2)")
print(f"output file {size / 1e6:.0f} MB; CSR {csr / 1e6:.0f} MB + edge buffer {buffer / 1e6:.0f} MB = "
      f"{(csr + buffer) / 1e6:.0f} MB; peak RSS / (CSR + buffer) = {g_rss / (csr + buffer):.2f}")
PY
