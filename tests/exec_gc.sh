#!/usr/bin/env bash
# exec_gc.sh: the compressed DP gradient exchange of ocsim-exec (cpu
# backend, exec/runner_gc.c; core/compress.h) through mpirun on the tiny
# model:
# - d = 1 has no exchange: tp1-pp1-dp1-gc=topk0.1 and -gc=q1 give bitwise
#   the uncompressed run's losses and weights;
# - gc=topk1 (every element kept) at dp2 is bitwise the uncompressed dp2
#   run (0 + a + b is a + b: the all-reduce's sum of two ranks);
# - gc=topk0.1, gc=q1 and gc=q8 at dp2 over 12 steps: every loss finite,
#   the loss falls (the mean of the last 3 steps below the first step's),
#   and each step within 3 % of the uncompressed run's (compression costs
#   convergence, but at this size a few steps stay close); every DP
#   replica bitwise equal (each rank decodes the same gathered buffer);
# - the same across pipeline stages with the tied embedding
#   (tp1-pp2-dp2-gc=topk0.1) and under tensor and sequence parallelism
#   (tp2-pp1-dp2-sp-gc=q1: the tensors every TP rank holds whole stay
#   bitwise equal only through the runner's TP mean after the unpack);
# - `ocsim simulate` of the same layout and `ocsim compare` pair the two
#   op by op (the compression kernels and the compressed collective are
#   ops of both lists) and exit 0 or 1 (not 2, bad input). Whether the
#   step time is within the cpu tolerance (15 %, docs/validation-cpu.md)
#   depends on a calibration on an idle machine: tools/compress-loss.sh
#   measures it, docs/guide.md has the result; this test does not time;
# - refused with one line: local SGD (sync4), PowerSGD (gc=psgd2), --save
#   with compression.
# usage: exec_gc.sh path/to/ocsim path/to/ocsim-exec [mpirun]
set -u
ocsim=$1
exe=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--model tiny --global-batch 8 --seq 32 --steps 12 --timeout 60)
# run, refused, ok, bad; the environment of the runs.
. "$(dirname "$0")/exec_common.sh"

bitwise() { # bitwise NAME REF: the same loss.csv and weights.bin
  if cmp -s "$tmp/$1/loss.csv" "$tmp/$2/loss.csv" &&
     cmp -s "$tmp/$1/weights.bin" "$tmp/$2/weights.bin"; then
    ok
  else
    bad "$1: not bitwise $2's numbers: $(tail -3 "$tmp/$1.log")"
  fi
}

# trains NAME REF: finite losses that fall, each within 3 % of REF's, and
# every replica bitwise equal
trains() {
  local name=$1 ref=$2
  awk -F, 'NR > 1 { n++; l[n] = $2; if ($2 !~ /^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) bad = 1 }
           END { if (n < 4 || bad) exit 1; m = (l[n] + l[n-1] + l[n-2]) / 3; exit !(m < l[1]) }' \
    "$tmp/$name/loss.csv" && ok || bad "$name: losses not finite or not falling: $(tr '\n' ' ' <"$tmp/$name/loss.csv")"
  same_losses "$tmp/$ref" "$tmp/$name" 0.03 >"$tmp/$name.cmp" && ok ||
    bad "$name: losses beyond 3 % of $ref's: $(cat "$tmp/$name.cmp")"
  grep -q '^replicas: every DP replica' "$tmp/$name.log" && ok ||
    bad "$name: replicas differ: $(grep -i warning "$tmp/$name.log")"
}

started() { # started NAME NP ARGS...: the run exits 0
  local name=$1
  if run "$@"; then
    return 0
  fi
  bad "$name: exit $?: $(tail -5 "$tmp/$name.log")"
  return 1
}

# d = 1: no exchange.
if started ref1 1 --layout tp1-pp1-dp1; then
  for g in topk0.1 q1; do
    started "d1-$g" 1 --layout "tp1-pp1-dp1-gc=$g" && bitwise "d1-$g" ref1
  done
fi

# dp2: the uncompressed reference, topk1 bitwise, the compressed runs close.
if started ref2 2 --layout tp1-pp1-dp2; then
  started topk1 2 --layout tp1-pp1-dp2-gc=topk1 && bitwise topk1 ref2
  for g in topk0.1 q1 q8; do
    started "$g" 2 --layout "tp1-pp1-dp2-gc=$g" && trains "$g" ref2
  done
  grep -q 'tp1-pp1-dp2-mb1-1f1b-gc=topk0.1 on 2' "$tmp/topk0.1.log" && ok ||
    bad "the run does not name its layout: $(head -1 "$tmp/topk0.1.log")"
fi

# pipeline stages with the tied embedding; TP with sequence parallelism
if started ref-pp 4 --layout tp1-pp2-dp2; then
  started pp-topk 4 --layout tp1-pp2-dp2-gc=topk0.1 && trains pp-topk ref-pp
fi
if started ref-tp 4 --layout tp2-pp1-dp2-sp; then
  started tp-q1 4 --layout tp2-pp1-dp2-sp-gc=q1 && trains tp-q1 ref-tp
fi

# ocsim compare pairs the prediction with the measurement op by op.
for g in topk0.1 q1; do
  [ -d "$tmp/$g" ] || continue
  if "$ocsim" simulate --cards 2 --model tiny --global-batch 8 --seq 32 --fp32 \
       --fidelity full --layout "tp1-pp1-dp2-gc=$g" --out "$tmp/sim-$g" \
       >"$tmp/sim-$g.log" 2>&1; then
    "$ocsim" compare "$tmp/sim-$g" "$tmp/$g" >"$tmp/cmp-$g.log" 2>&1
    rc=$?
    if { [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } &&
       grep -q '^pairing: by op' "$tmp/cmp-$g.log" && grep -q '^dp_s' "$tmp/cmp-$g.log"; then
      ok
    else
      bad "compare $g: exit $rc: $(grep -E '^(pairing|ocsim)' "$tmp/cmp-$g.log")"
    fi
    # the compressed collective's bytes, as both lists hold them
    want=$(awk -F, '$3 == "collective" && $4 == "bwd" && $12 == "dp" {print $11, $15; exit}' \
      "$tmp/sim-$g/ops.csv")
    got=$(awk -F, '$3 == "collective" && $4 == "bwd" && $12 == "dp" {print $11, $15; exit}' \
      "$tmp/$g/ops.csv")
    [ -n "$want" ] && [ "$want" = "$got" ] && ok ||
      bad "compare $g: the DP collective: predicted '$want', measured '$got'"
  else
    bad "simulate $g: $(tail -3 "$tmp/sim-$g.log")"
  fi
done
case "$(awk -F, '$3 == "collective" && $12 == "dp" && $4 == "bwd" {print $11, $15; exit}' \
        "$tmp/topk0.1/ops.csv" 2>/dev/null)" in
  # K = ceil(0.1 * 440960) = 44096 pairs of 8 bytes from each of 2 ranks
  "allgather 705536") ok ;;
  *) bad "topk0.1: the DP collective is not an all-gather of 705536 bytes" ;;
esac

refused sync 'does not run local SGD \(sync4\)' 2 --layout tp1-pp1-dp2-zero0-sync4
refused psgd 'does not run PowerSGD \(gc=psgd2\)' 2 --layout tp1-pp1-dp2-gc=psgd2
refused save 'checkpoints do not hold the error-feedback residuals' 2 \
  --layout tp1-pp1-dp2-gc=q1 --save "$tmp/ckpt"

echo "exec_gc: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
