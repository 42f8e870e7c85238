#!/usr/bin/env bash
# The GPU check and benchmark in one command, for a machine with a CUDA GPU
# (sized for 16 cores and one H200: under 8 minutes in all).
#
#   bash bench/gpu/run.sh
#
# 1. configures and builds a Release tree with the CUDA backend in
#    build-gpu/ (only gnn-dataset, the tests labelled cuda and
#    spmm_gpu_bench);
# 2. runs the CUDA tests (ctest -L cuda): with a device present they must
#    pass, not skip; the one skip allowed is test_nccl_npN on a machine
#    with fewer than N GPUs (NCCL refuses two ranks on one GPU);
# 3. generates two graphs of 4M nodes and about 130M stored edges with
#    gnn-dataset (R-MAT scale 22, edge factor 16; SBM of mean degree 32)
#    into a temporary directory, removed at exit;
# 4. runs spmm_gpu_bench on both (copy bandwidth and GEMM with the first);
# 5. writes tool versions, the test summary and the bench tables to the
#    results file, and prints it.
#
# Results go to $OUT: a file, or a directory (then $OUT/gpu-results-DATE.txt
# in it); without OUT to bench/gpu/results-DATE.txt. Exit status: 0 when everything passed; 1 when
# a build, a test or a bench check failed or time ran out; 77 without a
# CUDA device (nothing to measure). Variables: BUDGET (seconds, default
# 470), RMAT_SCALE (22), SBM_NODES (4194304), SBM_DEGREE (32), WIDTHS
# (32,128,256), AGGR (sum,mean,gcn,max), REPS_TIME (0.2).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
START=$(date +%s)
BUDGET=${BUDGET:-470}
RMAT_SCALE=${RMAT_SCALE:-22}
SBM_NODES=${SBM_NODES:-4194304}
SBM_DEGREE=${SBM_DEGREE:-32}
WIDTHS=${WIDTHS:-32,128,256}
AGGR=${AGGR:-sum,mean,gcn,max}
REPS_TIME=${REPS_TIME:-0.2}
BUILD=build-gpu
JOBS=$(nproc)
DATE=$(date +%Y-%m-%d)
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    RESULTS=$OUT/gpu-results-$DATE.txt
elif [ -n "${OUT:-}" ]; then
    RESULTS=$OUT
else
    RESULTS=bench/gpu/results-$DATE.txt
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnn-gpu-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
: >"$RESULTS"
STATUS=0

elapsed() { echo $(($(date +%s) - START)); }
# Seconds of the budget left, at least 1 (timeout 0 would mean no limit).
left() {
    local l=$((START + BUDGET - $(date +%s)))
    echo $((l > 0 ? l : 1))
}
# A line into the results file; a section heading there, and as progress
# on stderr.
log() { printf '%s\n' "$*" >>"$RESULTS"; }
section() {
    printf '\n== %s (at %d s)\n' "$*" "$(elapsed)" >>"$RESULTS"
    printf 'bench/gpu/run.sh: %s (at %d s)\n' "$*" "$(elapsed)" >&2
}
fail() {
    log "FAILED: $*"
    STATUS=1
}
finish() {
    section "done in $(elapsed) s; status $1 ($2)"
    cat "$RESULTS"
    exit "$1"
}

section "machine"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null) || COMMIT='?'
if [ "$COMMIT" != '?' ] && ! git diff --quiet HEAD 2>/dev/null; then
    COMMIT="$COMMIT with local changes"
fi
log "date      $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $JOBS cores, commit $COMMIT"
NGPU=0
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L >>"$RESULTS" 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv >>"$RESULTS" 2>&1
    NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
else
    log "nvidia-smi: not found"
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
log "nvcc      $("$NVCC" --version 2>&1 | grep -i release || echo 'not found')"
log "cmake     $(cmake --version | head -1)"
log "mpirun    $(mpirun --version 2>&1 | head -1)"
log "cc        $(cc --version | head -1)"

# ---- 1. build -----------------------------------------------------------------
section "configure and build ($BUILD, Release, CUDA on)"
if ! timeout "$(left)" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGNN_CUDA=ON \
    >"$WORK/configure.log" 2>&1; then
    tail -40 "$WORK/configure.log" >>"$RESULTS"
    fail "cmake configure"
    finish 1 "configure failed"
fi
NCCL_H=$(sed -n 's/^NCCL_INCLUDE_DIR:PATH=//p' "$BUILD/CMakeCache.txt")
if [ -f "$NCCL_H/nccl.h" ]; then
    NCCL_V=$(sed -nE 's/^#define NCCL_(MAJOR|MINOR|PATCH) +([0-9]+).*/\2/p' "$NCCL_H/nccl.h" |
        paste -sd.)
    log "nccl      $NCCL_V ($NCCL_H/nccl.h)"
fi
# The test programs of the CUDA tests: the test name, less _npN for the
# runs under mpirun.
mapfile -t TEST_TARGETS < <(cd "$BUILD" && ctest -N -L cuda 2>/dev/null |
    sed -nE 's/^ *Test +#[0-9]+: ([A-Za-z0-9_]+)$/\1/p' | sed -E 's/_np[0-9]+$//' | sort -u)
TARGETS=(gnn-dataset spmm_gpu_bench gnn_aggr_lse "${TEST_TARGETS[@]}")
log "targets   ${TARGETS[*]}"
T0=$(date +%s)
if ! timeout "$(left)" cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" \
    >"$WORK/build.log" 2>&1; then
    grep -E -B2 -A8 'error|Error' "$WORK/build.log" | head -80 >>"$RESULTS"
    tail -20 "$WORK/build.log" >>"$RESULTS"
    fail "build"
    finish 1 "build failed"
fi
log "built in $(($(date +%s) - T0)) s with -j$JOBS"

# ---- 2. tests -----------------------------------------------------------------
section "CUDA tests (ctest -L cuda)"
(cd "$BUILD" && timeout "$(left)" ctest -L cuda --output-on-failure --timeout 240) \
    >"$WORK/ctest.log" 2>&1
CTEST_RC=$?
# The per-test lines and the summary (the whole log when something failed).
if [ "$CTEST_RC" -eq 0 ]; then
    grep -E 'Test +#|tests passed|tests failed|Skipped|Total Test time' "$WORK/ctest.log" \
        >>"$RESULTS"
else
    cat "$WORK/ctest.log" >>"$RESULTS"
    fail "ctest exited with $CTEST_RC"
fi
SKIPPED=$(sed -nE 's/^[[:space:]]*[0-9]+ - ([A-Za-z0-9_]+) \(Skipped\)$/\1/p' "$WORK/ctest.log")
if [ "$NGPU" -eq 0 ]; then
    log "no CUDA device on this machine (nvidia-smi lists none): the tests skip and there is"
    log "nothing to measure"
    finish 77 "no CUDA device"
fi
for t in $SKIPPED; do
    n=$(printf '%s\n' "$t" | sed -nE 's/^test_nccl_np([0-9]+)$/\1/p')
    if [ -n "$n" ] && [ "$n" -gt "$NGPU" ]; then
        log "skip accepted: $t needs $n GPUs, this machine has $NGPU"
    else
        fail "$t skipped although a CUDA device is present"
    fi
done

# ---- 3. graphs ----------------------------------------------------------------
section "graphs (gnn-dataset generate, into $WORK)"
DATASET=$BUILD/datasets/gnn-dataset
gen() { # NAME ARGS...: generate, log time and size
    local name=$1 t0 secs size
    shift
    t0=$(date +%s%N)
    if ! timeout "$(left)" "$DATASET" generate "$@" -f 0 -o "$WORK/$name.h5" -q \
        >"$WORK/gen-$name.log" 2>&1; then
        cat "$WORK/gen-$name.log" >>"$RESULTS"
        fail "generating $name"
        return 1
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    size=$("$DATASET" info "$WORK/$name.h5" | sed -nE 's/^(nodes|edges) +/\1 /p' | paste -sd, |
        sed 's/,/, /')
    log "$name: gnn-dataset generate $* -f 0 ($secs s): $size"
}
GRAPHS=""
R=rmat$RMAT_SCALE
gen "$R" rmat --scale "$RMAT_SCALE" --edge-factor 16 && GRAPHS="$GRAPHS $R"
gen sbm sbm --nodes "$SBM_NODES" --avg-degree "$SBM_DEGREE" --classes 16 && GRAPHS="$GRAPHS sbm"

# ---- 4. bench -----------------------------------------------------------------
GEMM=8192
for g in $GRAPHS; do
    section "spmm_gpu_bench on $g"
    if [ "$((START + BUDGET - $(date +%s)))" -lt 30 ]; then
        fail "no time left for $g (under 30 s of the $BUDGET s budget)"
        continue
    fi
    timeout "$(left)" "$BUILD/bench/spmm_gpu_bench" --graph "$WORK/$g.h5" --widths "$WIDTHS" \
        --aggr "$AGGR" --reps-time "$REPS_TIME" --gemm-size "$GEMM" >>"$RESULTS" 2>&1
    rc=$?
    GEMM=0 # GEMM and its GNN shapes once: both graphs have the same node count
    if [ "$rc" -eq 124 ]; then
        fail "spmm_gpu_bench on $g ran out of time (budget $BUDGET s); the table above is partial"
    elif [ "$rc" -ne 0 ]; then
        fail "spmm_gpu_bench on $g exited with $rc"
    fi
    rm -f "$WORK/$g.h5"
done

if [ "$STATUS" -eq 0 ]; then finish 0 "all passed"; fi
finish 1 "see the FAILED lines"
