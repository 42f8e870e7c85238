#!/usr/bin/env bash
# The Debian packages the CUDA build needs, for a GPU machine that reaches
# no package registry (bench/gpu/README.md):
#
#   scripts/device-debs.sh fetch [DIR]     here, with a registry: downloads
#                                          them into DIR (default .debs/)
#   scripts/device-debs.sh install [DIR]   there: unpacks them into /
#                                          (into $DEBS_ROOT when set)
#
# install adds files only: a file the machine already has is kept (its
# libraries, configuration and tools stay as they were), so nothing of the
# machine's own is replaced by another version. The links Debian's
# alternatives would make (mpicc, mpirun, mpiexec) are made where missing,
# then ldconfig. The list: the -dev packages the build needs and the
# libraries the built programs, Open MPI's components and its launcher
# load (ldd), without libc, libgcc and libstdc++.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
    # build
    libhdf5-dev hdf5-helpers libmetis-dev libopenmpi-dev libcmocka-dev libopenblas-dev
    libopenblas-openmp-dev zlib1g-dev
    # Open MPI, its launcher and components
    openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 libevent-core-2.1-7
    libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1
    libpsm-infinipath1 libpsm2-2 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libudev1
    # HDF5 and what it loads
    libhdf5-103-1 libhdf5-hl-100 libaec0 libsz2 libcurl4 libbrotli1 libgssapi-krb5-2 libk5crypto3
    libkrb5-3 libkrb5support0 libkeyutils1 libcom-err2 libldap-2.5-0 libsasl2-2 libnghttp2-14
    libpsl5 librtmp1 libssh2-1 libgnutls30 libhogweed6 libnettle8 libgmp10 libidn2-0
    libunistring2 libp11-kit0 libffi8 libtasn1-6 libssl3 libzstd1 zlib1g
    # METIS, OpenBLAS, CMocka
    libmetis5 libopenblas0-openmp libgfortran5 libquadmath0 libgomp1 libatomic1 libcmocka0
    libuuid1
)

mode=${1:-}
dir=${2:-.debs}
case "$mode" in
fetch)
    mkdir -p "$dir"
    rm -f "$dir"/*.deb
    # (apt's note that it downloads as root rather than as _apt is dropped)
    (cd "$dir" && apt-get download "${packages[@]}" 2>&1 >/dev/null | grep -v "unsandboxed" >&2 ||
        true)
    [ "$(ls "$dir"/*.deb | wc -l)" -eq ${#packages[@]} ] ||
        { echo "device-debs: not every package was downloaded" >&2; exit 1; }
    echo "device-debs: $(ls "$dir"/*.deb | wc -l) packages, $(du -sh "$dir" | cut -f1) in $dir"
    ;;
install)
    compgen -G "$dir/*.deb" >/dev/null || { echo "device-debs: no .deb files in $dir" >&2; exit 1; }
    root=${DEBS_ROOT:-/}
    stage=$(mktemp -d "${TMPDIR:-/tmp}/gnn-debs.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    for f in "$dir"/*.deb; do dpkg-deb -x "$f" "$stage"; done
    # Existing files and the machine's directory links (/lib -> usr/lib) stay.
    (cd "$stage" && tar cf - .) | (cd "$root" && tar xf - --skip-old-files --keep-directory-symlink)
    for t in mpicc mpirun mpiexec; do
        if [ ! -e "$root/usr/bin/$t" ] && [ -x "$root/usr/bin/$t.openmpi" ]; then
            ln -s "$t.openmpi" "$root/usr/bin/$t"
        fi
    done
    if [ "$root" = / ]; then ldconfig; fi
    echo "device-debs: unpacked $(ls "$dir"/*.deb | wc -l) packages from $dir"
    ;;
*)
    echo "usage: scripts/device-debs.sh fetch|install [DIR]" >&2
    exit 2
    ;;
esac
