#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, when any is missing:
# one `apt-get update`, then one `apt-get install -y`. Does nothing when all
# are present. The CUDA toolkit (nvcc, cuBLAS, cuSPARSE, NCCL) is not a
# Debian package: CMake uses it when nvcc is on PATH or in /usr/local/cuda.
set -euo pipefail

packages=(build-essential cmake pkg-config zlib1g-dev libhdf5-dev hdf5-tools
          libopenmpi-dev openmpi-bin libmetis-dev metis libcmocka-dev libopenblas-dev libopenblas-openmp-dev
          python3 time)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
