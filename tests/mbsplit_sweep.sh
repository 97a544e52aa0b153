#!/usr/bin/env bash
# mbsplit_sweep.sh: unequal micro-batch counts per DP replica in a sweep on
# node groups (core/mbsplit.h, tools/sweep_mbs.c) and in one simulation.
# Holds:
#   - on topologies/mixed-h100-a100.json with the DP replicas on the groups
#     (--rank-order tp-pp-dp) the sweep prints "speed-weighted
#     micro-batches: <g>x over even", report.md has its section, and
#     mbsplit.csv's rows are the simulations: each speed layout's step is
#     its sweep.csv row's, each even one's too, the gain their ratio, and
#     each split's counts sum to the global batch over the micro-batch;
#   - the chosen layout (sweep.csv's first row) runs the global batch;
#   - every speed row's bound stays below its simulated step;
#   - --dp-micro-batch-split even leaves the even split alone (no mbs=
#     rows), and a uniform topology gets none either, with the same
#     candidates and simulations as under the flag (a no-op there);
#   - simulate --dp-micro-batch-split speed prints the counts, summing to
#     the batch.
# The space: gpt-50m, 64 cards, --core-knobs (seconds).
# usage: mbsplit_sweep.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C
G=128
common=(--cards 64 --model gpt-50m --global-batch $G --seq 1024 --core-knobs)

expect 0 '^speed-weighted micro-batches: [0-9.]+x over even \(' \
  "$ocsim" sweep "${common[@]}" --topology mixed-h100-a100 --rank-order tp-pp-dp --out "$tmp/s"
grep -q '^## Micro-batches per DP replica' "$tmp/s/report.md" && ok ||
  bad "report.md has no micro-batch section"

# sum of a split "3x16/1x16" times the micro-batch size
sum_split() { echo "$1" | tr '/' '\n' | awk -F x '{ s += $1 * ($2 == "" ? 1 : $2) } END { print s }'; }
mb_of() { echo "$1" | sed -E 's/.*-mb([0-9]+)-.*/\1/'; }

# sweep.csv: layout -> step_time_s, bound_s
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         $(col["step_time_s"]) != "" { print $(col["layout"]), $(col["step_time_s"]), $(col["bound_s"]) }' \
  "$tmp/s/sweep.csv" >"$tmp/steps"
rows=0
while IFS=, read -r even speed counts se ss gain fits; do
  [ "$even" = layout_even ] && continue
  rows=$((rows + 1))
  b=$(mb_of "$speed")
  [ $(( $(sum_split "$counts") * b )) -eq $G ] && ok || bad "$speed: counts $counts x mb$b != $G"
  case "$speed" in *"-mbs=$counts") ok ;; *) bad "$speed does not carry mbs=$counts" ;; esac
  read -r _ s_csv b_csv < <(grep -F "$speed " "$tmp/steps")
  read -r _ e_csv _ < <(grep -F "$even " "$tmp/steps")
  awk -v a="$s_csv" -v b="$ss" -v c="$e_csv" -v d="$se" -v g="$gain" -v bd="$b_csv" \
    'BEGIN { exit !(a == b && c == d && (d / b - g)^2 < 1e-10 && bd + 0 <= a + 0) }' && ok ||
    bad "$speed: mbsplit.csv ($se, $ss, $gain) against sweep.csv ($e_csv, $s_csv, bound $b_csv)"
done <"$tmp/s/mbsplit.csv"
[ "$rows" -ge 2 ] && ok || bad "mbsplit.csv: $rows rows"

# the chosen layout: the first row of sweep.csv
chosen=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next } NR == 2 { print $(col["layout"]) }' "$tmp/s/sweep.csv")
dp=$(echo "$chosen" | sed -E 's/.*-dp([0-9]+)-.*/\1/')
b=$(mb_of "$chosen")
case "$chosen" in
  *-mbs=*) n=$(sum_split "${chosen##*-mbs=}") ;;
  *) n=$((G / (dp * b))); n=$((n * dp)) ;;
esac
[ $((n * b)) -eq $G ] && ok || bad "chosen $chosen runs $((n * b)) sequences, not $G"

"$ocsim" sweep "${common[@]}" --topology mixed-h100-a100 --rank-order tp-pp-dp \
  --dp-micro-batch-split even --out "$tmp/e" >"$tmp/e.log" 2>&1
if ! grep -q 'mbs=' "$tmp/e/sweep.csv" && ! grep -q 'speed-weighted' "$tmp/e.log"; then ok; else
  bad "--dp-micro-batch-split even still tried unequal splits"; fi
# a uniform topology: no unequal split tried, the same candidates and
# simulations as with the knob fixed at even (not a variant there)
for k in u ue; do
  extra=(); [ $k = ue ] && extra=(--dp-micro-batch-split even)
  "$ocsim" sweep "${common[@]}" --topology dgx-h100 --rank-order tp-pp-dp "${extra[@]}" \
    --out "$tmp/$k" >"$tmp/$k.log" 2>&1
done
if ! grep -q 'mbs=' "$tmp/u/sweep.csv" && ! grep -q 'speed-weighted' "$tmp/u.log" &&
   [ "$(grep -o '^[0-9]* layouts: [0-9]* simulated' "$tmp/u.log")" = \
     "$(grep -o '^[0-9]* layouts: [0-9]* simulated' "$tmp/ue.log")" ]; then ok; else
  bad "a uniform topology: unequal splits tried, or other counts than with the knob fixed"; fi

expect 0 'micro-batches 3x16/1x16 over the DP replicas' \
  "$ocsim" simulate --cards 64 --model gpt-50m --global-batch $G --seq 1024 --topology mixed-h100-a100 \
  --layout tp1-pp2-dp32-mb2-order=tp-pp-dp --dp-micro-batch-split speed --out "$tmp/one"
summary mbsplit_sweep
