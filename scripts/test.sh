#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs missing Debian packages,
# builds out of tree and runs CTest twice, in a normal build (build/) and in
# an ASan+UBSan build (build-asan/). Long tests carry the label `slow` and
# run only with --all (or GNN_TEST_ALL=1).
#   scripts/test.sh [--all] [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
. scripts/env.sh
# CI runs the PyTorch Geometric parity test (tests/python/test_pyg.py), so
# it installs torch and torch_geometric first (bench/reference/python.sh;
# once, into a cache); elsewhere that test runs where they are, or skips.
if [ "${CI:-}" = true ] && [ -z "${GNN_PYTHON:-}" ]; then
  if GNN_PYTHON=$(bash bench/reference/python.sh); then
    export GNN_PYTHON
  else
    echo "test.sh: warning: no Python with torch_geometric: test_pyg will fail" >&2
  fi
fi

select=(-LE slow)
if [ "${1:-}" = "--all" ] || [ "${GNN_TEST_ALL:-0}" = 1 ]; then
  select=()
  [ "${1:-}" = "--all" ] && shift
fi
ctest_args=("${select[@]}" "$@")

run_suite() { # build-dir, cmake arguments...
  local dir=$1; shift
  echo "== configure and build $dir"
  cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j "$GNN_JOBS"
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$GNN_JOBS" "${ctest_args[@]}")
}

mkdir -p build build-asan
run_suite build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DGNN_SANITIZE=address,undefined
