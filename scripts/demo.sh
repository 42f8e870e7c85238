#!/usr/bin/env bash
# The main job on the embedded default: generates the default SBM graph
# (no download), describes it, and trains a 2-layer GCN on it with
# gnn-train (one process, CPU). Installs missing Debian packages and builds
# into build/ first. Later stages (partition, mpirun training) join as they
# land.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
. scripts/env.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build.configure.log 2>&1 || {
  cat build.configure.log; exit 1; }
cmake --build build -j "$GNN_JOBS" >/dev/null

out=build/demo
mkdir -p "$out"
build/datasets/gnn-dataset generate sbm --seed 1 -o "$out/sbm.h5" --force
build/datasets/gnn-dataset info "$out/sbm.h5"
build/trainer/gnn-train --data "$out/sbm.h5" --model gcn --hidden 64 --epochs 50 \
  --log-json "$out/train.jsonl" --save-predictions "$out/predictions.h5"
