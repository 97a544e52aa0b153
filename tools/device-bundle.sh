#!/usr/bin/env bash
# device-bundle.sh: builds, on this (CPU) machine, what tools/device-check.sh
# runs on a GPU machine that has the CUDA toolkit and a driver but none of
# ocsim's other dependencies (no MPI, jansson, libcsv, OpenBLAS, SimGrid):
#
#   .device/bin/ocsim-exec   the executor without MPI (-DOC_EXEC_MPI=OFF):
#                            the cuda backend's ranks are threads of one
#                            process, the cpu backend runs one rank
#   .device/bin/kernels_gpu  the kernels against their CPU references
#   .device/lib/             the shared libraries those two need that a bare
#                            machine lacks (jansson, libcsv, OpenBLAS and its
#                            Fortran runtime), copied from this machine
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
# The source tree's models and topologies travel with the working tree.
echo "device-bundle: $(du -sh "$dest" | cut -f1) in $dest:"
ls -la "$dest/bin" "$dest/lib" | grep -v '^total'
