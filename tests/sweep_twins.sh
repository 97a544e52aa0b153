#!/usr/bin/env bash
# sweep_twins.sh: forced-collective variants that share their auto
# variant's result (tools/sweep_twins.h) give the sweep the simulation
# would have given, bit for bit. The same sweeps with and without the
# sharing (OCSIM_TEST_NO_TWINS=1 simulates every variant) must write
# byte-identical sweep.csv files; the summary must say that some results
# were shared (else the test would hold nothing), and not all of them (on
# two nodes, the forced tree runs where the automatic choice takes the
# ring: those are simulated, in the second pass).
#
# The space: gpt3-1.3b on 16 cards (2 nodes of h100-100g), every knob but
# tp, pp, dp and the collective algorithm fixed, one micro-batch size;
# --no-prune (every forced variant asked while its auto one is in flight
# or done) and the pruned sweep (the N-th best moving while variants wait).
# usage: sweep_twins.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C

space=(--model gpt3-1.3b --cards 16 --recompute selective --sequence-parallel
  --use-distributed-optimizer --overlap-grad-reduce --rank-order tp-dp-pp --cp 1
  --schedule 1f1b --micro-batches 1 --jobs 2)
for mode in no-prune prune; do
  extra=()
  [ "$mode" = no-prune ] && extra=(--no-prune)
  expect 0 'report: ' "$ocsim" sweep "${space[@]}" "${extra[@]}" --out "$tmp/$mode-share"
  cp "$tmp/out" "$tmp/$mode-share.out"
  OCSIM_TEST_NO_TWINS=1 expect 0 'report: ' "$ocsim" sweep "${space[@]}" "${extra[@]}" \
    --out "$tmp/$mode-all"
  cp "$tmp/out" "$tmp/$mode-all.out"
  cmp -s "$tmp/$mode-share/sweep.csv" "$tmp/$mode-all/sweep.csv" && ok \
    || bad "$mode: sweep.csv differs with shared results: $(diff "$tmp/$mode-share/sweep.csv" "$tmp/$mode-all/sweep.csv" | head -4)"
  shared=$(sed -n 's/.* \([0-9]*\) shared by identical collective variants$/\1/p' "$tmp/$mode-share.out")
  forced=$(grep -c -- '-coll=' "$tmp/$mode-share/sweep.csv")
  [ -n "$shared" ] && [ "$shared" -gt 0 ] && ok || bad "$mode: nothing shared (${shared:-no count})"
  [ -n "$shared" ] && [ "$shared" -lt "$forced" ] && ok \
    || bad "$mode: all $forced forced variants shared: the second pass is not exercised"
  grep -q ' 0 shared by identical collective variants$' "$tmp/$mode-all.out" && ok \
    || bad "$mode: OCSIM_TEST_NO_TWINS=1 still shared"
  # the summaries agree but for the shared count
  diff <(grep 'layouts:' "$tmp/$mode-share.out" | sed 's/, [0-9]* shared.*//;s/ in [0-9.]* s / /') \
    <(grep 'layouts:' "$tmp/$mode-all.out" | sed 's/, [0-9]* shared.*//;s/ in [0-9.]* s / /') >/dev/null \
    && ok || bad "$mode: summaries differ"
done
summary sweep_twins
