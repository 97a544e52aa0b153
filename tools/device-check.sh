#!/usr/bin/env bash
# device-check.sh: the checks that need a GPU, in one short run on a GPU
# machine: build the CUDA kernels (kernels/, as a project of its own, so
# that none of ocsim's other dependencies are needed there), run their
# tests against the CPU references, and run the tests again under
# compute-sanitizer (memcheck: out-of-bounds and misaligned accesses;
# racecheck: shared-memory races) where it works.
#
#   tools/device-check.sh [build-dir]       # from anywhere; default build-device/
#
# Environment:
#   OC_ARCH=90       CUDA architecture to build (default: the GPU's own, read
#                    with nvidia-smi; 90 if that fails)
#   OC_SANITIZE=0    skip compute-sanitizer (default: run it if installed)
#   OUT=dir          also copy the log there (the device tool's output folder)
#
# Exit status: 0 when every step passed; 1 when one failed, or when the
# tests found no GPU (exit 77: on a GPU machine that is a failure). Typical
# time on one H200 machine with 16 cores: well under two minutes.
# To extend for the backend: add steps with `step NAME COMMAND...`.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-device}
mkdir -p "$build"
log=$build/device-check.log
: >"$log"
export PATH=/usr/local/cuda/bin:$PATH

failed=0
say() { printf '%s\n' "$*" | tee -a "$log"; }

# step NAME COMMAND...: run, log, time; a failure is counted, the run goes on
step() {
    local name=$1
    shift
    say "== $name: $*"
    local t0=$SECONDS rc=0
    "$@" >>"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        say "== $name: ok ($((SECONDS - t0)) s)"
    else
        say "== $name: FAILED, exit $rc ($((SECONDS - t0)) s); see $log"
        tail -n 40 "$log"
        failed=$((failed + 1))
    fi
    return "$rc"
}

finish() {
    [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$log" "$OUT/" 2>/dev/null
    if [ "$failed" -eq 0 ]; then
        say "device-check: all steps passed"
        exit 0
    fi
    say "device-check: $failed step(s) FAILED"
    exit 1
}

arch=${OC_ARCH:-}
if [ -z "$arch" ]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
           head -n 1 | tr -d ' .')
    case $arch in '' | *[!0-9]*) arch=90 ;; esac
fi

say "device-check: $(date -u +%Y-%m-%dT%H:%M:%SZ), build $build, sm_$arch"
nvidia-smi -L 2>&1 | tee -a "$log"
nvcc --version 2>&1 | tail -n 1 | tee -a "$log"

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
step configure cmake -S "$root/kernels" -B "$build" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" || finish
step build cmake --build "$build" --parallel "$(nproc)" || finish

# the tests; 77 means they saw no GPU, which here is a failure
say "== kernels_gpu: $build/kernels_gpu"
t0=$SECONDS
"$build/kernels_gpu" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
case $rc in
0) say "== kernels_gpu: ok ($((SECONDS - t0)) s)" ;;
77) say "== kernels_gpu: FAILED: no GPU visible on a machine that should have one"
    failed=$((failed + 1)) ;;
*) say "== kernels_gpu: FAILED, exit $rc"
   failed=$((failed + 1)) ;;
esac

# sanitize TOOL: compute-sanitizer on the tests; where the machine's runtime
# refuses the tool (gVisor: "Device not supported"), say so and go on
sanitize() {
    local tool=$1 out=$build/sanitize-$1.log rc=0 t0=$SECONDS
    say "== $tool: compute-sanitizer --tool $tool $build/kernels_gpu"
    compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/kernels_gpu" \
        >"$out" 2>&1 || rc=$?
    cat "$out" >>"$log"
    if [ "$rc" -eq 0 ]; then
        say "== $tool: ok ($((SECONDS - t0)) s)"
    elif grep -q -e 'Device not supported' -e 'Failed to initialize' "$out"; then
        say "== $tool: not available on this machine ($(grep -m 1 -e 'Device not supported' -e 'Failed to initialize' "$out"))"
    else
        say "== $tool: FAILED, exit $rc"
        grep -m 20 -e '=========' "$out"
        failed=$((failed + 1))
    fi
}

if [ "${OC_SANITIZE:-1}" != 0 ] && [ "$rc" -eq 0 ]; then
    if command -v compute-sanitizer >/dev/null; then
        sanitize memcheck
        sanitize racecheck
    else
        say "== compute-sanitizer not installed: memcheck and racecheck skipped"
    fi
fi
finish
