#!/usr/bin/env bash
# coarse_sweep.sh: the sweep's coarse rings (its default since the
# eleventh session; sim/collective.h "Coarse mode") against message-level
# rings (--no-coarse) on the same problems. A ring phase of k steps whose
# hops are alike becomes one message of the k steps' bytes and k-1 hop
# latencies: on an uncontended ring entered at once the same time, under
# contention an approximation. What the sweep must keep:
#   - every layout both sweeps simulated has the same step time to 2e-3
#     relative, the same compute, TP / PP / DP and exposed communication
#     to 2e-3 of the step, the same bubble fraction to 2e-3 (measured:
#     2e-5 at most over the 60 rows of the default 1024-card sweep, 0 at
#     64 cards; ZeRO-3 on eight-NIC nodes, whose per-layer all-gathers
#     share the NICs with the pipeline's messages, up to 1.1e-3 in step
#     and 1.0e-3 in bubble: the contention the merged message times
#     differently);
#   - the ranked table names the same layouts in the same order, except
#     where two neighbours are within 2e-3 of each other (a tie either
#     way);
#   - the default sweep says it ran coarse ("(coarse rings)" in report.md)
#     and --no-coarse that it did not, so a default that silently stayed
#     at message level cannot pass;
#   - on a layout whose DP ring crosses nodes under contention
#     (llama2-70b, interleaved, overlap on), `ocsim simulate --coarse`
#     and without agree to 2e-3 as well, and only the first merges ring
#     steps (its ocsim_coll_ring debug line: the merge happened).
# usage: coarse_sweep.sh OCSIM
set -euo pipefail
ocsim=${1:?usage: coarse_sweep.sh OCSIM}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# compare A B: the checks above on two sweep.csv (tests/coarse_compare.py)
compare() {
  python3 "$(dirname "$0")/coarse_compare.py" "$1" "$2" 2e-3 || fail=1
}

run() { # NAME ARGS...: one sweep with coarse rings (default), one without
  local name=$1
  shift
  "$ocsim" sweep "$@" --out "$tmp/$name-c" >/dev/null 2>"$tmp/$name-c.err" || {
    cat "$tmp/$name-c.err"; fail=1; return; }
  "$ocsim" sweep "$@" --no-coarse --out "$tmp/$name-m" >/dev/null 2>"$tmp/$name-m.err" || {
    cat "$tmp/$name-m.err"; fail=1; return; }
  grep -q '(coarse rings)' "$tmp/$name-c/report.md" || {
    echo "$name: the default sweep did not say it ran coarse rings"; fail=1; }
  if grep -q '(coarse rings)' "$tmp/$name-m/report.md"; then
    echo "$name: --no-coarse still says coarse rings"; fail=1
  fi
  echo "$name:"
  compare "$tmp/$name-c/sweep.csv" "$tmp/$name-m/sweep.csv"
}

# the default model on 64 cards (PP, CP rings inside nodes, DP rings
# across nodes), a ZeRO-3 problem on eight-NIC nodes (per-layer
# all-gathers and reduce-scatters on hierarchical rings); gpt-22b on 16
# dgx-a100 (96 layouts within 1e-5) is left out: 8 minutes under CI's
# Asan build for the three
run llama64 --cards 64 --top 10
run zero3 --cards 16 --model gpt3-1.3b --topology dgx-h100 --zero-stage 3 \
  --global-batch 64 --seq 1024 --top 10

# one simulation, both ways, with the ring's debug lines
lay=tp4-pp4-dp2-mb1-v2-rfull-order=tp-pp-dp
for m in c m; do
  flag=--coarse
  [ "$m" = m ] && flag=
  "$ocsim" simulate --cards 32 --layout "$lay" --global-batch 64 --fidelity fast $flag \
    --log ocsim_coll_ring.thres:debug --out "$tmp/sim-$m" >/dev/null 2>"$tmp/sim-$m.err" ||
    { tail -3 "$tmp/sim-$m.err"; fail=1; }
done
merged() { grep -c 'steps merged into one message' "$1" || true; }
nc=$(merged "$tmp/sim-c.err")
nm=$(merged "$tmp/sim-m.err")
echo "simulate: $nc merged ring phases with --coarse, $nm without"
if [ "$nc" -eq 0 ] || [ "$nm" -ne 0 ]; then
  echo "simulate: --coarse must merge ring steps and message level must not"
  fail=1
fi
python3 - "$tmp/sim-c" "$tmp/sim-m" <<'EOF' || fail=1
import csv, json, sys
def fig(d):
    return next(csv.DictReader(open(d + "/simulate.csv")))
a, b = fig(sys.argv[1]), fig(sys.argv[2])
for c in ("step_time_s", "dp_comm_s", "exposed_comm_s", "bubble_fraction"):
    x, y = float(a[c]), float(b[c])
    if abs(x - y) > 2e-3 * max(abs(x), abs(y)):
        print(f"simulate {c}: coarse {x} message level {y}")
        sys.exit(1)
print("simulate: figures agree to 2e-3")
EOF

[ "$fail" -eq 0 ] && echo "coarse_sweep: ok"
exit "$fail"
