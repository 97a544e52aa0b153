#!/usr/bin/env bash
# check-bound.sh: the property the sweep's pruning rests on (core/bound.h),
# bound <= simulated step, on every candidate of an exhaustive sweep: runs
# `ocsim sweep --no-prune ARGS` and checks each simulated row of its
# sweep.csv. Long (every candidate simulated); not a CI test
# (tests/test_bound.c and tests/sweep_prune.sh hold it on samples there).
# Prints the count, the largest bound/simulated ratio and every violation;
# exit 1 on a violation.
#
# usage: tools/check-bound.sh path/to/ocsim SWEEP-ARGS...
#   e.g. tools/check-bound.sh build/ocsim --cards 32 --model gpt3-1.3b \
#          --all-knobs --tp 1 --global-batch 64 --seq 1024
set -uo pipefail
ocsim=${1:?usage: check-bound.sh OCSIM SWEEP-ARGS...}
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ocsim" sweep --no-prune "$@" --out "$tmp/out" >"$tmp/log" 2>&1
rc=$?
grep 'layouts:' "$tmp/log"
[ -f "$tmp/out/sweep.csv" ] || { echo "check-bound: no sweep.csv (exit $rc)"; tail -3 "$tmp/log"; exit 2; }
# columns: 9 step_time_s, 24 layout, 25 bound_s (simulated rows have no
# reason, so no quoted commas)
awk -F, 'NR > 1 && $9 != "" && $25 != "" {
           n++; r = $25 / $9; if (r > worst) { worst = r; wl = $24 }
           if ($25 + 0 > $9 + 0) { print "violation: " $24 ": bound " $25 " > simulated " $9; bad++ }
         }
         END { printf "%d simulated rows, bound/simulated at most %.4f (%s), %d violations\n", n, worst, wl, bad
               exit bad > 0 }' "$tmp/out/sweep.csv"
