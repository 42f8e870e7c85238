#!/usr/bin/env bash
# The main job on the embedded default: generates the default SBM graph
# (no download), describes it, cuts it into 2 parts with gnn-partition
# (METIS) and trains a 2-layer GCN on them with mpirun -np 2 gnn-train
# (full graph, CPU, one rank per part), printing progress and the final
# accuracy. Installs missing Debian packages and builds into build/ first.
# Outputs under build/demo/: sbm.h5, parts/ (the partition directory),
# train.jsonl (one JSON line per epoch: loss, accuracies, bytes moved).
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
build/partition/gnn-partition "$out/sbm.h5" -k 2 -o "$out/parts" --force
build/partition/gnn-partition --info "$out/parts"
mpirun -np 2 --oversubscribe build/trainer/gnn-train --data "$out/parts" --model gcn \
  --hidden 64 --epochs 50 --log-json "$out/train.jsonl"
