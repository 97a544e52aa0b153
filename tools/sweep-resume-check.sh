#!/usr/bin/env bash
# sweep-resume-check.sh: issue 11's "done when" for interrupted sweeps, at
# full size. Runs `ocsim sweep --cards N` through, then the same sweep
# stopped by SIGINT after S seconds (it must exit 130 with its report
# marked "Interrupted by SIGINT: k of M"), then `--resume` in that folder,
# and compares sweep.csv byte for byte and report.md but for its timing
# line ("sweep took"). Prints what it did and "same" or the differences;
# exits 0 when both match. docs/reliability.md records a run.
#
# usage: tools/sweep-resume-check.sh [path/to/ocsim] [cards] [seconds]
#   defaults: ./build/ocsim 1024 8 (the default model, topology and batch:
#   about 60 layouts to simulate, 15 to 30 s a sweep on 2 cores)
#
# What it is not: a ctest (tests/sweep_interrupt.sh is, on 8 cards, with
# the test hooks of sim/sweep.h); this one uses none of the hooks.
set -u
ocsim=${1:-./build/ocsim}
cards=${2:-1024}
after_s=${3:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(sweep --cards "$cards")
fail=0

t0=$(date +%s.%N)
"$ocsim" "${args[@]}" --out "$tmp/ref" >"$tmp/ref.out" 2>"$tmp/ref.err"
rc=$?
t1=$(date +%s.%N)
echo "through:     exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s: $(grep -m1 'layouts:' "$tmp/ref.out")"
[ "$rc" -eq 0 ] || fail=1

# The interrupted run in a session of its own, as from a terminal (its
# SIGINT is not the ignored one of a script's background job).
setsid env --default-signal=INT "$ocsim" "${args[@]}" --out "$tmp/int" \
  >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
sleep "$after_s"
kill -INT "$pid"
wait "$pid"
rc=$?
left=$(ps -eo sid=,pid=,stat=,args= | awk -v s="$pid" '$1 == s')
echo "interrupted: exit $rc after SIGINT at ${after_s} s: $(grep -m1 '^interrupted by' "$tmp/int.out")"
[ "$rc" -eq 130 ] || fail=1
[ -z "$left" ] || { echo "processes left: $left"; fail=1; }
grep -q '^\*\*Interrupted by SIGINT: [0-9]* of [0-9]* layouts simulated' "$tmp/int/report.md" \
  || { echo "report.md is not marked as interrupted"; fail=1; }

t0=$(date +%s.%N)
"$ocsim" "${args[@]}" --out "$tmp/int" --resume >"$tmp/res.out" 2>"$tmp/res.err"
rc=$?
t1=$(date +%s.%N)
echo "resumed:     exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s: $(grep -m1 'resuming:' "$tmp/res.err" | sed 's/^ocsim sweep: //')"
[ "$rc" -eq 0 ] || fail=1

if cmp "$tmp/ref/sweep.csv" "$tmp/int/sweep.csv"; then
  echo "sweep.csv:   same ($(($(wc -l <"$tmp/ref/sweep.csv") - 1)) rows, sha256 $(sha256sum <"$tmp/ref/sweep.csv" | cut -c1-16))"
else
  fail=1
fi
if diff <(sed "s#$tmp/ref#OUT#; /sweep took/d" "$tmp/ref/report.md") \
  <(sed "s#$tmp/int#OUT#; /sweep took/d" "$tmp/int/report.md"); then
  echo "report.md:   same but for the timing line"
else
  fail=1
fi
[ "$fail" -eq 0 ] && echo "sweep-resume-check: same" || echo "sweep-resume-check: DIFFERENT or failed"
exit "$fail"
