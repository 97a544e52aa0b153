#!/usr/bin/env bash
# hetero_sweep.sh: a sweep on node groups of unlike devices
# (topologies/mixed-h100-a100.json: 4 H100 nodes, then 4 A100 nodes).
# Holds:
#   - the sweep runs and says what the slower group costs, on stdout and in
#     report.md's "Node groups" section, and draws groups.png's data;
#   - each of the best layouts is no faster on the mixed cluster than on 64
#     H100 (every op of an A100 rank takes at least its H100 time, and the
#     all-H100 figure is the faster of the layout's split and the even one);
#   - the bound the sweep ordered and pruned by stays below every
#     simulated step (core/bound_groups.h, the composite device);
#   - a balanced split for unlike devices (first/last) is among the
#     simulated layouts of a pipeline that crosses the groups.
# The space: gpt-50m, 64 cards, --core-knobs (seconds).
# usage: hetero_sweep.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C

expect 0 'node groups: .* on mixed-h100-a100\. On 64 x H100 SXM5 80GB alone' \
  "$ocsim" sweep --cards 64 --topology mixed-h100-a100 --model gpt-50m \
  --global-batch 128 --seq 1024 --core-knobs --out "$tmp/s"
if grep -q '^## Node groups' "$tmp/s/report.md" &&
   grep -q 'The slower groups cost [0-9.]*% of the step against all h100' "$tmp/s/report.md"; then
  ok
else
  bad "report.md has no Node groups section"
fi
# groups.dat: rank "layout" step_mixed step_all_h100
if awk '!/^#/ { n++; if ($3 + 0 < $4 * (1 - 1e-9) || $4 + 0 <= 0) bad++ }
        END { exit !(n >= 2 && bad == 0) }' "$tmp/s/groups.dat"; then
  ok
else
  bad "groups.dat: a layout faster on the mixed cluster than on all H100 (or no rows)"
  cat "$tmp/s/groups.dat"
fi
# sweep.csv: bound_s <= step_time_s on every simulated row
if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            $(col["step_time_s"]) != "" && $(col["bound_s"]) != "" {
              n++; if ($(col["bound_s"]) + 0 > $(col["step_time_s"]) + 0) bad++ }
            END { exit !(n >= 5 && bad == 0) }' "$tmp/s/sweep.csv"; then
  ok
else
  bad "sweep.csv: a bound above its simulated step"
fi
if grep -q -- '-first[0-9]*-last[0-9]*,' "$tmp/s/sweep.csv"; then
  ok
else
  bad "sweep.csv: no split balanced for the groups"
fi
summary hetero_sweep
