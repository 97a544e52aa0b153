#!/usr/bin/env bash
# exec_checkpoint.sh: ocsim-exec's checkpoints (exec/ckpt.h) through mpirun
# on the cpu backend, tiny model, tp2-pp2-dp2 (ZeRO-1: each DP rank's shard
# holds half of every tensor's Adam moments):
# - exact resume: 5 steps + save, then --load + 5 steps give the straight
#   10-step run's weights.bin bitwise (so every step's numbers were the
#   same: the weights after step 10 depend on all of them) and loss.csv's
#   rows 6..10 as written;
# - resharding: the same checkpoint loaded under tp1-pp4-dp2 and
#   tp4-pp1-dp2: steps 6..10 within 1e-6 (relative) of the straight run,
#   weights as exec_equivalence.sh's checks;
# - refusals before the first step, one ocsim-exec line and exit 2: a
#   missing, extra, reordered, truncated and corrupted shard, another model,
#   another precision (a manifest saying bf16 GEMMs, as the cuda backend's),
#   a folder without a manifest (a save that crashed);
# - crash mid-save: a rank killed halfway through its shard of the second
#   save; DIR/latest still names the first, which loads and resumes
#   exactly (under another --seed: the checkpoint's data seed is used);
#   --save-keep 1 then leaves only the newest.
# usage: exec_checkpoint.sh path/to/ocsim-exec path/to/ocsim-weights-diff [mpirun]
set -u
exe=$1
wdiff=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
common=(--model tiny --global-batch 8 --seq 32 --timeout 60)
loss_tol=1e-6
. "$here/exec_common.sh"
L=tp2-pp2-dp2

run ref 8 --layout $L --steps 10 || bad "straight run: $(tail -5 "$tmp/ref.log")"
run first 8 --layout $L --steps 5 --save "$tmp/ck" --save-every 5 ||
  bad "first 5 steps: $(tail -5 "$tmp/first.log")"
ck=$tmp/ck/step-000005
if [ "$(cat "$tmp/ck/latest")" = step-000005 ] && [ -f "$ck/manifest.json" ] &&
   [ "$(ls "$ck" | grep -c '^shard-tp[0-9]-pp[0-9]-dp[0-9]-c[0-9]-r0000[0-7]\.bin$')" -eq 8 ] &&
   [ "$(grep -c '^checkpoint: saved' "$tmp/first.log")" -eq 1 ]; then
  ok
else
  bad "the checkpoint's files: $(ls -a "$tmp/ck" "$ck" 2>&1 | tr '\n' ' ')"
fi

# Exact resume on the same layout.
if run resume 8 --layout $L --steps 5 --load "$tmp/ck" &&
   cmp -s "$tmp/ref/weights.bin" "$tmp/resume/weights.bin" &&
   [ "$(sed -n '7,11p' "$tmp/ref/loss.csv")" = "$(sed -n '2,6p' "$tmp/resume/loss.csv")" ] &&
   grep -q "^checkpoint: loaded $ck (step 5, 8 shards" "$tmp/resume.log"; then
  ok
else
  bad "exact resume: $(tail -3 "$tmp/resume.log"; cat "$tmp/resume/loss.csv" 2>/dev/null | tr '\n' ' ')"
fi

# Resharded: the straight run's steps 6..10 within loss_tol.
sed -n '1p;7,11p' "$tmp/ref/loss.csv" >"$tmp/ref6.csv"
for to in tp1-pp4-dp2 tp4-pp1-dp2; do
  why=""
  run "$to" 8 --layout $to --steps 5 --load "$ck" || why="exit $?: $(tail -3 "$tmp/$to.log")"
  mkdir -p "$tmp/ref6" && cp "$tmp/ref6.csv" "$tmp/ref6/loss.csv"
  [ -z "$why" ] && { same_losses "$tmp/ref6" "$tmp/$to" "$loss_tol" >"$tmp/$to.cmp" ||
    why="losses: $(cat "$tmp/$to.cmp")"; }
  [ -z "$why" ] && { "$wdiff" --tol 1e-5 --tensor-tol 1e-2 "$tmp/$to/weights.bin" \
    "$tmp/ref/weights.bin" >"$tmp/$to.wd" 2>&1 || why="weights: $(cat "$tmp/$to.wd")"; }
  grep -q "resharded from $L-mb1-1f1b to $to-mb1-1f1b" "$tmp/$to.log" || why="$why (no reshard line)"
  [ -z "$why" ] && ok || bad "reshard into $to: $why"
done

# Refusals: a broken copy of the checkpoint, loaded by one rank (it checks
# every shard); one line, exit 2, no step run.
refuse() {
  local name=$1 pattern=$2 break_it=$3
  shift 3
  rm -rf "$tmp/bad"
  cp -r "$ck" "$tmp/bad"
  (cd "$tmp/bad" && eval "$break_it")
  run "$name" 1 --layout tp1-pp1-dp1 --steps 1 --load "$tmp/bad" "$@"
  local rc=$? lines
  lines=$(grep -c '^ocsim-exec:' "$tmp/$name.log")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -Eq "^ocsim-exec: $pattern" "$tmp/$name.log" &&
     [ ! -e "$tmp/$name/loss.csv" ]; then
    ok
  else
    bad "$name: exit $rc, $lines ocsim-exec lines: $(grep '^ocsim-exec' "$tmp/$name.log" | head -3)"
  fi
}
s1=shard-tp1-pp0-dp0-c0-r00001.bin
s6=shard-tp0-pp1-dp1-c1-r00006.bin
refuse missing "checkpoint .*/bad: missing shard $s1 \(the manifest lists 8\)" "rm $s1"
refuse extra "checkpoint .*/bad: extra shard shard-tp1-pp0-dp0-c0-r00009.bin" \
  "cp $s1 shard-tp1-pp0-dp0-c0-r00009.bin"
refuse reordered "checkpoint .*/bad: reordered shard: shard-tp0-pp0-dp0-c0-r00000.bin holds the shard of rank 6 \(tp0 pp1 dp1" \
  "mv $s6 x; mv shard-tp0-pp0-dp0-c0-r00000.bin $s6; mv x shard-tp0-pp0-dp0-c0-r00000.bin"
refuse truncated "checkpoint .*/bad: truncated shard $s6: [0-9]+ bytes, the manifest says" \
  "truncate -s -100 $s6"
refuse corrupted "checkpoint .*/bad: corrupted shard $s6: SHA-256 [0-9a-f]{16}\.\.\., the manifest" \
  "printf '\\001' | dd of=$s6 bs=1 seek=500000 conv=notrunc 2>/dev/null"
# (another --model than common's would be refused as two values of a flag)
common=(--model llama-tiny --global-batch 8 --seq 32 --timeout 60)
refuse model "checkpoint .*/bad: another model: it holds 'tiny' \(config sha256 [0-9a-f]{12}\), this run is 'llama-tiny'" \
  ":"
common=(--model tiny --global-batch 8 --seq 32 --timeout 60)
refuse precision "checkpoint .*/bad: another precision: it was saved by a fp32 run with bf16 GEMMs, this run is fp32 with fp32 GEMMs" \
  "sed -i 's/\"gemm\": \"fp32\"/\"gemm\": \"bf16\"/' manifest.json"

# Crash mid-save: rank 3 dies halfway through its shard of the save after
# step 4; mpirun ends the job. latest names step 2's, which resumes exactly.
OCSIM_EXEC_TEST_DIE_SAVE_RANK=3 OCSIM_EXEC_TEST_DIE_SAVE_STEP=4 \
  run crash 8 --layout $L --steps 4 --save "$tmp/cr" --save-every 2
rc=$?
if [ "$rc" -ne 0 ] && [ "$(cat "$tmp/cr/latest")" = step-000002 ] &&
   [ ! -e "$tmp/cr/step-000004" ] && [ -d "$tmp/cr/step-000004.partial" ]; then
  ok
else
  bad "crash mid-save: exit $rc, $(ls "$tmp/cr" 2>&1 | tr '\n' ' ')"
fi
# the crashed save's folder, named: no manifest
rm -rf "$tmp/bad"
cp -r "$tmp/cr/step-000004.partial" "$tmp/bad"
run partial 1 --layout tp1-pp1-dp1 --steps 1 --load "$tmp/bad"
[ $? -eq 2 ] && grep -q "^ocsim-exec: --load .*/bad: no manifest.json there" "$tmp/partial.log" &&
  ok || bad "a crashed save's folder: $(grep '^ocsim-exec' "$tmp/partial.log")"
# (--seed 7: the data position is the checkpoint's, seed included)
if run after-crash 8 --layout $L --steps 2 --load "$tmp/cr" --save "$tmp/cr" --save-every 1 \
     --save-keep 1 --seed 7 &&
   grep -q "^checkpoint: loaded $tmp/cr/step-000002 (step 2" "$tmp/after-crash.log" &&
   [ "$(sed -n '4,5p' "$tmp/ref/loss.csv")" = "$(sed -n '2,3p' "$tmp/after-crash/loss.csv")" ] &&
   [ "$(cd "$tmp/cr" && ls -d step-*)" = step-000004 ]; then
  ok
else
  bad "resume after the crash: $(grep -E '^(ocsim-exec|checkpoint)' "$tmp/after-crash.log" | head -3) $(ls "$tmp/cr" | tr '\n' ' ')"
fi

echo "exec_checkpoint: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
