#!/usr/bin/env bash
# device-bundle.sh: builds, on this (CPU) machine, what tools/device-check.sh
# runs on a GPU machine that has the CUDA toolkit and a driver but none of
# ocsim's other dependencies (no MPI, jansson, libcsv, OpenBLAS, SimGrid):
#
#   .device/bin/ocsim-exec   the executor without MPI (-DOC_EXEC_MPI=OFF):
#                            the cuda backend's ranks are threads of one
#                            process, the cpu backend runs one rank
#   .device/bin/kernels_gpu  the cuda kernel table against the cpu one
#                            (kernels/test_kernels.c)
#   .device/lib/             the shared libraries those two need that a bare
#                            machine lacks (jansson, libcsv, OpenBLAS and its
#                            Fortran runtime), copied from this machine
#   .device/include/         OpenBLAS's cblas.h, for device-check.sh's
#                            fallback build of kernels/ (the cpu kernels, the
#                            GPU test's reference, call cblas_sgemm)
#
# CUDA runtime (libcudart, 1 MB) is copied; cuBLAS, cuBLASLt and NCCL are not
# (hundreds of MB): device-check.sh finds them on the GPU machine (the CUDA
# toolkit, and NCCL from the toolkit or PyTorch's nvidia-nccl package).
#
#   bash tools/device-bundle.sh          # from the repository root; ~3 min
#   then, on the GPU machine:  bash tools/device-check.sh   (carry: .device)
#
# Built for sm_90 (H100, H200) only, Release. .device/ is git-ignored.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-device-bundle
dest=$root/.device
export PATH=/usr/local/cuda/bin:$PATH

mkdir -p "$build"
log=$build/device-bundle.log
command -v nvcc >/dev/null || { echo "device-bundle: nvcc not found (/usr/local/cuda/bin)" >&2; exit 1; }
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DOC_EXEC_MPI=OFF \
      -DBUILD_TESTING=OFF -DCMAKE_CUDA_ARCHITECTURES=90 >"$log" 2>&1 ||
    { tail -n 30 "$log"; exit 1; }
grep -q 'ocsim-exec is built with the cuda backend' "$log" ||
    { echo "device-bundle: configured without the cuda backend; see $log" >&2; exit 1; }
cmake --build "$build" --target ocsim-exec kernels_gpu -j "$(nproc)" >>"$log" 2>&1 ||
    { tail -n 30 "$log"; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
cp "$build/ocsim-exec" "$build/kernels/kernels_gpu" "$dest/bin/"
strip "$dest/bin/ocsim-exec" "$dest/bin/kernels_gpu" 2>/dev/null || true

# Non-system libraries: what ldd resolves outside glibc, the CUDA toolkit and
# NCCL (those the GPU machine has).
for b in "$dest"/bin/*; do
    ldd "$b" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
    base=$(basename "$lib")
    case $base in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | \
    libgcc_s.so* | libstdc++.so* | libcuda.so* | libcublas*.so* | \
    libnccl.so* | libnvidia*) ;;
    *) cp -L "$lib" "$dest/lib/$base" ;;
    esac
done
# The cblas header of the OpenBLAS copied above (pkg-config's include
# folder, else the Debian alternatives'), for a build of kernels/ there.
blas_inc=$(pkg-config --cflags-only-I openblas 2>/dev/null | sed 's/^-I//; s/[[:space:]]*$//') || true
[ -f "$blas_inc/cblas.h" ] ||
    blas_inc=$(dirname "$(ls /usr/include/x86_64-linux-gnu/openblas*/cblas.h \
                             /usr/include/cblas.h 2>/dev/null | head -n 1)")
mkdir -p "$dest/include"
cp "$blas_inc/cblas.h" "$dest/include/" &&
    { [ ! -f "$blas_inc/openblas_config.h" ] || cp "$blas_inc/openblas_config.h" "$dest/include/"; } ||
    echo "device-bundle: no cblas.h found; device-check.sh's fallback build of kernels/ will need one" >&2
# The source tree's models and topologies travel with the working tree.
echo "device-bundle: $(du -sh "$dest" | cut -f1) in $dest:"
ls -la "$dest/bin" "$dest/lib" "$dest/include" | grep -v '^total'
