#!/usr/bin/env bash
# device-report.sh: back on the CPU machine, turns what tools/device-check.sh
# measured on a GPU into the prediction check: `ocsim simulate` of the mfu
# run's layout on the calibrated topology, then `ocsim compare` against the
# measured run, and a summary (losses, MFU, prediction error) to paste into
# docs/validation-gpu.md with the commands that produced it.
#
#   bash tools/device-report.sh RESULTS.tar.gz [BUILD_DIR] [OUT_DIR]
#     RESULTS.tar.gz  device-check.sh's $OUT/device-results.tar.gz
#     BUILD_DIR       holds ocsim (default build/)
#     OUT_DIR         default out/device
#
# Exit status: 0 when the compare passed its tolerance (15%), 1 when not,
# 2 when something is missing.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
res=${1:-}
build=${2:-$root/build}
out=${3:-$root/out/device}
[ -f "$res" ] && [ -x "$build/ocsim" ] ||
    { echo "usage: tools/device-report.sh RESULTS.tar.gz [BUILD_DIR] [OUT_DIR]" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"
tar xzf "$res" -C "$out" || exit 2
export OCSIM_DATA_DIR=$root

# the mfu run's shapes: device-check.sh's `big` options
big=(--model gpt3-1.3b --layout tp1-pp1-dp1 --seq 2048 --micro-batch 4
     --global-batch 16 --recompute selective)
[ -f "$out/calib/topology-calibrated.json" ] && [ -f "$out/run-mfu/measured.csv" ] ||
    { echo "device-report: no calibration or mfu run in $res" >&2; exit 2; }

col() { # col FILE NAME: the value of column NAME in the first data row
    awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i; next }
                       NR == 2 { print $c }' "$1"
}

echo "== losses (device-check.sh: cpu fp32 reference vs cuda)"
grep -E 'max relative difference' "$out/device-check.log" || true
echo "== mfu run (measured on the GPU)"
for k in step_time_s tokens_per_s tflops_per_gpu mfu peak_mem_bytes; do
    printf '  %-16s %s\n' "$k" "$(col "$out/run-mfu/measured.csv" "$k")"
done
# the executor's attention is the classic kernel (no flash), and its runs are
# fp32 runs (activations and gradients in fp32; bf16 only for GEMM operands,
# core/layout.h): predict that
echo "== prediction: ocsim simulate ${big[*]} --attention classic --fp32 --topology calib/topology-calibrated.json"
"$build/ocsim" simulate --cards 1 "${big[@]}" --no-sequence-parallel --attention classic --fp32 \
    --topology "$out/calib/topology-calibrated.json" --out "$out/sim" >"$out/sim.log" 2>&1 ||
    { cat "$out/sim.log" >&2; exit 2; }
rc=0
"$build/ocsim" compare "$out/sim" "$out/run-mfu" --tolerance 15 --out "$out/cmp" \
    >"$out/compare.txt" 2>&1 || rc=$?
cat "$out/compare.txt"
[ "$rc" -ge 2 ] && exit 2
p=$(col "$out/sim/simulate.csv" step_time_s)
m=$(col "$out/run-mfu/measured.csv" step_time_s)
awk -v p="$p" -v m="$m" 'BEGIN { printf "step time: predicted %.4f s, measured %.4f s, error %+.1f %% (measured - predicted) / measured\n", p, m, (m - p) / m * 100 }'
exit "$rc"
