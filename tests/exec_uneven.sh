#!/usr/bin/env bash
# exec_uneven.sh: uneven pipeline stages (first<N>/last<N>, core/placement.h)
# on the cpu executor through mpirun, tiny model (8 layers, fp32). Every
# layout must give the one-process run's numbers, as exec_equivalence.sh
# holds the even splits: each step's loss within 1e-5 relative of
# tp1-pp1-dp1's, the final weights within 1e-5 over the model and 1e-2 per
# tensor, every replica bitwise equal. The splits (layers per stage):
#   tp1-pp2-dp1-first3-last5         3, 5
#   tp1-pp4-dp1-first1-last3         1, 2, 2, 3 (the middle split the other 4)
#   tp1-pp3-dp1-first2               2, 3, 3 (the last stage is a middle one)
#   tp2-pp2-dp2-first2-last6         2, 6 with TP and DP (ZeRO-1)
#   tp1-pp2-dp1-v2-first2-last6      interleaved: 1 + 1 layers on stage 0's
#                                    two chunks, 3 + 3 on stage 1's
#   tp1-pp2-dp1-gpipe-first5-last3   5, 3 under GPipe
# The ops of stage 1 of first1-last3 run layers 1 and 2 only (ops.csv); a
# checkpoint saved on one split resumes on another;
# and a split the layers cannot make is refused with one line before any
# work.
# usage: exec_uneven.sh path/to/ocsim-exec path/to/ocsim-weights-diff [mpirun]
set -u
exe=$1
wdiff=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=(--model tiny --global-batch 8 --seq 32 --timeout 60)
common=("${base[@]}" --steps 3)
loss_tol=1e-5
. "$(dirname "$0")/exec_common.sh"

if ! run ref 1 --layout tp1-pp1-dp1-nosp; then
  bad "reference run: $(tail -5 "$tmp/ref.log")"
  echo "exec_uneven: $pass passed, $fail failed"
  exit 1
fi

check pp2-3-5 2 --layout tp1-pp2-dp1-nosp-first3-last5
check pp4-1-2-2-3 4 --layout tp1-pp4-dp1-nosp-first1-last3
check pp3-2-3-3 3 --layout tp1-pp3-dp1-nosp-first2
check tp2-pp2-dp2-2-6 8 --layout tp2-pp2-dp2-nosp-first2-last6
check v2-2-6 2 --layout tp1-pp2-dp1-nosp-v2-first2-last6
check gpipe-5-3 2 --layout tp1-pp2-dp1-nosp-gpipe-first5-last3

# The stages really hold what placement says: the layer ops of rank 1 of
# tp1-pp4-dp1-first1-last3 (stage 1) run layers 1 and 2 only.
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "layer_first") c = i; next }
               $1 == 1 && c && $c >= 0 { s[$c] = 1 }
               END { for (k in s) print k }' "$tmp/pp4-1-2-2-3/ops.csv" 2>/dev/null |
      sort -n | tr '\n' ' ')
[ "$got" = "1 2 " ] && ok || bad "stage 1 of first1-last3 ran layers '$got', expected '1 2 '"

# A checkpoint moves between splits: 2 steps on first3-last5 saved, then
# step 3 on first1-last3 from it gives the reference's step 3.
common=("${base[@]}")
if run ck-save 2 --layout tp1-pp2-dp1-nosp-first3-last5 --steps 2 --save "$tmp/ckpt" &&
   run ck-load 4 --layout tp1-pp4-dp1-nosp-first1-last3 --steps 1 --load "$tmp/ckpt"; then
  awk -F, 'NR == FNR { if ($1 == 3) r = $2; next }
           FNR == 2 { d = ($2 - r) / r; if (d < 0) d = -d; exit !($1 == 3 && d <= 1e-5) }' \
    "$tmp/ref/loss.csv" "$tmp/ck-load/loss.csv" && ok ||
    bad "checkpoint across splits: step 3 $(tail -1 "$tmp/ck-load/loss.csv") vs the reference's"
else
  bad "checkpoint across splits: $(tail -3 "$tmp/ck-save.log" "$tmp/ck-load.log")"
fi
common=("${base[@]}" --steps 3)

# A split the layers cannot make: one line, exit 2, nothing written.
refused rest '^ocsim-exec: .*the 5 layers left by first1 and last2 do not split evenly' 4 \
  --layout tp1-pp4-dp1-nosp-first1-last2

echo "exec_uneven: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
