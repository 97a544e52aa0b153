#!/usr/bin/env bash
# bench-sweep.sh: how long `ocsim sweep` takes, and how the time grows with
# the card count and with the micro-batch count. Writes a Markdown table to
# stdout; docs/benchmarks.md holds its output with the machine it ran on.
#
# usage: tools/bench-sweep.sh [path/to/ocsim] [repeats]
# The issue's targets (2-core machine): --cards 64 under 5 s wall,
# --cards 1024 under 60 s, default model, topology and batch.
set -euo pipefail
ocsim=${1:-./build/ocsim}
reps=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wall seconds of one run, best of $reps (the least disturbed by other load)
best_wall() {
  local best=""
  for _ in $(seq "$reps"); do
    local t0 t1 w
    t0=$(date +%s.%N)
    "$ocsim" "$@" --out "$tmp/out" >"$tmp/log" 2>&1 || { echo "failed: $*" >&2; cat "$tmp/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    if [ -z "$best" ] || awk -v w="$w" -v b="$best" 'BEGIN {exit !(w < b)}'; then best=$w; fi
  done
  printf '%.2f' "$best"
}

simulated() { sed -n 's/.* \([0-9]*\) simulated in .*/\1/p' "$tmp/log"; }

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)."
echo "Command: tools/bench-sweep.sh $ocsim $reps (best of $reps runs, wall seconds)."
echo
echo "### Against the targets (default model llama2-70b, topology h100-100g, global batch 512)"
echo
echo "| command | wall s | layouts simulated | target |"
echo "|---|--:|--:|---|"
w=$(best_wall sweep --cards 64); echo "| ocsim sweep --cards 64 | $w | $(simulated) | < 5 s |"
w=$(best_wall sweep --cards 1024); echo "| ocsim sweep --cards 1024 | $w | $(simulated) | < 60 s |"
echo
echo "### Growth with cards (global batch 512)"
echo
echo "| cards | wall s | layouts simulated | s per layout |"
echo "|--:|--:|--:|--:|"
for c in 64 128 256 512 1024; do
  w=$(best_wall sweep --cards "$c")
  n=$(simulated)
  echo "| $c | $w | $n | $(awk -v w="$w" -v n="$n" 'BEGIN {printf "%.3f", (n > 0 ? w / n : 0)}') |"
done
echo
echo "### Growth with micro-batches (64 cards, one layout family: --micro-batches 1 --schedule 1f1b)"
echo
echo "| global batch | micro-batches of tp8-pp8-dp1 | wall s | layouts simulated |"
echo "|--:|--:|--:|--:|"
for g in 128 256 512 1024 2048; do
  w=$(best_wall sweep --cards 64 --global-batch "$g" --micro-batches 1 --schedule 1f1b)
  echo "| $g | $g | $w | $(simulated) |"
done
