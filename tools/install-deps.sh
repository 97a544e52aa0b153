#!/usr/bin/env bash
# install-deps.sh: install the Debian 12 packages ocsim builds and runs with.
# Idempotent: does nothing when every package is already installed.
# Needs root (or sudo) when something is missing. The CUDA toolkit
# (/usr/local/cuda, with cuBLAS and NCCL) is optional and not installed here.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libjansson-dev     # JSON readers (line and column of parse errors)
  libcsv-dev         # CSV output
  libcunit1-dev      # unit tests
  libsimgrid-dev     # the simulator (SimGrid 3.32)
  gnuplot-nox        # plots
  libopenmpi-dev openmpi-bin  # the executor's cpu backend
  libopenblas-dev    # the executor's cpu GEMMs
  libssl-dev         # SHA-256 of the executor's checkpoints (libcrypto)
  clang libclang-rt-14-dev  # libFuzzer (-fsanitize=fuzzer): tools/fuzz.sh,
                            # ctest fuzz_smoke (the runtime is only recommended
                            # by clang-14, and recommends are not installed)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
