# What bench/gpu/train.sh and bench/gpu/minibatch.sh share (sourced from
# the repository root, after scripts/env.sh). gpu_bench_setup NAME FILE:
# exits 77 without a CUDA device; makes $WORK (a temporary directory,
# removed at exit with any process in $BG_PIDS stopped); $OUTFILE, the
# table ($OUT/FILE when OUT is a directory, else in $WORK); say, a line to
# the terminal and the table; builds gnn-train and gnn-dataset in $BUILD.
# A run's time limit (run_limit): LIMIT seconds, or less where DEADLINE
# (a time in seconds since the epoch, as bench/gpu/run.sh exports its
# budget's end) comes sooner; room NAME fails when under 5 s of it remain
# (and says NAME is skipped, STATUS 1), so that a script skips its last
# runs and still prints its table.
BG_PIDS=
run_limit() {
    local r=$(( ${DEADLINE:-0} > 0 ? ${DEADLINE:-0} - $(date +%s) : LIMIT ))
    if [ "$r" -gt "$LIMIT" ]; then r=$LIMIT; fi
    echo $(( r > 1 ? r : 1 ))
}
room() {
    if [ "${DEADLINE:-0}" -le 0 ] || [ $(( DEADLINE - $(date +%s) )) -ge 5 ]; then return 0; fi
    say "$1 skipped: the time given (DEADLINE) is up"
    STATUS=1
    return 1
}
gpu_bench_cleanup() {
    local p
    for p in $BG_PIDS; do kill "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
say() { printf '%s\n' "$*" | tee -a "$OUTFILE"; }
gpu_bench_setup() { # NAME FILE
    if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -eq 0 ]; then
        echo "bench/gpu/$1.sh: no CUDA device (nvidia-smi lists none)" >&2
        exit 77
    fi
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/gnn-gpu-$1.XXXXXX")
    trap gpu_bench_cleanup EXIT
    OUTFILE=$WORK/table.txt
    if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then OUTFILE=$OUT/$2; fi
    : >"$OUTFILE"
    cmake --build "$BUILD" -j"$(nproc)" --target gnn-train gnn-dataset >"$WORK/build.log" 2>&1 ||
        { tail -20 "$WORK/build.log" >&2; echo "bench/gpu/$1.sh: build failed" >&2; exit 1; }
}
