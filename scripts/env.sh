# Sourced by the scripts: environment for building and running, shared by
# the demo, the test suite and the benchmarks.
# Open MPI refuses to run as root without these; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# nvcc from the CUDA toolkit when it is installed but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
GNN_JOBS=${GNN_JOBS:-$(nproc)}
