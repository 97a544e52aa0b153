#!/usr/bin/env bash
# sweep_scaling.sh: `ocsim sweep --cards 8,16` (issue 12, item 8), gpt3-1.3b
# with a global batch of 64, against the two single sweeps it is made of:
# - DIR/cards-8 and DIR/cards-16 are complete sweeps (sweep.csv, report.md,
#   plots), and each sweep.csv equals, row for row, the one of
#   `ocsim sweep --cards N` run alone (a single --cards N is today's sweep);
# - each row of scaling.csv holds its count's chosen layout: the first row
#   of cards-N/sweep.csv, with its tokens/s, MFU and step time;
# - the arithmetic: tokens/s per card = tokens/s / N; scaling efficiency =
#   (tokens/s per card) / (the same at 8 cards), 1 at 8;
# - scaling.md, scaling.gp and scaling.dat exist; the confidence columns are
#   fractions in [0, 1], and the best-in share is at most the within-2% one;
# - the confidence section: the same for the same seed, another for another
#   seed, none with --robustness 0;
# - a list is refused by `ocsim layouts` (one line, exit 2).
# usage: sweep_scaling.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C
# every knob but tp, pp, dp, the micro-batch and the schedule fixed (the
# space of the sweep before issue 12's knob search), so the per-count
# sweeps stay small; tests/sweep_prune.sh holds the full space
common=(--model gpt3-1.3b --global-batch 64 --jobs 2 "${knobs_fixed[@]}"
        --schedule 1f1b,interleaved:2)

expect 0 'scaling \(' "$ocsim" sweep "${common[@]}" --cards 16,8 --out "$tmp/s"
for n in 8 16; do
  for f in sweep.csv report.md throughput.gp; do
    [ -s "$tmp/s/cards-$n/$f" ] && ok || bad "cards-$n/$f missing"
  done
  "$ocsim" sweep "${common[@]}" --cards "$n" --out "$tmp/one-$n" >/dev/null 2>&1
  cmp -s "$tmp/one-$n/sweep.csv" "$tmp/s/cards-$n/sweep.csv" && ok ||
    bad "cards-$n/sweep.csv differs from the single sweep's"
done
for f in scaling.csv scaling.md scaling.gp scaling.dat; do
  [ -s "$tmp/s/$f" ] && ok || bad "$f missing"
done

# sweep.csv columns: 1 tp 2 pp 3 dp 4 micro_batch 6 schedule 7 vchunks
# 9 step_time_s 10 tokens_per_s 12 mfu
first() {
  awk -F, 'NR == 2 { s = "tp" $1 "-pp" $2 "-dp" $3 "-mb" $4
                     print s ($6 == "interleaved" ? "-v" $7 : "-" $6), $10, $12, $9 }' "$1"
}
# scaling.csv: 1 cards 2 layout 3 tokens_per_s 4 per gpu 5 mfu 6 step
# 7 efficiency 8 base_cards 11 confidence_best 12 confidence_within_2pct
row() { awk -F, -v n="$1" '!/^#/ && $1 == n { print $2, $3, $5, $6 }' "$tmp/s/scaling.csv"; }
for n in 8 16; do
  want=$(first "$tmp/s/cards-$n/sweep.csv")
  got=$(row "$n")
  # the label may carry knobs the sweep.csv columns do not: compare the
  # numbers exactly and the label's start
  read -r wl wt wm ws <<<"$want"
  read -r gl gt gm gs <<<"$got"
  [ "$wt $wm $ws" = "$gt $gm $gs" ] && ok || bad "cards $n: scaling row '$got', sweep's first row '$want'"
  case "$gl" in "$wl"*) ok ;; *) bad "cards $n: layout $gl is not $wl" ;; esac
done
awk -F, '
  /^#/ || $1 == "cards" { next }
  { n = $1; t = $3; pg = $4; e = $7
    if ($8 != 8) { printf "cards %d: base %s, not 8\n", n, $8; bad++ }
    if (n == 8) base = t / 8
    if (pg - t / n > 1e-6 * pg || t / n - pg > 1e-6 * pg) { printf "cards %d: per card %s, not %s / %d\n", n, pg, t, n; bad++ }
    want = (t / n) / base
    if (e - want > 1e-6 || want - e > 1e-6) { printf "cards %d: efficiency %s, want %.9g\n", n, e, want; bad++ }
    if (n == 8 && e != 1) { printf "efficiency at the base is %s\n", e; bad++ }
    if (!($11 >= 0 && $11 <= $12 && $12 <= 1)) { printf "cards %d: confidence %s %s\n", n, $11, $12; bad++ }
    rows++ }
  END { if (rows != 2) { printf "%d rows\n", rows; bad++ }; exit bad > 0 }' "$tmp/s/scaling.csv" \
  >"$tmp/arith" && ok || bad "scaling.csv arithmetic: $(head -3 "$tmp/arith")"
grep -q '^| 16 | `' "$tmp/s/scaling.md" && ok || bad "scaling.md lacks the 16-card row"

# the confidence of the choice: the same with the same seed (the list's
# 16-card sweep and the single one), another with another seed
conf() { sed -n '/^## Confidence of the choice/,/^## /p' "$1"; }
[ -n "$(conf "$tmp/s/cards-16/report.md")" ] && ok || bad "cards-16/report.md lacks its confidence"
[ "$(conf "$tmp/s/cards-16/report.md")" = "$(conf "$tmp/one-16/report.md")" ] && ok ||
  bad "the confidence differs between two runs of one seed"
"$ocsim" sweep "${common[@]}" --cards 16 --seed 99 --out "$tmp/seed" >"$tmp/seed.out" 2>/dev/null
grep -q '^confidence: .*seed 99)$' "$tmp/seed.out" && ok || bad "no confidence line with seed 99"
[ "$(conf "$tmp/seed/report.md")" != "$(conf "$tmp/one-16/report.md")" ] && ok ||
  bad "seeds 1234 and 99 gave the same confidence"
"$ocsim" sweep "${common[@]}" --cards 16 --robustness 0 --out "$tmp/off" >"$tmp/off.out" 2>/dev/null
! grep -q '^confidence:' "$tmp/off.out" && [ -z "$(conf "$tmp/off/report.md")" ] && ok ||
  bad "--robustness 0 still reports a confidence"

expect 2 '--cards takes one number of GPUs here' "$ocsim" layouts --cards 8,16 --model gpt3-1.3b

summary sweep_scaling
