#!/bin/sh
# gnn-partition against gpmetis (Debian's metis: the command of the same
# METIS 5.1 library) on the same graphs in the same run, K parts:
#   - an SBM graph of 1M nodes (mean degree 20),
#   - an R-MAT graph of scale 20 (edge factor 16),
#   - with BIG=1, an SBM graph of ogbn-products size (2.45M nodes, degree
#     50; gpmetis alone needs about 20 GB there).
# gpmetis reads the METIS graph file of the undirected view gnn-partition
# gives METIS (bench/partition/metis_files.c writes it once per graph;
# that conversion is not timed). Each run is timed by GNU time as a whole,
# all I/O included: gpmetis reading the text file and writing FILE.part.K,
# gnn-partition reading the graph file and writing the partition directory.
# Runs, all with one constraint (--balance nodes) unless said:
#   gpmetis      gpmetis -seed=0 FILE K (seed 0 and ufactor 30, as ours: the
#                same METIS call, so the cuts should match)
#   default      gnn-partition GRAPH -k K --balance nodes --scheme kway
#                (gpmetis's scheme: --scheme best, the default since
#                2026-12-03, would add a recursive bisection call)
#   coarsened    the same with --max-metis-edges M (a quarter of the
#                undirected adjacency entries) and --mem-budget BUDGET;
#                a row "unavailable" where gnn-partition does not know these
#                options, "failed" with its error where it fails
#   bal-default  gnn-partition's defaults (balance nodes,edges,train,
#                --scheme best): not comparable with gpmetis's single
#                constraint, shown for its cost (DEFAULT_BALANCE=0 leaves it
#                out)
# For each: wall seconds, peak RSS, edge cut (gpmetis's counted from its
# part file by metis_files, each undirected edge once; ours from --info
# --json), largest part over the mean, and cut, time and RSS over
# gpmetis's; for the coarsened run also peak RSS over the budget.
#
# Usage: bench/partition/run.sh [BUILD_DIR]        (default /tmp/build-bench-partition)
# Environment (defaults in brackets):
#   BENCH_DIR   graphs, METIS files and partitions [/tmp/gnn-bench-partition];
#               generated graphs and their METIS files are kept and reused
#   K           parts [8]
#   SBM_N SBM_D          SBM nodes and mean degree [1000000 20]
#   RMAT_SCALE RMAT_EF   R-MAT scale and edge factor [20 16]
#   BIG         1: add the ogbn-products-size SBM graph [0]; BIG_N BIG_D [2449029 50]
#   FEAT        features per generated node [0: gpmetis has none to carry]
#   MEM_BUDGET  --mem-budget of the coarsened run, e.g. 2G [per graph: 3/4 of
#               the peak RSS of its default run, at least 128M]
#   DEFAULT_BALANCE  1: also the bal-default run [1]
#   OUT         results file [bench/partition/results-YYYY-MM-DD.txt]
# Threads: gnn-partition uses OMP_NUM_THREADS (default all cores); gpmetis
# runs on one. Needs cmake, a C compiler, gpmetis (Debian metis) and GNU
# time (/usr/bin/time).
# Fields of one line are split into "$@" on purpose (set -- $(...)).
# shellcheck disable=SC2046,SC2086
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-/tmp/build-bench-partition}
dir=${BENCH_DIR:-/tmp/gnn-bench-partition}
k=${K:-8}
sbm_n=${SBM_N:-1000000}
sbm_d=${SBM_D:-20}
rmat_scale=${RMAT_SCALE:-20}
rmat_ef=${RMAT_EF:-16}
big=${BIG:-0}
big_n=${BIG_N:-2449029}
big_d=${BIG_D:-50}
feat=${FEAT:-0}
default_balance=${DEFAULT_BALANCE:-1}
day=$(date -u +%Y-%m-%d)
out=${OUT:-$src/bench/partition/results-$day.txt}
gpmetis=${GPMETIS:-$(command -v gpmetis || echo /usr/bin/gpmetis)}
gtime=/usr/bin/time
[ -x "$gpmetis" ] || { echo "gpmetis not found (apt-get install metis)" >&2; exit 1; }
[ -x "$gtime" ] || { echo "GNU time not found (apt-get install time)" >&2; exit 1; }
mkdir -p "$dir"

echo "== build ($build, Release)"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$dir/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target gnn-partition gnn-dataset metis_files \
        >>"$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }
dataset=$build/datasets/gnn-dataset
part=$build/partition/gnn-partition
files=$build/bench/metis_files

results=$dir/results.raw
: >"$results"
{
    echo "# gnn-partition against gpmetis, K = $k ($(date -u +%Y-%m-%dT%H:%MZ))"
    echo "# machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
        sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)," \
        "$(uname -sr); gnn-partition threads: ${OMP_NUM_THREADS:-$(nproc)}, gpmetis: 1"
    echo "# commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        "$(git -C "$src" diff --quiet 2>/dev/null || echo '(with local changes)')"
    echo "# gpmetis: $gpmetis (Debian metis $(dpkg-query -W -f '${Version}' metis 2>/dev/null ||
        echo '?'))"
} >"$dir/header.txt"

# timed FILE CMD...: run CMD under GNU time; "SECONDS KB" go to FILE, its
# output to FILE.log. Returns CMD's status.
timed() {
    t=$1
    shift
    "$gtime" -f '%e %M' -o "$t" "$@" >"$t.log" 2>&1
}

# row GRAPH RUN SECONDS KB CUT IMBALANCE BUDGET_BYTES|- NOTE...: one line of
# the results ("-" for what is unknown); prints it for the log.
row() {
    printf '%s\n' "$*" >>"$results"
    n=$(echo "$*" | cut -d' ' -f8-)
    if [ "$3" = - ]; then
        printf '   %-12s %s\n' "$2" "$n"
    else
        printf '   %-12s %s s, %s MB, cut %s, largest part %s x mean%s\n' "$2" "$3" \
            $(($4 / 1024)) "$5" "$6" "${n:+; $n}"
    fi
}

# row_ours GRAPH RUN BUDGET_BYTES|- "SECONDS KB CUT IMBALANCE BALANCE" NOTE...
row_ours() {
    ro_graph=$1 ro_run=$2 ro_budget=$3
    set -- $4 "${5:-}"
    row "$ro_graph" "$ro_run" "$1" "$2" "$3" "$4" "$ro_budget" "balance $5${6:+; $6}"
}

# ours NAME GRAPH RUN OPTIONS...: gnn-partition into $dir/NAME-RUN.parts
# (removed afterwards); prints "SECONDS KB CUT IMBALANCE BALANCE".
ours() {
    name=$1 graph=$2 run=$3
    shift 3
    pdir=$dir/$name-$run.parts
    rm -rf "$pdir"
    if timed "$dir/$name-$run.time" "$part" "$graph" -k "$k" -o "$pdir" "$@"; then
        set -- $(cat "$dir/$name-$run.time")
        secs=$1 kb=$2
        json=$("$part" --info "$pdir" --json)
        cut=$(printf '%s' "$json" | grep -o '"edge_cut": *[0-9]*' | grep -o '[0-9]*$')
        imb=$(printf '%s' "$json" | grep -o '"nodes": *[0-9]*' | grep -o '[0-9]*$' |
            awk -v k="$k" '{ s += $1; if ($1 > m) m = $1 } END { printf "%.4f", m * k / s }')
        bal=$(printf '%s' "$json" | grep -o '"balance": *"[a-z,]*"' | cut -d'"' -f4)
        echo "$secs $kb $cut $imb $bal"
        rm -rf "$pdir"
        return 0
    fi
    rm -rf "$pdir"
    return 1
}

# bench NAME GRAPH: every run on one graph.
bench() {
    name=$1 graph=$2
    metis=$dir/$name.graph
    if [ ! -s "$metis" ] || [ ! -s "$metis.sizes" ] || [ -n "$(find "$graph" -newer "$metis")" ]; then
        echo "== $name: METIS graph file"
        "$files" graph "$graph" "$metis.tmp" >"$metis.sizes" && mv "$metis.tmp" "$metis"
    fi
    set -- $(sed 's/[a-z]*=//g' "$metis.sizes")
    nodes=$1 edges=$2 adjacency=$3
    max_edges=$((adjacency / 4))
    echo "== $name: $nodes nodes, $edges undirected edges; K = $k"

    rm -f "$metis.part.$k"
    timed "$dir/$name-gpmetis.time" "$gpmetis" -seed=0 "$metis" "$k" ||
        { echo "gpmetis failed:"; tail -5 "$dir/$name-gpmetis.time.log"; exit 1; }
    set -- $(cat "$dir/$name-gpmetis.time")
    secs=$1 kb=$2
    set -- $("$files" cut "$graph" "$metis.part.$k" "$k" | sed 's/[a-z]*=//g')
    said=$(grep -o 'Edgecut: [0-9]*' "$dir/$name-gpmetis.time.log" | grep -o '[0-9]*$' || true)
    note=
    [ -n "$said" ] && [ "$said" != "$1" ] && note=" (gpmetis printed $said)"
    row "$name" gpmetis "$secs" "$kb" "$1" "$2" - "seed 0$note"

    r=$(ours "$name" "$graph" default --balance nodes --scheme kway -q) ||
        { echo "gnn-partition failed:"; tail -5 "$dir/$name-default.time.log"; exit 1; }
    row_ours "$name" default - "$r"

    if [ -n "${MEM_BUDGET:-}" ]; then
        budget_opt=$MEM_BUDGET
    else # 3/4 of the default run's peak, at least 128 MiB
        set -- $r
        budget_opt=$(($2 * 3 / 4096 > 128 ? $2 * 3 / 4096 : 128))M
    fi
    budget_bytes=$(echo "$budget_opt" | awk '{
        n = $0 + 0; u = toupper(substr($0, length($0)))
        if (u == "K") n *= 1024; else if (u == "M") n *= 1048576
        else if (u == "G") n *= 1073741824; else if (u == "T") n *= 1099511627776
        printf "%.0f", n }')

    if r=$(ours "$name" "$graph" coarsened --balance nodes --scheme kway \
        --max-metis-edges "$max_edges" --mem-budget "$budget_opt" -q); then
        row_ours "$name" coarsened "$budget_bytes" "$r" \
            "--max-metis-edges $max_edges --mem-budget $budget_opt"
    else
        why=$(grep -m1 'error' "$dir/$name-coarsened.time.log" || tail -1 "$dir/$name-coarsened.time.log")
        case $why in # options not there yet: a note, not an abort
        *"unknown option"*) row "$name" coarsened - - - - "$budget_bytes" "unavailable: $why" ;;
        *) row "$name" coarsened - - - - "$budget_bytes" "failed: $why" ;;
        esac
    fi

    if [ "$default_balance" = 1 ]; then
        r=$(ours "$name" "$graph" bal-default -q) ||
            { echo "gnn-partition failed:"; tail -5 "$dir/$name-bal-default.time.log"; exit 1; }
        row_ours "$name" bal-default - "$r" "not gpmetis's constraint"
    fi
}

# gen FILE generate ARGS...: the graph file, generated once.
gen() {
    g=$1
    shift
    if [ ! -s "$g" ]; then
        echo "== generate $g"
        "$dataset" "$@" -o "$g" --force -q
    fi
}

sbm=$dir/sbm-$sbm_n-$sbm_d-$feat.h5
gen "$sbm" generate sbm -n "$sbm_n" -d "$sbm_d" -f "$feat" -s 1
bench "sbm-$sbm_n-d$sbm_d" "$sbm"
rmat=$dir/rmat-$rmat_scale-$rmat_ef-$feat.h5
gen "$rmat" generate rmat --scale "$rmat_scale" -e "$rmat_ef" -f "$feat" -s 1
bench "rmat-$rmat_scale-e$rmat_ef" "$rmat"
if [ "$big" = 1 ]; then
    bigf=$dir/sbm-$big_n-$big_d-$feat.h5
    gen "$bigf" generate sbm -n "$big_n" -d "$big_d" -f "$feat" -s 1
    bench "sbm-$big_n-d$big_d" "$bigf"
fi

# The table: ratios against the gpmetis row of the same graph.
{
    cat "$dir/header.txt"
    budget_rule="3/4 of the peak RSS of the default run, at least 128M"
    echo "# coarsened: --max-metis-edges = a quarter of the undirected adjacency entries;" \
        "--mem-budget = ${MEM_BUDGET:-$budget_rule}"
    echo
    awk '
    BEGIN {
        print "| graph | run | wall s | peak RSS MB | edge cut | largest part / mean | cut / gpmetis | time / gpmetis | RSS / gpmetis | RSS / budget | note |"
        print "|---|---|---|---|---|---|---|---|---|---|---|"
    }
    {
        note = ""
        for (i = 8; i <= NF; i++) note = note (i > 8 ? " " : "") $i
        if ($2 == "gpmetis") { gs[$1] = $3; gk[$1] = $4; gc[$1] = $5 }
        if ($3 == "-") {
            printf "| %s | %s | - | - | - | - | - | - | - | - | %s |\n", $1, $2, note
            next
        }
        rc = (gc[$1] > 0) ? sprintf("%.3f", $5 / gc[$1]) : "-"
        rt = (gs[$1] > 0) ? sprintf("%.2f", $3 / gs[$1]) : "-"
        rk = (gk[$1] > 0) ? sprintf("%.2f", $4 / gk[$1]) : "-"
        rb = ($7 == "-") ? "-" : sprintf("%.2f", $4 * 1024 / $7)
        printf "| %s | %s | %.2f | %.0f | %d | %.3f | %s | %s | %s | %s | %s |\n", $1, $2, $3,
               $4 / 1024, $5, $6, rc, rt, rk, rb, note
    }' "$results"
} >"$out"
echo "== results ($out)"
cat "$out"
