#!/usr/bin/env bash
# bench-sweep.sh: how long `ocsim sweep` takes over the whole knob space
# (issue 12, item 6), side by side with an older build on the same machine
# in the same run. Writes a Markdown table to stdout; docs/benchmarks.md
# holds its output with the machine it ran on. Not a timed test.
#
# usage: tools/bench-sweep.sh NEW [OLD]
#   NEW, OLD  paths to ocsim binaries (OLD: for example a build of main
#             aabefd6, the sweep before issue 12: `git worktree add
#             /tmp/base aabefd6` and a Release build in /tmp/base/build)
# environment: BENCH_LIMIT (seconds per run, default 600; a run cut there
#   is printed as "> LIMIT"), BENCH_CARDS (default "64 1024 16384").
#
# What it runs, each once (wall seconds, one run: the counts are exact, the
# time is what a user waits):
# - the targets: `ocsim sweep --cards N` for N in BENCH_CARDS, default
#   model (llama2-70b), topology (h100-100g) and batch (512 x 4096): every
#   knob searched by NEW, the old default space by OLD;
#   targets: 64 cards <= 1 s, 1024 <= 10 s, 16384 <= 2 min;
# - the three Calculon-comparable problems (13B-22B GPT-style models on
#   16-64 A100, every knob searched; Calculon's figures 127-250 s): gpt-22b
#   on 16 and 64 x dgx-a100, llama2-13b on 32, global batch 256 of 2048
#   tokens.
# The counts are read from NEW's summary line ("N layouts: S simulated in
# ... P pruned by bound ... O out of memory, I illegal, F failed; K no-op
# variants skipped").
set -uo pipefail
new=${1:?usage: bench-sweep.sh NEW [OLD]}
old=${2:-}
limit=${BENCH_LIMIT:-600}
cards=${BENCH_CARDS:-64 1024 16384}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run BIN ARGS...: wall seconds of one sweep into $tmp/log ("> LIMIT" when cut)
run() {
  local bin=$1
  shift
  rm -rf "$tmp/out"
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -s INT "$limit" "$bin" sweep "$@" --out "$tmp/out" >"$tmp/log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ]; then
    echo "> $limit"
  else
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'
  fi
}

# the counts of the last run's summary: candidates simulated pruned oom illegal noop
counts() {
  sed -n 's/^\([0-9]*\) layouts: \([0-9]*\) simulated in [0-9.]* s ([0-9]* fit), \([0-9]*\) pruned by bound, \([0-9]*\) out of memory, \([0-9]*\) illegal, [0-9]* failed; \([0-9]*\) no-op.*/\1 | \2 | \3 | \4 | \5 | \6/p' "$tmp/log" | head -1
}
old_counts() {
  sed -n 's/^\([0-9]*\) layouts: \([0-9]*\) simulated in .*/\1 | \2/p' "$tmp/log" | head -1
}

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u '+%Y-%m-%d %H:%M UTC')."
echo "Command: tools/bench-sweep.sh $new${old:+ $old} (one run each, wall seconds, limit $limit s)."
echo
echo "### Targets (llama2-70b, h100-100g, global batch 512 x 4096, every knob searched)"
echo
echo "| cards | wall s | candidates | simulated | pruned | out of memory | illegal | no-op skipped | target |${old:+ old wall s | old candidates | old simulated |}"
echo "|--:|--:|--:|--:|--:|--:|--:|--:|---|${old:+--:|--:|--:|}"
for c in $cards; do
  case $c in 64) tgt="<= 1 s" ;; 1024) tgt="<= 10 s" ;; 16384) tgt="<= 120 s" ;; *) tgt="" ;; esac
  w=$(run "$new" --all-knobs --cards "$c")
  k=$(counts)
  row="| $c | $w | ${k:-? | ? | ? | ? | ? | ?} | $tgt |"
  if [ -n "$old" ]; then
    ow=$(run "$old" --cards "$c")
    row="$row $ow | $(old_counts || true) |"
  fi
  echo "$row"
done
echo
echo "### The Calculon-comparable problems (every knob searched; Calculon 127-250 s)"
echo
echo "| problem | wall s | candidates | simulated | pruned | out of memory | illegal | no-op skipped |${old:+ old wall s (old space) |}"
echo "|---|--:|--:|--:|--:|--:|--:|--:|${old:+--:|}"
for p in "gpt-22b 16" "llama2-13b 32" "gpt-22b 64"; do
  set -- $p
  args=(--cards "$2" --model "$1" --topology dgx-a100 --global-batch 256 --seq 2048)
  w=$(run "$new" --all-knobs "${args[@]}")
  row="| $1 on $2 x A100 | $w | $(counts) |"
  [ -n "$old" ] && row="$row $(run "$old" "${args[@]}") |"
  echo "$row"
done
