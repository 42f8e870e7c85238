#!/bin/sh
# The module dependency table of the design, checked on the sources: each
# module includes only the project modules below it (graph/ is the base of
# all), MPI only where the table allows it (graph/base/mpiutil.* is the
# base's one MPI-aware part, a library of its own), and no module includes
# tests/ or bench/. Prints every offending line; exits 1 when there is one.
#   tests/lint/module_deps.sh [SOURCE_ROOT]
cd "${1:-$(dirname "$0")/../..}" || exit 2
allowed() { # module -> project modules it may include
  case $1 in
    graph) echo "graph" ;;
    datasets) echo "graph datasets" ;;
    partition) echo "graph partition" ;;
    kernels) echo "graph kernels" ;;
    sampler) echo "graph sampler" ;;
    trainer) echo "graph datasets partition kernels sampler trainer" ;;
  esac
}
bad=0
for m in graph datasets partition kernels sampler trainer; do
  ok=$(allowed "$m")
  out=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "$m" \
          --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' |
        while IFS= read -r line; do
          dep=$(printf '%s\n' "$line" | sed -E 's/.*#[[:space:]]*include[[:space:]]+"([a-z_]+)\/.*/\1/')
          case " $ok " in *" $dep "*) ;; *) printf '%s  (%s/ may not include %s/)\n' "$line" "$m" "$dep" ;; esac
        done)
  [ -n "$out" ] && { printf '%s\n' "$out"; bad=1; }
done
# MPI: partition, sampler and trainer may use it; graph/ only in mpiutil.
out=$(grep -rnE '#[[:space:]]*include[[:space:]]+<mpi\.h>' graph datasets kernels \
        --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' |
      grep -v '^graph/base/mpiutil\.[ch]:')
[ -n "$out" ] && { printf '%s  (MPI outside the modules that may use it)\n' "$out"; bad=1; }
[ $bad = 0 ] && echo "module dependencies: every include follows the table"
exit $bad
