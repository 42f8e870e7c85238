#!/usr/bin/env bash
# The GPU check and benchmark in one command, for a machine with a CUDA GPU
# (sized for 16 cores and one H200: under 8 minutes in all).
#
#   bash bench/gpu/run.sh
#
# 1. configures and builds a Release tree with the CUDA backend in
#    build-gpu/ (only gnn-dataset, the tests labelled cuda and
#    spmm_gpu_bench). When the configuration fails it installs the Debian
#    packages the build needs (where the machine reaches no package
#    registry, the .deb files of $GNN_DEBS, default .debs/, that
#    `scripts/device-debs.sh fetch` downloaded beforehand, unpacked by
#    `scripts/device-debs.sh install`; else scripts/deps.sh) and configures
#    again; NCCL is taken from the CUDA toolkit or, failing
#    that, from the NCCL wheel of a Python install (PyTorch's);
# 2. runs the CUDA tests (ctest -L cuda): with a device present they must
#    pass, not skip; the one skip allowed is test_nccl_npN on a machine
#    with fewer than N GPUs (NCCL refuses two ranks on one GPU). Meanwhile
# 3. generates the training benches' two SBM graphs with gnn-dataset
#    (1M nodes, mean degree 20, 128 features; 2.4M nodes, mean degree 50,
#    100 features, 47 classes) into a temporary directory, removed at exit;
# 4. then, while the budget lasts (at least TRAIN_MIN seconds left for
#    each; each stops its runs at the budget's end and prints its table),
#    bench/gpu/train.sh (full graph against PyTorch and PyG, TRAIN_EPOCHS
#    epochs, peak device memory) and bench/gpu/minibatch.sh (one epoch of
#    mini-batches: host and device sampling, against PyG's loader);
# 5. with what is left (at least SPMM_MIN seconds for each), generates an
#    R-MAT graph (scale RMAT_SCALE, edge factor 16) and an SBM graph of as
#    many nodes and runs spmm_gpu_bench on each (copy bandwidth, and GEMM
#    with the first);
# 6. writes tool versions, the test summary and the bench tables to the
#    results file, and prints it.
#
# Results go to $OUT: a file, or a directory (then $OUT/gpu-results-DATE.txt
# in it, and the logs of the steps that failed beside it); without OUT to
# bench/gpu/results-DATE.txt. Exit status: 0 when everything passed; 1 when
# a build, a test or a bench check failed or time ran out; 77 without a
# CUDA device (nothing to measure). Variables: BUDGET (seconds, default
# 470), TESTS_MAX (the most seconds of it the tests may take, default 300),
# RMAT_SCALE (22), SBM_NODES (4194304), SBM_DEGREE (32), WIDTHS
# (32,128,256), AGGR (sum,mean,gcn,max), REPS_TIME (0.2), GNN_DEBS (.debs),
# TRAIN_MIN (90), TRAIN_EPOCHS (10), SPMM_MIN (60).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
# nvcc from /usr/local/cuda when it is not on PATH; Open MPI as root.
. scripts/env.sh
START=$(date +%s)
BUDGET=${BUDGET:-470}
TESTS_MAX=${TESTS_MAX:-300}
RMAT_SCALE=${RMAT_SCALE:-22}
SBM_NODES=${SBM_NODES:-4194304}
SBM_DEGREE=${SBM_DEGREE:-32}
WIDTHS=${WIDTHS:-32,128,256}
AGGR=${AGGR:-sum,mean,gcn,max}
REPS_TIME=${REPS_TIME:-0.2}
TRAIN_MIN=${TRAIN_MIN:-90}
SPMM_MIN=${SPMM_MIN:-60}
TRAIN_EPOCHS=${TRAIN_EPOCHS:-10}
DEBS=${GNN_DEBS:-.debs}
BUILD=build-gpu
JOBS=$(nproc)
DATE=$(date +%Y-%m-%d)
LOGDIR=
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    RESULTS=$OUT/gpu-results-$DATE.txt
    LOGDIR=$OUT
elif [ -n "${OUT:-}" ]; then
    RESULTS=$OUT
else
    RESULTS=bench/gpu/results-$DATE.txt
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnn-gpu-bench.XXXXXX")
GEN_PID=
cleanup() {
    if [ -n "$GEN_PID" ]; then kill "$GEN_PID" 2>/dev/null; wait "$GEN_PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
# The tree id first: the results file may lie inside the tree.
TREE=$(gnn_tree_id)
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
# Keep a step's whole log beside the results (when OUT is a directory).
keep_log() {
    if [ -n "$LOGDIR" ] && [ -f "$WORK/$1" ]; then cp "$WORK/$1" "$LOGDIR/gpu-$1"; fi
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
log "tree      $TREE (the files measured: git rev-parse COMMIT^{tree} names a commit's)"
NGPU=0
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L >>"$RESULTS" 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.memory \
        --format=csv >>"$RESULTS" 2>&1
    NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
else
    # The device nodes then: /dev/nvidia0, /dev/nvidia1, ...
    NGPU=$(find /dev -maxdepth 1 -name 'nvidia[0-9]*' 2>/dev/null | wc -l)
    log "nvidia-smi: not found ($NGPU device nodes /dev/nvidiaN)"
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
log "nvcc      $("$NVCC" --version 2>&1 | grep -i release || echo 'not found')"
log "cmake     $(cmake --version 2>&1 | head -1)"
log "mpirun    $(mpirun --version 2>&1 | head -1)"
log "cc        $(cc --version 2>&1 | head -1)"

# ---- 1. build -----------------------------------------------------------------
# nccl.h and libnccl: FindNCCL looks in the CUDA toolkit and the system
# directories; where they hold none, the NCCL wheel of a Python install
# (nvidia/nccl/{include,lib}, the one PyTorch uses) is named to it.
nccl_options() {
    local cuda d sp lib
    cuda=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
    for d in "$cuda/include" "$cuda/targets/x86_64-linux/include" /usr/local/cuda/include \
        /usr/include /usr/local/include; do
        if [ -f "$d/nccl.h" ]; then return 0; fi
    done
    for sp in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + sys.path))' \
        2>/dev/null) /opt /usr/local/lib /usr/lib; do
        d=$sp/nvidia/nccl
        [ -f "$d/include/nccl.h" ] || continue
        lib=$(ls "$d"/lib/libnccl.so* 2>/dev/null | head -1)
        if [ -n "$lib" ]; then
            echo "-DNCCL_INCLUDE_DIR:PATH=$d/include -DNCCL_LIBRARY:FILEPATH=$lib"
            return 0
        fi
    done
}
configure() {
    rm -f "$BUILD/CMakeCache.txt"
    # shellcheck disable=SC2046 # the options are words without spaces
    timeout "$(left)" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGNN_CUDA=ON \
        $(nccl_options) >"$WORK/configure.log" 2>&1
}

section "configure and build ($BUILD, Release, CUDA on)"
if ! configure; then
    # Missing packages, most likely: the carried .deb files, else the
    # package registry, then once more.
    log "configure failed: $(grep -m1 -E 'Could NOT find|not found|Error' "$WORK/configure.log")"
    if compgen -G "$DEBS/*.deb" >/dev/null; then
        log "unpacking the $(ls "$DEBS"/*.deb | wc -l) .deb files of $DEBS (scripts/device-debs.sh)"
        timeout 120 bash scripts/device-debs.sh install "$DEBS" >"$WORK/debs.log" 2>&1 ||
            { tail -15 "$WORK/debs.log" >>"$RESULTS"; log "scripts/device-debs.sh install failed"; }
    else
        log "installing the Debian packages of scripts/deps.sh"
        timeout 90 bash scripts/deps.sh >"$WORK/deps.log" 2>&1 ||
            { tail -15 "$WORK/deps.log" >>"$RESULTS"; log "scripts/deps.sh failed"; }
    fi
    if ! configure; then
        grep -E -A3 'Could NOT find|not found|CMake Error' "$WORK/configure.log" | head -40 \
            >>"$RESULTS"
        keep_log configure.log
        fail "cmake configure: what it needs is missing (scripts/deps.sh lists the Debian" \
            "packages; without a reachable registry put their .deb files in $DEBS)"
        finish 1 "configure failed"
    fi
fi
NCCL_H=$(sed -nE 's/^NCCL_INCLUDE_DIR:[A-Z]+=//p' "$BUILD/CMakeCache.txt")
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
    keep_log build.log
    fail "build"
    finish 1 "build failed"
fi
log "built in $(($(date +%s) - T0)) s with -j$JOBS"

# ---- 3. graphs, made in the background while the tests run ----------------------
# The training benches' graphs (bench/gpu/train.sh's and minibatch.sh's
# defaults, which they take as GRAPH instead of generating them).
DATASET=$BUILD/datasets/gnn-dataset
gen() { # NAME ARGS...: generate; one line "NAME ok|failed SECONDS SIZE" into gen.txt
    local name=$1 t0 secs size
    shift
    t0=$(date +%s%N)
    if ! timeout "$(left)" "$DATASET" generate "$@" -o "$WORK/$name.h5" -q \
        >"$WORK/gen-$name.log" 2>&1; then
        echo "$name failed" >>"$WORK/gen.txt"
        return 1
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    size=$("$DATASET" info "$WORK/$name.h5" | sed -nE 's/^(nodes|edges) +/\1 /p' | paste -sd, |
        sed 's/,/, /')
    echo "$name ok $secs gnn-dataset generate $*: $size" >>"$WORK/gen.txt"
}
# Whether NAME was generated (else its log and a FAILED line).
generated() {
    local line
    line=$(grep -m1 "^$1 " "$WORK/gen.txt")
    case "$line" in
    "$1 ok "*)
        read -r _ _ secs rest <<<"$line"
        log "$1: $rest ($secs s)"
        return 0
        ;;
    esac
    cat "$WORK/gen-$1.log" >>"$RESULTS" 2>/dev/null
    fail "generating $1${line:+ ($line)}"
    return 1
}
: >"$WORK/gen.txt"
if [ "$NGPU" -gt 0 ]; then
    (
        gen train sbm -n 1000000 -d 20 -f 128
        gen minibatch sbm -n 2400000 -d 50 -f 100 -c 47
    ) &
    GEN_PID=$!
fi

# ---- 2. tests -----------------------------------------------------------------
section "CUDA tests (ctest -L cuda)"
TLIM=$(left)
if [ "$TLIM" -gt "$TESTS_MAX" ]; then TLIM=$TESTS_MAX; fi
# OpenMP threads that sleep when idle: the tests share the cores with
# the graphs' generator.
(cd "$BUILD" && OMP_WAIT_POLICY=passive timeout "$TLIM" ctest -L cuda --output-on-failure \
    --timeout 240) >"$WORK/ctest.log" 2>&1
CTEST_RC=$?
# The per-test lines and the summary (the whole log when something failed).
if [ "$CTEST_RC" -eq 0 ]; then
    grep -E 'Test +#|tests passed|tests failed|Skipped|Total Test time' "$WORK/ctest.log" \
        >>"$RESULTS"
else
    cat "$WORK/ctest.log" >>"$RESULTS"
    keep_log ctest.log
    if [ "$CTEST_RC" -eq 124 ]; then
        fail "ctest ran out of its $TLIM s (TESTS_MAX $TESTS_MAX, budget $BUDGET)"
    else
        fail "ctest exited with $CTEST_RC"
    fi
fi
SKIPPED=$(sed -nE 's/^[[:space:]]*[0-9]+ - ([A-Za-z0-9_]+) \(Skipped\)$/\1/p' "$WORK/ctest.log")
if [ "$NGPU" -eq 0 ]; then
    log "no CUDA device on this machine (nvidia-smi lists none): the tests skip and there is"
    log "nothing to measure"
    if [ "$STATUS" -ne 0 ]; then finish 1 "no CUDA device, and the tests did not skip cleanly"; fi
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

section "graphs (gnn-dataset generate, into $WORK, during the tests)"
wait "$GEN_PID"
GEN_PID=
export DEADLINE=$((START + BUDGET))

# ---- 4. training benches, as time allows -----------------------------------
# The full graph first, then mini-batches; each needs TRAIN_MIN seconds of
# the budget left to start, and stops its runs at the budget's end
# (DEADLINE), printing its table all the same.
for b in train minibatch; do
    section "bench/gpu/$b.sh"
    if ! generated "$b"; then continue; fi
    if [ "$(left)" -lt "$TRAIN_MIN" ]; then
        fail "bench/gpu/$b.sh skipped: $(left) s of the budget left (needs $TRAIN_MIN)"
        continue
    fi
    # minibatch.sh: one epoch here (its timing; the accuracy comparison
    # wants its default 3 epochs, a call of its own).
    # The runs the targets name (ours as queued step by step and GAT, or
    # the sampler on the training thread, are left to a call of their own).
    if [ "$b" = train ]; then
        extra="EPOCHS=${TRAIN_EPOCHS} MODELS=gcn,sage QUEUED=0"
    else
        extra="EPOCHS=1 RUNS=host,device,device-hostfeat,device-once"
    fi
    # shellcheck disable=SC2086 # $extra: assignments
    env $extra BUILD="$BUILD" GRAPH="$WORK/$b.h5" \
        timeout "$(( $(left) + 60 ))" bash "bench/gpu/$b.sh" >>"$RESULTS" 2>"$WORK/$b.err"
    rc=$?
    if [ "$rc" -eq 124 ]; then
        tail -5 "$WORK/$b.err" >>"$RESULTS"
        fail "bench/gpu/$b.sh ran a minute past the budget's end and was stopped"
    elif [ "$rc" -ne 0 ]; then
        tail -5 "$WORK/$b.err" >>"$RESULTS"
        fail "bench/gpu/$b.sh exited with $rc"
    fi
    rm -f "$WORK/$b.h5"
done

# ---- 5. SpMM kernels, with what is left ----------------------------------------
# R-MAT scale RMAT_SCALE (edge factor 16), then the SBM graph of as many
# nodes (mean degree SBM_DEGREE), each generated and measured while at
# least SPMM_MIN seconds are left (docs/BENCHMARKS.md has the full table
# of 2026-12-04).
GEMM=8192
for g in rmat sbm; do
    section "spmm_gpu_bench on $g"
    if [ "$(left)" -lt "$SPMM_MIN" ]; then
        log "skipped: $(left) s of the budget left (needs $SPMM_MIN)"
        continue
    fi
    if [ "$g" = rmat ]; then
        gen rmat rmat --scale "$RMAT_SCALE" --edge-factor 16 -f 0
    else
        gen sbm sbm --nodes "$SBM_NODES" --avg-degree "$SBM_DEGREE" --classes 16 -f 0
    fi
    generated "$g" || continue
    timeout "$(left)" "$BUILD/bench/spmm_gpu_bench" --graph "$WORK/$g.h5" --widths "$WIDTHS" \
        --aggr "$AGGR" --reps-time "$REPS_TIME" --gemm-size "$GEMM" >>"$RESULTS" 2>&1
    rc=$?
    GEMM=0 # GEMM and its GNN shapes once: both graphs have the same node count
    if [ "$rc" -eq 124 ]; then
        log "spmm_gpu_bench on $g stopped at the budget's end; the table above is partial"
    elif [ "$rc" -ne 0 ]; then
        fail "spmm_gpu_bench on $g exited with $rc"
    fi
    rm -f "$WORK/$g.h5"
done

if [ "$STATUS" -eq 0 ]; then finish 0 "all passed"; fi
finish 1 "see the FAILED lines"
