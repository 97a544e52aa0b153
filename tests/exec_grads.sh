#!/usr/bin/env bash
# exec_grads.sh: the executor's gradients before the optimizer (cpu
# backend, tiny model, fp32), through mpirun. exec_equivalence.sh holds
# losses and final weights against the one-process run, but AdamW divides
# each gradient by its own running RMS, so the weights hide a gradient's
# scale: a gradient summed over DP instead of averaged passed there by a
# hair. Here the test hook OCSIM_EXEC_TEST_GRADS=1 (exec/main.c) makes
# weights.bin hold step 1's gradients as AdamW took them (after the DP
# all-reduce, the tied embedding's all-reduce and under sequence
# parallelism the TP sum of the norms' gradients), and every layout's are
# held against the one-process run's at 1e-6 over the whole model.
#
# By hand: the loss is the mean over the G*s = 8*32 tokens of the step
# (gpt.h, "Gradients"), so every layout's step-1 gradient is the same
# vector up to the order of the sums (fp32 rounding, ~1e-7 relative); a
# gradient summed over d replicas instead of averaged is d times the
# reference, off by (d - 1) = 1 and more relative, six orders above the
# tolerance. And at initialisation the logits are near 0 (weights of
# std 0.02), so step 1's loss is near ln V = ln 512 = 6.2383 (uniform
# prediction over the vocabulary): within 1 %, which a loss averaged over
# the wrong token count (a DP replica's instead of the global batch's,
# or twice as many) misses by 50 % or more.
#
# Per tensor the tolerance is loose (1e-2, as exec_equivalence.sh's):
# the attention key bias's exact gradient is 0 (softmax ignores it), so
# its computed one is rounding noise that differs between layouts.
# Also: the hook is refused under ZeRO-1 with DP > 1 (a rank holds only
# its slices' reduced gradient); a run without the hook writes weights,
# not gradients.
# usage: exec_grads.sh path/to/ocsim-exec path/to/ocsim-weights-diff [mpirun]
set -u
exe=$1
wdiff=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap '[ -n "${OCSIM_TEST_KEEP:-}" ] || rm -rf "$tmp"' EXIT
common=(--model tiny --global-batch 8 --seq 32 --steps 1 --timeout 60)
loss_tol=1e-5
# run, ok, bad and the environment of the runs
. "$(dirname "$0")/exec_common.sh"
export OCSIM_EXEC_TEST_GRADS=1

if ! run ref 1 --layout tp1-pp1-dp1-nosp; then
  bad "reference run: $(tail -5 "$tmp/ref.log")"
  echo "exec_grads: $pass passed, $fail failed"
  exit 1
fi
awk -F, 'NR == 2 { d = $2 / log(512) - 1; printf "  step 1 loss %.6f, ln 512 = %.6f\n", $2, log(512);
                   exit !(d < 0.01 && d > -0.01) }' "$tmp/ref/loss.csv" >"$tmp/lnv" && ok ||
  bad "step 1's loss is not ln 512 within 1 %: $(cat "$tmp/lnv")"

# grads NAME NP ARGS...: the run's gradients within 1e-6 of the reference's
grads() {
  local name=$1
  if ! run "$@"; then
    bad "$name: $(tail -5 "$tmp/$name.log")"
    return
  fi
  if "$wdiff" --tol 1e-6 --tensor-tol 1e-2 "$tmp/$name/weights.bin" "$tmp/ref/weights.bin" \
       >"$tmp/$name.wd" 2>&1; then
    ok
  else
    bad "$name: gradients differ from the one-process run's: $(cat "$tmp/$name.wd")"
  fi
}
# DP alone, all-reduce in one bucket and per chunk (overlap), with TP and
# PP, sequence parallelism, interleaving, two micro-batches per replica
grads dp2 2 --layout tp1-pp1-dp2-nosp-nozero
grads dp2-nooverlap 2 --layout tp1-pp1-dp2-nosp-nozero --no-overlap-grad-reduce
grads dp4-mb2 4 --layout tp1-pp1-dp4-nosp-nozero-mb2
grads tp2-pp2-dp2 8 --layout tp2-pp2-dp2-nosp-nozero
grads tp2-pp2-dp2-sp 8 --layout tp2-pp2-dp2-sp-nozero
grads tp1-pp2-dp4-v2 8 --layout tp1-pp2-dp4-nosp-v2-nozero
grads tp2-pp4-dp1-sp-v2 8 --layout tp2-pp4-dp1-sp-v2

# Without the hook the file holds weights: not the gradients
OCSIM_EXEC_TEST_GRADS= run weights 1 --layout tp1-pp1-dp1-nosp &&
  ! "$wdiff" --tol 1e-2 "$tmp/weights/weights.bin" "$tmp/ref/weights.bin" >/dev/null 2>&1 &&
  ok || bad "without OCSIM_EXEC_TEST_GRADS weights.bin is not the weights"
# ZeRO-1 over DP 2: refused, one line
run zero 2 --layout tp1-pp1-dp2-nosp-zero1
rc=$?
[ "$rc" -eq 2 ] && grep -q 'OCSIM_EXEC_TEST_GRADS: not under ZeRO-1 with DP 2' "$tmp/zero.log" &&
  ok || bad "the hook under ZeRO-1: exit $rc: $(grep ocsim-exec "$tmp/zero.log" | head -2)"

echo "exec_grads: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
