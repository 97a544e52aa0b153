#!/usr/bin/env bash
# validate-cpu.sh: does the simulator, calibrated on this machine, predict
# the step time that the cpu executor measures? For each model: calibrate
# (ocsim-exec --calibrate), simulate the layout on the calibrated topology
# (ocsim simulate), run the layout for real (ocsim-exec), and compare
# (ocsim compare --tolerance 15). docs/validation-cpu.md holds its output
# with the machine it ran on.
#
# usage: tools/validate-cpu.sh BUILD_DIR [OUT_DIR]
#   BUILD_DIR holds ocsim and ocsim-exec (this script builds nothing);
#   OUT_DIR (default out/validate-cpu) gets, per model, cal-K/ (each
#   calibration and its log), sim-K/ (its prediction), exec-R/ (each run),
#   and cal, sim, exec (links to the median ones), cmp/ (compare.csv,
#   scatter.png) and compare.txt; OUT_DIR/summary.md is the table.
# Environment: MODELS (default "tiny gpt-50m llama-tiny llama-50m"), CALIBRATIONS (3), RUNS (5),
#   STEPS (10), TOLERANCE (15), MPIRUN (mpirun), QUIET_BUSY (10),
#   QUIET_WAIT (600).
#
# Timing on a shared machine is noisy, so nothing here is a ctest test:
#   - the machine is calibrated CALIBRATIONS times; each calibration is
#     simulated, and the one whose prediction is the median is used;
#   - the layout runs RUNS times (STEPS steps each; ocsim-exec reports the
#     mean of the steps after the first); the run with the median step time
#     is compared. Every prediction, every run and the load before each are
#     printed, so a disturbed measurement shows;
#   - before each calibration and run it waits (at most QUIET_WAIT s) until
#     the CPUs are less than QUIET_BUSY % busy over a second.
# Exit code: 0 when every model's step time is within the tolerance, 1 when
# one is not, 2 on a usage or tool error.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -x "$1/ocsim" ] || [ ! -x "$1/ocsim-exec" ]; then
  echo "usage: tools/validate-cpu.sh BUILD_DIR [OUT_DIR]  (BUILD_DIR with ocsim and ocsim-exec)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out=${2:-out/validate-cpu}
models=${MODELS:-tiny gpt-50m llama-tiny llama-50m}
ncal=${CALIBRATIONS:-3}
runs=${RUNS:-5}
steps=${STEPS:-10}
tol=${TOLERANCE:-15}
mpirun=${MPIRUN:-mpirun}
quiet_wait=${QUIET_WAIT:-600}
quiet_busy=${QUIET_BUSY:-10}
ocsim="$build/ocsim"
exec_bin="$build/ocsim-exec"

# The layout, the same on both sides. The executor runs without sequence
# parallelism, always computes classic attention (gpt.h) and in fp32 (its
# runs are fp32 runs: the layout's precision, core/layout.h); the
# simulator's defaults (sp, flash, bf16) are switched to match. Selective
# recompute is both sides' default; dp1 has no DP reduction to shard or
# overlap.
layout=tp1-pp2-dp1-mb1-1f1b-nosp-rsel-nozero-classic-fp32
ranks=2

# Batch and sequence per model: a step of a few seconds at most.
shape() {
  case "$1" in
    tiny) echo "8 128" ;;
    gpt-50m | llama-50m) echo "8 64" ;;
    *) echo "8 128" ;;
  esac
}

if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Column $2 of the one-row metrics CSV $1 (simulate.csv, measured.csv).
col() {
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i }
                     NR == 2 { print $k }' "$1"
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
# Busy share of all CPUs over one second, in percent (/proc/stat).
busy() {
  local a b
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
  sleep 1
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    u = y[1] - x[1]; i = y[2] - x[2]; printf "%.0f\n", (u + i > 0) ? 100 * u / (u + i) : 0 }'
}
# Before each measurement: wait (at most QUIET_WAIT seconds) until the
# machine is idle (under QUIET_BUSY % busy for a second), so that another
# user's burst does not land in it; say what was seen.
quiet() {
  local waited=0 b
  b=$(busy)
  while [ "$b" -gt "$quiet_busy" ] && [ "$waited" -lt "$quiet_wait" ]; do
    sleep 4
    waited=$((waited + 5))
    b=$(busy)
  done
  echo "load $(load), ${b} % busy before$([ "$waited" -gt 0 ] && echo ", after waiting ${waited} s for a quiet machine")"
}
ms() { awk -v s="$1" 'BEGIN { printf "%.1f\n", s * 1000 }'; }
# Index (1-based) of the median of the numbers given (the lower middle one
# of an even count).
median_index() {
  printf '%s\n' "$@" | awk '{ print NR, $1 }' | sort -k2,2g |
    awk -v n="$#" 'NR == int((n + 1) / 2) { print $1 }'
}

mkdir -p "$out"
summary="$out/summary.md"
{
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
  echo "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM; $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the start $(load)."
  echo "Layout $layout on $ranks MPI ranks; $ncal calibrations (the median prediction is used),"
  echo "$runs runs of $steps steps (the median run is compared); tolerance $tol %."
  echo
  echo "| model | global batch | seq | predictions (ms) | measured runs (ms) | predicted | measured | error | within $tol % |"
  echo "|---|--:|--:|---|---|--:|--:|--:|---|"
} >"$summary"

status=0
for model in $models; do
  read -r gb seq <<<"$(shape "$model")"
  dir="$out/$model"
  rm -rf "$dir"
  mkdir -p "$dir"
  common=(--model "$model" --layout "$layout" --global-batch "$gb" --seq "$seq")
  echo "== $model: $layout, global batch $gb, seq $seq"

  preds=()
  for k in $(seq "$ncal"); do
    echo "   calibration $k ($(quiet))"
    "$mpirun" -np "$ranks" "$exec_bin" --calibrate "${common[@]}" --topology h200-node \
      --out "$dir/cal-$k" >"$dir/cal-$k.log" 2>&1 ||
      { echo "calibration failed, see $dir/cal-$k.log" >&2; exit 2; }
    "$ocsim" simulate --cards "$ranks" "${common[@]}" --fidelity full \
      --topology "$dir/cal-$k/topology-calibrated.json" --out "$dir/sim-$k" \
      >"$dir/sim-$k.log" 2>&1 ||
      { echo "simulation failed, see $dir/sim-$k.log" >&2; exit 2; }
    preds+=("$(col "$dir/sim-$k/simulate.csv" step_time_s)")
    echo "     predicted step $(ms "${preds[-1]}") ms"
  done
  kc=$(median_index "${preds[@]}")
  ln -sfn "cal-$kc" "$dir/cal"
  ln -sfn "sim-$kc" "$dir/sim"
  cp "$dir/cal-$kc.log" "$dir/cal.log"

  meas=()
  for r in $(seq "$runs"); do
    echo "   run $r ($(quiet))"
    "$mpirun" -np "$ranks" "$exec_bin" "${common[@]}" --steps "$steps" --no-weights \
      --topology "$dir/cal/topology-calibrated.json" --out "$dir/exec-$r" \
      >"$dir/exec-$r.log" 2>&1 ||
      { echo "run failed, see $dir/exec-$r.log" >&2; exit 2; }
    meas+=("$(col "$dir/exec-$r/measured.csv" step_time_s)")
    echo "     measured step $(ms "${meas[-1]}") ms"
  done
  kr=$(median_index "${meas[@]}")
  ln -sfn "exec-$kr" "$dir/exec"

  rc=0
  "$ocsim" compare "$dir/sim" "$dir/exec" --tolerance "$tol" --out "$dir/cmp" \
    >"$dir/compare.txt" 2>&1 || rc=$?
  if [ "$rc" -ge 2 ]; then
    cat "$dir/compare.txt" >&2
    exit 2
  fi
  cat "$dir/compare.txt"
  p=${preds[$((kc - 1))]}
  m=${meas[$((kr - 1))]}
  err=$(awk -v p="$p" -v m="$m" 'BEGIN { printf "%+.1f %%", (m - p) / m * 100 }')
  ok=$(awk -v p="$p" -v m="$m" -v t="$tol" 'BEGIN { e = (m - p) / m * 100; print (e <= t && e >= -t) ? "yes" : "no" }')
  [ "$ok" = yes ] || status=1
  plist=$(for x in "${preds[@]}"; do ms "$x"; done | paste -sd' ')
  mlist=$(for x in "${meas[@]}"; do ms "$x"; done | paste -sd' ')
  echo "| $model | $gb | $seq | $plist | $mlist | $(ms "$p") | $(ms "$m") | $err | $ok |" >>"$summary"
done
echo "Load average at the end: $(load)." >>"$summary"
echo
cat "$summary"
exit $status
