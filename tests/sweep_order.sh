#!/usr/bin/env bash
# sweep_order.sh: the whole order of sweep.csv, every row, against the
# ranking tools/cmd_sweep.c documents (cli.sh checks only the first row):
#   1. simulated layouts that fit, by tokens/s, most first; ties: less
#      peak memory, then the shorter layout string (fewer knobs off their
#      defaults), then the string (strcmp order);
#   2. simulated but out of memory (same keys); 3. failed simulations;
#   4. pruned by their bound, by the bound, then the layout string.
# The layouts rejected before simulation are not in sweep.csv: with
# --rejected-csv they are in rejected.csv, each with its reason.
# The layout string is oc_layout_format's: tp<t>-pp<p>-dp<d>-mb<b>, then
# -v<v> for interleaved or -<schedule>.
#
# The sweep: tiny on 8 cards, micro-batches 1, 2, 4, schedules gpipe,
# 1f1b and interleaved v2 (90 candidates: 65 simulated and fitting, rows
# of sweep.csv; 25 rejected, rows of rejected.csv; none failed, out of
# memory or pruned here). What is held, row by row:
# - the classes come in the order above;
# - tokens/s never rises down the simulated rows (as printed, 9 digits);
# - the pruned rows' bounds never fall (none here: --no-prune);
# - rejected.csv: 25 rows, each with a reason and no result, none of them
#   a layout of sweep.csv;
# - exact ties: with one micro-batch per replica GPipe and 1F1B run the
#   same op list (forward, then backward), so the two layouts of each
#   such (tp, pp, dp, b) tie on tokens/s and memory to the bit: they are
#   next to each other, "...-1f1b" before "...-gpipe" (the string
#   tie-break); there are 3 such pairs. (Rows whose printed tokens/s
#   agree otherwise may differ in the last bits of the double, where the
#   sort rightly follows tokens/s, so they are not held to the
#   tie-break.)
# - the chosen layout printed is the first row's.
# usage: sweep_order.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C

# Every knob but tp, pp, dp, mb and the schedule fixed (the space before
# issue 12) and --no-prune: every candidate that fits is simulated.
expect 0 'report: ' "$ocsim" sweep --cards 8 --model tiny --global-batch 16 --seq 128 \
  --micro-batches 1,2,4 --schedule gpipe,1f1b,interleaved:2 --out "$tmp/sweep" --jobs 2 \
  "${knobs_fixed[@]}" --no-prune --rejected-csv
csv=$tmp/sweep/sweep.csv
# columns: 1 tp 2 pp 3 dp 4 micro_batch 5 num_micro_batches 6 schedule
# 7 vchunks 10 tokens_per_s 19 peak_mem_bytes 21 fits 22 reason 24 layout
# 25 bound_s
awk -F, '
  function lay(   s) { s = "tp" $1 "-pp" $2 "-dp" $3 "-mb" $4
                       return s ($6 == "interleaved" ? "-v" $7 : "-" $6) }
  function cls() { if ($10 != "") return $21 == 1 ? 1 : 2
                   return $22 ~ /^simulation failed/ ? 3 : 4 }
  NR == 1 { next }
  { c = cls(); s = lay(); n[c]++ }
  NR > 2 && c < pc { printf "row %d (%s): class %d after class %d\n", NR, s, c, pc; bad++ }
  NR > 2 && c == pc && c <= 2 && $10 + 0 > pt + 0 {
    printf "row %d (%s): %s tokens/s after %s\n", NR, s, $10, pt; bad++ }
  NR > 2 && c == pc && c == 4 && ($25 + 0 < pb + 0 || ($25 == pb && !($24 > pl))) {
    printf "row %d: %s (bound %s) after %s (bound %s)\n", NR, $24, $25, pl, pb; bad++ }
  c <= 2 && $5 == 1 && $6 == "gpipe" { g[$1 "," $2 "," $3 "," $4] = NR }
  c <= 2 && $5 == 1 && $6 == "1f1b" { f[$1 "," $2 "," $3 "," $4] = NR }
  { pc = c; pt = $10; ps = s; pb = $25; pl = $24 }
  END {
    for (k in g) { pairs++
      if (f[k] + 1 != g[k]) { printf "m = 1 (%s): 1f1b at row %d, gpipe at row %d\n", k, f[k], g[k]; bad++ } }
    if (n[1] != 65 || n[2] + n[3] + n[4] != 0 || pairs != 3) {
      printf "rows: %d fit, %d out of memory, %d failed, %d pruned; %d m = 1 pairs\n",
             n[1], n[2], n[3], n[4], pairs; bad++ }
    exit bad > 0 }' "$csv" >"$tmp/order" && ok || bad "sweep.csv order: $(head -5 "$tmp/order")"
rej=$tmp/sweep/rejected.csv
[ "$(tail -n +2 "$rej" | wc -l)" -eq 25 ] && ok || bad "rejected.csv: $(tail -n +2 "$rej" | wc -l) rows, expected 25"
awk -F, 'NR > 1 && ($9 != "" || $22 == "")' "$rej" | grep -q . \
  && bad "rejected.csv holds a row with a result or without a reason" || ok
cut -d, -f24 "$csv" | tail -n +2 | sort >"$tmp/sim.lay"
cut -d, -f24 "$rej" | tail -n +2 | sort | comm -12 - "$tmp/sim.lay" | grep -q . \
  && bad "a layout is both in sweep.csv and in rejected.csv" || ok
first=$(awk -F, 'NR == 2 { s = "tp" $1 "-pp" $2 "-dp" $3 "-mb" $4
                           print s ($6 == "interleaved" ? "-v" $7 : "-" $6) }' "$csv")
grep -q "^chosen: $first" "$tmp/out" && ok || bad "chosen is not the first row $first: $(grep chosen "$tmp/out")"

summary sweep_order
