#!/bin/sh
# Training curves from --log-json files (gnn-train's or
# bench/reference/gnn_torch.py's: one flat JSON object per epoch line) as
# one PNG with two panels: training loss per epoch above, validation
# (solid) and test (dashed) accuracy at the evaluated epochs below. One
# colour per file, named by the file's base name.
#
# Usage: bench/train/plot.sh -o OUT.png [-r RUN] [-t TITLE] LOG.json...
#   -r RUN   which run of a multi-run log to draw (0-based, default 0)
# Needs gnuplot (Debian: apt-get install gnuplot-nox).
set -eu
usage() { echo "usage: $0 -o OUT.png [-r RUN] [-t TITLE] LOG.json..." >&2; exit 2; }
out='' run=0 title='Training curves'
while getopts o:r:t:h opt; do
    case $opt in
    o) out=$OPTARG ;;
    r) run=$OPTARG ;;
    t) title=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ -n "$out" ] && [ $# -ge 1 ] || usage
command -v gnuplot >/dev/null 2>&1 || {
    echo "$0: gnuplot not found; install it with: apt-get install gnuplot-nox" >&2
    exit 1
}
for f in "$@"; do [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 1; }; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Per file, run RUN only: N.dat (epoch, loss) for every epoch, N.acc
# (epoch, valid_acc, test_acc) for the evaluated ones.
i=0
for f in "$@"; do
    i=$((i + 1))
    awk -v run="$run" -v acc="$tmp/$i.acc" '
        function num(key,   m) {
            if (match($0, "\"" key "\": *[-+0-9.eE]+")) {
                m = substr($0, RSTART, RLENGTH)
                sub(/^[^:]*: */, "", m)
                return m
            }
            return "NaN"
        }
        /"final": *true/ { next }
        /"epoch":/ {
            if (num("run") != run) next
            print num("epoch"), num("loss")
            if ($0 !~ /"evaluated": *false/)
                print num("epoch"), num("valid_acc"), num("test_acc") > acc
        }' "$f" >"$tmp/$i.dat"
    [ -s "$tmp/$i.dat" ] || { echo "$0: no epoch lines of run $run in $f" >&2; exit 1; }
done

esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
{
    echo 'set terminal pngcairo noenhanced size 1000,800 font ",11"'
    echo "set output \"$(esc "$out")\""
    echo 'set multiplot layout 2,1'
    echo "set title \"$(esc "$title")\""
    echo 'set grid; set key top right; set xlabel "epoch"; set ylabel "training loss"'
    printf 'plot '
    i=0
    for f in "$@"; do
        i=$((i + 1))
        [ $i -gt 1 ] && printf ', '
        printf '"%s" using 1:2 with lines lw 2 lc %d title "%s"' "$tmp/$i.dat" $i \
            "$(esc "$(basename "$f" .json)")"
    done
    echo
    echo 'set title "validation (solid) and test (dashed) accuracy"'
    echo 'set key bottom right; set ylabel "accuracy"; set yrange [0:1]'
    printf 'plot '
    i=0
    for f in "$@"; do
        i=$((i + 1))
        [ $i -gt 1 ] && printf ', '
        n=$(esc "$(basename "$f" .json)")
        printf '"%s" using 1:2 with lines lw 2 lc %d dt 1 title "%s valid", ' \
            "$tmp/$i.acc" $i "$n"
        printf '"%s" using 1:3 with lines lw 2 lc %d dt 2 title "%s test"' "$tmp/$i.acc" $i "$n"
    done
    echo
    echo 'unset multiplot'
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
