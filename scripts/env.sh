# Sourced by the scripts: environment for building and running, shared by
# the demo, the test suite and the benchmarks.
# Open MPI refuses to run as root without these; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# nvcc from the CUDA toolkit when it is installed but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
GNN_JOBS=${GNN_JOBS:-$(nproc)}
# The git tree id of the working tree's files (tracked, and untracked but
# not ignored) as they are now, or '?' outside git: names what a benchmark
# measured even where HEAD does not (a copied checkout, local changes);
# `git rev-parse COMMIT^{tree}` gives the same id for the commit it matches.
gnn_tree_id() {
  local idx id
  idx=$(mktemp -u "${TMPDIR:-/tmp}/gnn-index.XXXXXX")
  if GIT_INDEX_FILE=$idx git add -A . >/dev/null 2>&1; then
    id=$(GIT_INDEX_FILE=$idx git write-tree 2>/dev/null)
  fi
  rm -f "$idx"
  echo "${id:-?}"
}
