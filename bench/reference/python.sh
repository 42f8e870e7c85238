#!/bin/sh
# Print the path of the Python interpreter the benchmarks' references run
# under, making it first when needed.
#
#   bench/reference/python.sh [pyg|dgl]   -> /path/to/python (standard output)
#
#   pyg (default)  the newest torch and torch_geometric (PyTorch Geometric)
#   dgl            DGL and the newest torch it supports (DGL 2.1.0, the last
#                  release on PyPI, ships libraries for torch 2.0-2.2.1
#                  only), with torch_geometric too: on some CPUs this older
#                  torch trains faster than the newest (docs/BENCHMARKS.md),
#                  so the benchmarks run torch and PyG under both
#
# The references are measured with releases a user installs from PyPI, not
# with Debian's python3-torch (torch 1.13 of 2022, generic BLAS, no MKL):
# what a user of PyG or DGL runs today. Versions are pinned so that runs
# compare (docs/BENCHMARKS.md has figures for several torch versions).
#
# Environment (defaults in brackets):
#   PYTHON       use this interpreter as it is (no set-up; pyg mode only)
#   BENCH_VENV   the pyg environment [${XDG_CACHE_HOME:-$HOME/.cache}/gnn-bench/venv]
#   BENCH_VENV_DGL  the dgl environment [same folder, venv-dgl]
#   TORCH_VERSION PYG_VERSION  [2.15.0 2.8.1]
#   DGL_TORCH_VERSION DGL_VERSION  [2.2.1 2.1.0]
# The first call creates the environment (python3 -m venv, then pip
# install: about 5.5 GB and 2-3 minutes each where PyPI is reachable).
# Where that fails, pyg mode falls back on Debian's /usr/bin/python3 if it
# has torch, with a warning on standard error naming its version; otherwise
# the script fails with one error line.
set -eu
mode=${1:-pyg}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gnn-bench
case $mode in
pyg)
    if [ -n "${PYTHON:-}" ]; then
        echo "$PYTHON"
        exit 0
    fi
    venv=${BENCH_VENV:-$cache/venv}
    torch_v=${TORCH_VERSION:-2.15.0}
    lib=torch_geometric lib_v=${PYG_VERSION:-2.8.1}
    ;;
dgl)
    venv=${BENCH_VENV_DGL:-$cache/venv-dgl}
    torch_v=${DGL_TORCH_VERSION:-2.2.1}
    lib=dgl lib_v=${DGL_VERSION:-2.1.0}
    pyg_v=${PYG_VERSION:-2.8.1}
    ;;
*)
    echo "python.sh: error: unknown mode '$mode' (pyg, dgl)" >&2
    exit 2
    ;;
esac
want="torch==$torch_v $lib==$lib_v"
probe="import sys, torch, h5py, numpy, torch_geometric, $lib
sys.exit(torch.__version__.split('+')[0] != sys.argv[1] or $lib.__version__ != sys.argv[2])"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -W ignore -c "$probe" "$torch_v" "$lib_v" 2>/dev/null; then
    # safetensors, added later: the tests read models with it when present
    "$venv/bin/python" -c 'import safetensors' 2>/dev/null ||
        "$venv/bin/python" -m pip install -q --disable-pip-version-check safetensors >/dev/null 2>&1 || true
    echo "$venv/bin/python"
    exit 0
fi
base=
for p in python3.11 python3.10 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import venv, ensurepip' 2>/dev/null; then
        base=$(command -v "$p")
        break
    fi
done
log=$(mktemp)
install() {
    pip="$venv/bin/python -m pip install -q --disable-pip-version-check"
    if [ "$mode" = pyg ]; then
        $pip "torch==$torch_v" "torch_geometric==$lib_v" h5py numpy safetensors
    else
        # DGL's requirements (numpy 1 for its binary). `import dgl` loads
        # its graphbolt loader, which imports torchdata's datapipes:
        # torchdata 0.7.1 is the release of torch 2.1-2.2's time, installed
        # without its pin of torch (only its pure-Python datapipes load).
        $pip "torch==$torch_v" "numpy<2" h5py scipy networkx requests tqdm psutil pandas \
            pydantic pyyaml "torch_geometric==$pyg_v" &&
            $pip --no-deps "dgl==$lib_v" torchdata==0.7.1
    fi
}
if [ -n "$base" ]; then
    echo "python.sh: installing $want into $venv (once; about 5.5 GB)" >&2
    mkdir -p "$(dirname "$venv")"
    if "$base" -m venv --clear "$venv" >"$log" 2>&1 && install >>"$log" 2>&1 &&
        "$venv/bin/python" -W ignore -c "$probe" "$torch_v" "$lib_v" >>"$log" 2>&1; then
        rm -f "$log"
        echo "$venv/bin/python"
        exit 0
    fi
fi
if [ "$mode" = pyg ] && /usr/bin/python3 -c 'import torch, h5py' 2>/dev/null; then
    v=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')
    echo "python.sh: warning: could not install $want (log: $log); using Debian's torch $v" \
        "instead: its figures are not those of PyPI's releases" >&2
    echo /usr/bin/python3
    exit 0
fi
echo "python.sh: error: could not install $want (log: $log)" >&2
exit 1
