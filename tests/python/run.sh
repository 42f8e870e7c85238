#!/usr/bin/env bash
# Run a Python test under an interpreter that has torch, torch_geometric
# and h5py: $GNN_PYTHON (scripts/test.sh sets it under CI=true, installing
# them with bench/reference/python.sh), else the one python.sh installed
# before, else python3. Without them: SKIPPED (exit 77), or under CI=true
# a failure, since CI must run the test.
#   tests/python/run.sh TEST.py [arguments...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
probe='import torch, torch_geometric, h5py, numpy'
cands=()
[ -n "${GNN_PYTHON:-}" ] && cands+=("$GNN_PYTHON")
cands+=("${BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gnn-bench/venv}/bin/python" python3)
py=
for c in "${cands[@]}"; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -W ignore -c "$probe" 2>/dev/null; then
    py=$c
    break
  fi
done
if [ -z "$py" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAILED: no Python with torch, torch_geometric and h5py (required under CI=true;" \
         "scripts/test.sh installs them with bench/reference/python.sh)"
    exit 1
  fi
  echo "SKIPPED: no Python with torch, torch_geometric and h5py" \
       "(bench/reference/python.sh installs them)"
  exit 77
fi
export PYTHONPATH="$here/../../trainer/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" -W ignore "$@"
