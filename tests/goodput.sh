#!/usr/bin/env bash
# goodput.sh: `ocsim goodput` as a user meets it: the seeds' case (30 days,
# 17 failures, saves every 30 minutes), Young's and Daly's intervals worked
# by hand, the files it writes, the same numbers from the same seed, and a
# step time simulated when --step-time is not given.
# usage: goodput.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

seeds=(--model llama2-70b --cards 64 --layout tp8-pp4-dp2 --step-time 12s
       --days 30 --failures 17 --interval 30m)

# The seeds' case: MTBF 720 h / 17 = 42.4 h; 30 min of 12 s steps is 150.
expect 0 'MTBF 42\.4 h: 17 failures in 30 days' "$ocsim" goodput "${seeds[@]}" --out "$tmp/a"
expect 0 'asked interval 30\.0 min \(150 steps\): expected goodput' "$ocsim" goodput "${seeds[@]}" --out "$tmp/a"
expect 0 'checkpointing every .* instead of 30\.0 min' "$ocsim" goodput "${seeds[@]}" --out "$tmp/a"
# llama2-70b's 69.0 B parameters (models/llama2-70b.json) at 2 + 12 bytes
expect 0 'checkpoint +966 GB' "$ocsim" goodput "${seeds[@]}" --out "$tmp/a"
for f in goodput.csv trials.csv goodput.gp goodput.dat; do
  [ -s "$tmp/a/$f" ] && ok || bad "no $tmp/a/$f"
done
# one row per trial (1000) under the header
[ "$(wc -l <"$tmp/a/trials.csv")" -eq 1001 ] && ok || bad "trials.csv: $(wc -l <"$tmp/a/trials.csv") lines"
# the closed form is highest at the best interval of the curve
awk -F, 'NR > 1 { if ($3 > m) m = $3 } END { exit !(m > 0.98 && m < 1) }' "$tmp/a/goodput.csv" \
  && ok || bad "goodput.csv: no expected goodput in (0.98, 1)"

# Same seed, same numbers; another seed, other trials.
"$ocsim" goodput "${seeds[@]}" --out "$tmp/b" >"$tmp/b.out" 2>&1
"$ocsim" goodput "${seeds[@]}" --out "$tmp/c" >"$tmp/c.out" 2>&1
"$ocsim" goodput "${seeds[@]}" --seed 2 --out "$tmp/d" >/dev/null 2>&1
cmp -s "$tmp/b/trials.csv" "$tmp/c/trials.csv" && ok || bad "same seed, different trials.csv"
cmp -s "$tmp/b/goodput.csv" "$tmp/c/goodput.csv" && ok || bad "same seed, different goodput.csv"
diff -q <(sed "s#$tmp/b#X#g" "$tmp/b.out") <(sed "s#$tmp/c#X#g" "$tmp/c.out") >/dev/null \
  && ok || bad "same seed, different output"
cmp -s "$tmp/b/trials.csv" "$tmp/d/trials.csv" && bad "seed 2 gave seed 1's trials" || ok

# Hand-worked: save 60 s, M 24 h: Young sqrt(2 * 60 * 86400) = 3219.9 s =
# 53.7 min; Daly 3180.1 s = 53.0 min (tests/test_goodput.c).
expect 0 'Young 53\.7 min, Daly 53\.0 min' "$ocsim" goodput --model tiny --cards 2 \
  --layout tp1-pp1-dp2 --step-time 1s --mtbf 24h --save-time 60 --load-time 0 --out "$tmp/e"
# The default rate: Llama 3's, 1.97e-5 per GPU-hour; 64 GPUs: MTBF 792 h.
expect 0 'MTBF 792 h: 1\.97e-05 per GPU-hour x 64 GPUs \(Llama 3' "$ocsim" goodput \
  --model llama2-70b --cards 64 --layout tp8-pp4-dp2 --step-time 12s --out "$tmp/f"
# Per node-hour: 8 nodes x 1e-3 = MTBF 125 h.
expect 0 'MTBF 125 h: 0\.001 per node-hour x 8 nodes' "$ocsim" goodput \
  --model llama2-70b --cards 64 --layout tp8-pp4-dp2 --step-time 12s \
  --failure-rate 1e-3/node-hour --out "$tmp/g"
# Without --step-time the step is simulated (tiny, two GPUs: a second).
expect 0 'step time .*\(simulated\)' "$ocsim" goodput --model tiny --cards 2 \
  --layout tp1-pp1-dp2 --failures 3 --trials 50 --out "$tmp/h"
# ocsim-exec's measured saves (exec/ckpt_save.c's line): the mean of 850 ms
# and 1.15 s is 1.00 s.
cat >"$tmp/exec.log" <<'LOG'
step 1 loss 6.2
checkpoint: saved out/run/step-000010, 4 shards, 1.2 GB in 850 ms (0.708 s/GB)
checkpoint: saved out/run/step-000020, 4 shards, 1.2 GB in 1.15 s (0.958 s/GB)
LOG
expect 0 'save +1\.00 s \(--exec-log: mean of 2 saves\)' "$ocsim" goodput --model tiny --cards 2 \
  --layout tp1-pp1-dp2 --step-time 1s --exec-log "$tmp/exec.log" --out "$tmp/i"
expect 0 'usage: ocsim goodput' "$ocsim" goodput --help

summary goodput
