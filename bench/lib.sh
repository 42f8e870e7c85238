# Shell functions the benchmark scripts share (sourced, POSIX sh). They read
# the caller's variables: src (the repository), build (build directory),
# dir (where results go), threads, limit (seconds per process).

# Configure and build gnn-train and gnn-dataset in Release; the log in
# $dir/build.log, shown on failure. Sets train and dataset.
bench_build() {
    echo "== build ($build, Release)"
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$dir/build.log" 2>&1 &&
        cmake --build "$build" -j"$threads" --target gnn-train gnn-dataset \
            >>"$dir/build.log" 2>&1 ||
        { cat "$dir/build.log"; exit 1; }
    train=$build/trainer/gnn-train
    dataset=$build/datasets/gnn-dataset
}

# measure NAME COMMAND...: one process under GNU time with $threads threads
# for OpenMP, OpenBLAS and MKL, at most $limit seconds: NAME.time and
# NAME.out in $dir; prints its wall time or why it failed.
measure() {
    name=$1
    shift
    printf '   %-14s ' "$name"
    if OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads \
        PYTHONWARNINGS=ignore /usr/bin/time -v -o "$dir/$name.time" timeout "$limit" "$@" \
        >"$dir/$name.out" 2>&1; then
        echo "$(sed -n "s/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p" "$dir/$name.time") wall"
    else
        echo "FAILED (exit $?); see $dir/$name.out"
    fi
}
