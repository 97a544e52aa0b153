#!/usr/bin/env bash
# device-check.sh: every check that needs a GPU, in one short run on a GPU
# machine (the device tool's H200: 15 minutes of device time per issue, so
# this is one prepared script; typical run 4-6 minutes).
#
# On this (CPU) machine first:   bash tools/device-bundle.sh     (~3 min)
# Then on the GPU machine, from the repository root, carrying .device:
#                                bash tools/device-check.sh
# and, back here, with the results it wrote to $OUT:
#                                bash tools/device-report.sh RESULTS.tar.gz
#
# Steps (a failed step is counted and the run goes on where it can):
#   libs        finds cuBLAS, cuBLASLt and NCCL on the machine (the CUDA
#               toolkit, else PyTorch's nvidia-* packages) for the bundle
#   kernels     .device/bin/kernels_gpu: the cuda kernel table against the
#               cpu one (the reference); if the bundle's binary cannot load,
#               kernels/ is built here instead (cmake + nvcc, and the
#               bundle's OpenBLAS: .device/lib and .device/include)
#   memcheck    compute-sanitizer on the kernel tests and on two steps of
#               the cuda executor (tiny model), where the runtime allows it
#   losses      the tiny model (GPT-2 block) and llama-tiny (Llama block:
#               RMSNorm, RoPE, SwiGLU, grouped-query attention), tp1-pp1-dp1,
#               10 steps with the cpu backend (fp32, the reference), the cuda
#               backend in fp32 and in bf16: fp32 within 1e-4 relative of
#               the cpu losses at every step, bf16 within 2e-2 (bf16's 8-bit
#               mantissa: 2^-8 = 3.9e-3 per rounding; the losses drift
#               through 10 AdamW steps)
#   mfu         a GPT-3 XL (1.3 B parameters, 24 layers of h = 2048) layer
#               stack on one GPU, bf16 GEMMs, seq 2048, micro-batch 4,
#               global batch 16, 4 steps: measured.csv's MFU against the
#               H200's dense bf16 peak (topologies/h200-node.json, 989 TFLOP/s)
#   calibrate   ocsim-exec --calibrate at the same shapes: GEMM rate per
#               shape, HBM bandwidth, each model part's rate, written as
#               topology-calibrated.json (device-report.sh then predicts the
#               mfu run with `ocsim simulate` on it and runs `ocsim compare`)
#   netbw       ocsim-exec --backend cuda --netbw over NCCL (exec/netbw.h), one
#               thread per GPU, each GPU named a node (--ranks-per-node 1):
#               with two GPUs or more, the tables and topology-netbw.json of
#               NVLink / PCIe between the GPUs of this machine (intra-node:
#               one machine has no network between nodes to measure); with
#               one GPU NCCL cannot run two ranks, so the step checks that
#               the cuda backend refuses with one line (exit 2) and says so
#
# Environment: OUT=dir (the device tool's output folder: results there),
#   OC_SANITIZE=0 skips compute-sanitizer, OC_RACECHECK=1 adds racecheck of
#   the kernels (minutes), OC_QUICK=1 skips mfu and calibrate.
# Device run: run(command="bash tools/device-check.sh", carry=[".device"],
#   timeout_s=540); the results come back as device-results.tar.gz.
# Exit status: 0 when every step passed, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bundle=$root/.device
work=${TMPDIR:-/tmp}/ocsim-device-check
rm -rf "$work"
mkdir -p "$work"
log=$work/device-check.log
: >"$log"
export PATH=/usr/local/cuda/bin:$PATH
export OCSIM_DATA_DIR=$root

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
        say "== $name: FAILED, exit $rc ($((SECONDS - t0)) s)"
        tail -n 25 "$log"
        failed=$((failed + 1))
    fi
    return "$rc"
}

finish() {
    if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
        cp "$log" "$OUT/" 2>/dev/null
        (cd "$work" && tar czf "$OUT/device-results.tar.gz" \
            --exclude='*.bin' --exclude='timeline.json' \
            device-check.log run-* calib netbw 2>/dev/null)
    fi
    if [ "$failed" -eq 0 ]; then
        say "device-check: all steps passed"
        exit 0
    fi
    say "device-check: $failed step(s) FAILED"
    exit 1
}

say "device-check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi -L 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$log"

# -- libs ---------------------------------------------------------------
# dir_of NAME: the folder of the first library file NAME* found
dir_of() {
    local f
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
             /usr/lib/x86_64-linux-gnu /usr/local/lib; do
        f=$(ls "$d/$1"* 2>/dev/null | head -n 1)
        [ -n "$f" ] && { dirname "$f"; return 0; }
    done
    f=$(find /opt /usr /root -xdev -name "$1*" -path '*nvidia*' 2>/dev/null | head -n 1)
    [ -n "$f" ] && { dirname "$f"; return 0; }
    return 1
}
libpath=$bundle/lib
for l in libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
    d=$(dir_of "$l") || { say "== libs: $l not found on this machine"; failed=$((failed + 1)); continue; }
    case ":$libpath:" in *":$d:"*) ;; *) libpath=$libpath:$d ;; esac
done
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
say "== libs: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
exe=$bundle/bin/ocsim-exec
if [ ! -x "$exe" ]; then
    say "== no $exe: run tools/device-bundle.sh on the CPU machine and carry .device"
    failed=$((failed + 1))
    finish
fi
ldd "$exe" | grep 'not found' | tee -a "$log" && { say "== libs: missing (above)"; failed=$((failed + 1)); }

# -- kernels ------------------------------------------------------------
kern=$bundle/bin/kernels_gpu
if ldd "$kern" | grep -q "not found"; then
    say "== kernels: the bundle's binary cannot load; building kernels/ here"
    # the cpu kernels (the reference) need OpenBLAS: the bundle's
    blas=""
    [ -f "$bundle/include/cblas.h" ] && [ -f "$bundle/lib/libopenblas.so.0" ] &&
        blas="-DOPENBLAS_INCLUDE_DIR='$bundle/include' -DOPENBLAS_LIBRARY='$bundle/lib/libopenblas.so.0'"
    step kernels-build bash -c "cmake -S '$root/kernels' -B '$work/kbuild' \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 $blas && \
        cmake --build '$work/kbuild' -j \$(nproc)" && kern=$work/kbuild/kernels_gpu
fi
step kernels "$kern"

# sanitize TOOL COMMAND...: compute-sanitizer; where the runtime refuses the
# tool (gVisor: "Device not supported"), say so and go on
sanitize() {
    local tool=$1 out=$work/sanitize-$1-$RANDOM.log rc=0 t0=$SECONDS
    shift
    say "== $tool: compute-sanitizer --tool $tool $*"
    timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 1 "$@" >"$out" 2>&1 || rc=$?
    cat "$out" >>"$log"
    if [ "$rc" -eq 0 ]; then
        say "== $tool: ok ($((SECONDS - t0)) s)"
    elif grep -q -e 'Device not supported' -e 'Failed to initialize' "$out"; then
        say "== $tool: not available on this machine"
    else
        say "== $tool: FAILED, exit $rc"
        grep -m 20 -e '=========' "$out" | tee -a "$log"
        failed=$((failed + 1))
    fi
}

common=(--layout tp1-pp1-dp1 --global-batch 8 --micro-batch 2 --seq 64
        --topology h200-node --timeout 120)
if [ "${OC_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
    sanitize memcheck "$kern"
    # racecheck of the attention kernels takes minutes: on request
    [ "${OC_RACECHECK:-0}" = 1 ] && sanitize racecheck "$kern"
    sanitize memcheck "$exe" --backend cuda --model tiny "${common[@]}" --steps 2 \
        --out "$work/san-exec"
    sanitize memcheck "$exe" --backend cuda --model llama-tiny "${common[@]}" --steps 2 \
        --out "$work/san-exec-llama"
fi

# -- losses: the GPT-2 block (tiny, run-*) and Llama's (llama-tiny,
# run-llama-*) -----------------------------------------------------------
for model in tiny llama-tiny; do
    tag=${model%tiny}   # "" or "llama-"
    step "${tag}cpu" "$exe" --backend cpu --model "$model" "${common[@]}" --steps 10 \
        --out "$work/run-${tag}cpu"
    step "${tag}cuda-fp32" "$exe" --backend cuda --precision fp32 --model "$model" \
        "${common[@]}" --steps 10 --out "$work/run-${tag}cuda-fp32"
    step "${tag}cuda-bf16" "$exe" --backend cuda --precision bf16 --model "$model" \
        "${common[@]}" --steps 10 --out "$work/run-${tag}cuda-bf16"
done
# losses_close A B TOL: every step's loss of B within TOL relative of A's
losses_close() {
    awk -F, -v tol="$3" 'NR == FNR { if (FNR > 1) a[$1] = $2; next }
        FNR > 1 { n++; d = ($2 - a[$1]) / a[$1]; if (d < 0) d = -d;
                  if (d > m) m = d; if (!($1 in a) || d > tol) bad++;
                  printf "step %s  cpu %.6f  cuda %.6f  rel %.2e\n", $1, a[$1], $2, d }
        END { printf "max relative difference %.3e (tolerance %g), %d steps\n", m, tol, n;
              exit (bad || n < 10) }' "$1/loss.csv" "$2/loss.csv"
}
for tag in "" llama-; do
    step "${tag}losses-fp32" losses_close "$work/run-${tag}cpu" "$work/run-${tag}cuda-fp32" 1e-4
    step "${tag}losses-bf16" losses_close "$work/run-${tag}cpu" "$work/run-${tag}cuda-bf16" 2e-2
done

# -- mfu and calibration --------------------------------------------------
if [ "${OC_QUICK:-0}" != 1 ]; then
    big=(--model gpt3-1.3b --layout tp1-pp1-dp1 --seq 2048 --micro-batch 4
         --global-batch 16 --recompute selective --topology h200-node --timeout 300)
    step mfu "$exe" --backend cuda "${big[@]}" --steps 4 --no-weights --out "$work/run-mfu" &&
        say "$(grep -E 'step time|TFLOP/s|peak memory' "$log" | tail -n 3)"
    step calibrate "$exe" --backend cuda --calibrate "${big[@]}" --out "$work/calib"
fi

# -- netbw ----------------------------------------------------------------
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -ge 2 ]; then
    step netbw "$exe" --backend cuda --netbw --cards "$gpus" --ranks-per-node 1 \
        --max-msg 64M --topology h200-node --timeout 120 --out "$work/netbw" &&
        say "$(grep -E '^# (median|all-reduce across)' "$log" | tail -n 2)"
else
    # netbw_one_gpu: exit 2 and the one-node line, nothing else
    netbw_one_gpu() {
        local out rc=0
        out=$("$exe" --backend cuda --netbw --cards 1 --ranks-per-node 1 \
            --topology h200-node --out "$work/netbw" 2>&1) || rc=$?
        printf '%s\n' "$out"
        [ "$rc" -eq 2 ] && grep -q 'one rank runs on one node' <<<"$out"
    }
    say "== netbw: $gpus GPU: NCCL needs a GPU per rank, so the NCCL path cannot measure here"
    step netbw-one-gpu netbw_one_gpu
fi
finish
