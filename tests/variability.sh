#!/usr/bin/env bash
# variability.sh: `ocsim simulate --variability` as a user meets it: the
# files and their rows, CV 0 equal to today's replay without the fold, one
# slow replica against its closed form, the same numbers from the same
# seed and others from another (about a second: tiny model, 4 to 8 cards).
# usage: variability.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

base=(simulate --model tiny --cards 4 --layout tp1-pp1-dp4 --no-overlap-grad-reduce
      --global-batch 64 --seq 128)

# Today's step (fast, every micro-batch) and its compute per rank.
expect 0 'step time' "$ocsim" "${base[@]}" --no-steady-fold --out "$tmp/plain"
col() { # col FILE NAME: NAME's value in the first data row
  awk -F, -v n="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$1"
}
step=$(col "$tmp/plain/simulate.csv" step_time_s)
compute=$(col "$tmp/plain/simulate.csv" compute_s)

# CV 0: every step and the ideal are today's step (9 digits in both CSVs).
expect 0 'mean step .* \+0\.00% against the ideal' "$ocsim" "${base[@]}" \
  --variability compute=0,link=0 --steps 3 --out "$tmp/zero"
if [ "$(col "$tmp/zero/variability_summary.csv" ideal_s)" = "$step" ] &&
   [ "$(awk -F, 'NR>1{print $2}' "$tmp/zero/variability.csv" | sort -u)" = "$step" ]; then ok
else bad "CV 0: steps $(cat "$tmp/zero/variability.csv") vs today's $step"; fi
[ "$(awk 'END{print NR}' "$tmp/zero/variability.csv")" = 4 ] && ok || bad "3 steps: not 3 rows"
grep -q 'symmetric mode and the steady-state' "$tmp/out" && ok || bad "no fidelity note"

# One of 4 devices 3x slower: step = today + 2 x compute (1e-6).
expect 0 '1 of 4 devices 3x slower' "$ocsim" "${base[@]}" \
  --variability slow=0.25,slowdown=3 --steps 2 --out "$tmp/slow"
mean=$(col "$tmp/slow/variability_summary.csv" mean_s)
awk -v m="$mean" -v s="$step" -v c="$compute" \
  'BEGIN{e=s+2*c; exit !((m-e)^2 <= (1e-6*e)^2)}' && ok ||
  bad "one slow replica: mean $mean, expected $step + 2 x $compute"

# Seeded: the same seed the same bytes, another seed other numbers.
spec=compute=0.1,slow=0.125,slowdown=1.5,link=0.2
big=(simulate --model tiny --cards 8 --layout tp2-pp2-dp2 --global-batch 64 --seq 128)
expect 0 'p99 step' "$ocsim" "${big[@]}" --variability $spec --steps 5 --seed 7 --out "$tmp/a"
expect 0 'p99 step' "$ocsim" "${big[@]}" --variability $spec --steps 5 --seed 7 --out "$tmp/b"
expect 0 'p99 step' "$ocsim" "${big[@]}" --variability $spec --steps 5 --seed 8 --out "$tmp/c"
cmp -s "$tmp/a/variability.csv" "$tmp/b/variability.csv" && ok || bad "seed 7 twice differs"
cmp -s "$tmp/a/variability.csv" "$tmp/c/variability.csv" && bad "seeds 7 and 8 agree" || ok

summary variability
