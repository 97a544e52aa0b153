#!/usr/bin/env bash
# variability_sweep.sh: `ocsim sweep --variability` (issue 14 item 2): the
# best layouts re-run under the noise and ranked by mean tokens/s. CV 0
# gives back the sweep's own steps and order; one slow device in 8 on a
# pure-DP layout costs its closed form (the slowest replica sets the pace:
# ideal + (slowdown - 1) x compute); the rows are in order of mean
# tokens/s; same seed, same bytes; the flags' bad input. About 5 s (tiny
# model, 8 cards).
# usage: variability_sweep.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

base=(sweep --model tiny --cards 8 --global-batch 64 --seq 128 "${knobs_fixed[@]}")
col() { # col FILE NAME ROW: NAME's value in data row ROW (1-based)
  awk -F, -v n="$2" -v r="$3" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==r+1{print $c}' "$1"
}
# the sweep.csv row of a layout label: its column NAME
sweep_col() {
  awk -F, -v n="$2" -v l="$3" 'NR==1{for(i=1;i<=NF;i++){if($i==n) c=i; if($i=="layout") k=i}}
                               NR>1 && $k==l {print $c}' "$1"
}
close() { awk -v a="$1" -v b="$2" 'BEGIN{exit !((a-b)^2 <= (1e-6*b)^2)}'; }

# CV 0: the ideal and every sampled step are the sweep's step, the order
# the sweep's.
expect 0 'chosen under variability: .*the ideal choice too' "$ocsim" "${base[@]}" \
  --variability compute=0,link=0 --steps 2 --variability-top 3 --out "$tmp/zero"
v=$tmp/zero/variability.csv
[ "$(awk 'END{print NR}' "$v")" = 4 ] && ok || bad "top 3: not 3 rows: $(cat "$v")"
for r in 1 2 3; do
  l=$(col "$v" layout $r)
  s=$(sweep_col "$tmp/zero/sweep.csv" step_time_s "$l")
  [ "$(col "$v" ideal_rank $r)" = "$r" ] && ok || bad "CV 0: row $r has ideal rank $(col "$v" ideal_rank $r)"
  close "$(col "$v" ideal_step_s $r)" "$s" && ok || bad "CV 0: $l ideal $(col "$v" ideal_step_s $r) vs sweep $s"
  [ "$(col "$v" mean_step_s $r)" = "$(col "$v" ideal_step_s $r)" ] && [ "$(col "$v" loss_mean $r)" = 0 ] &&
    ok || bad "CV 0: $l mean $(col "$v" mean_step_s $r) vs ideal $(col "$v" ideal_step_s $r)"
done
grep -q '^## Under variability' "$tmp/zero/report.md" && ok || bad "report.md lacks the section"
if command -v gnuplot >/dev/null; then
  [ -s "$tmp/zero/variability.png" ] && ok || bad "no variability.png"
fi

# One slow device of 8, 3x, on tp1-pp1-dp8 without overlap: every step is
# the ideal + 2 x the compute per rank (the others wait for it at the DP
# reduction).
dp=(sweep --model tiny --cards 8 --global-batch 64 --seq 128 --core-knobs --tp 1 --pp 1
    --micro-batches 4 --schedule 1f1b --recompute selective --sequence-parallel
    --use-distributed-optimizer --no-overlap-grad-reduce --rank-order tp-dp-pp
    --collective auto --cp 1)
expect 0 'under variability' "$ocsim" "${dp[@]}" --variability slow=0.125,slowdown=3 \
  --steps 2 --variability-top 1 --out "$tmp/slow"
l=$(col "$tmp/slow/variability.csv" layout 1)
c=$(sweep_col "$tmp/slow/sweep.csv" compute_s "$l")
i=$(col "$tmp/slow/variability.csv" ideal_step_s 1)
m=$(col "$tmp/slow/variability.csv" mean_step_s 1)
close "$m" "$(awk -v i="$i" -v c="$c" 'BEGIN{printf "%.12g", i + 2 * c}')" && ok ||
  bad "one slow replica: mean $m, expected $i + 2 x $c"

# Noise: the rows by mean tokens/s, highest first; the same seed twice the
# same bytes.
spec=compute=0.2,slow=0.125,slowdown=1.5,link=0.2
expect 0 'under variability' "$ocsim" "${base[@]}" --variability $spec --steps 4 \
  --variability-top 4 --seed 7 --out "$tmp/a"
expect 0 'under variability' "$ocsim" "${base[@]}" --variability $spec --steps 4 \
  --variability-top 4 --seed 7 --out "$tmp/b"
awk -F, 'NR>2 && $10 > prev {exit 1} NR>1 {prev=$10}' "$tmp/a/variability.csv" && ok ||
  bad "rows not in order of mean tokens/s: $(cat "$tmp/a/variability.csv")"
cmp -s "$tmp/a/variability.csv" "$tmp/b/variability.csv" && ok || bad "seed 7 twice differs"

# Bad input: one line, exit 2.
expect 2 '--steps samples steps under --variability' "$ocsim" "${base[@]}" --steps 3 --out "$tmp/x"
expect 2 '--variability-top re-runs layouts under --variability' "$ocsim" "${base[@]}" \
  --variability-top 3 --out "$tmp/x"
expect 2 'variability-top' "$ocsim" "${base[@]}" --variability compute=0.1 \
  --variability-top 0 --out "$tmp/x"
expect 2 'give one card count' "$ocsim" sweep --model tiny --cards 4,8 --global-batch 64 \
  --seq 128 --variability compute=0.1 --out "$tmp/x"
expect 2 'compute' "$ocsim" "${base[@]}" --variability compute=-1 --out "$tmp/x"

summary variability_sweep
