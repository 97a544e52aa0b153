#!/usr/bin/env bash
# defects.sh: the bad inputs of issue 11's defects 1, 3, 6, 7 and 8 as a
# user meets them, each under the bad-input contract: exit code 2, exactly
# one line on stderr holding the word that names the problem, nothing on
# stdout. Under the Asan build a sanitizer report is a second line (or
# another exit code), so each case also proves the input is handled, not
# crashed on.
# usage: defects.sh path/to/ocsim path/to/tests/data
set -u
ocsim=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

# refuse PATTERN command...: exit 2, one stderr line matching PATTERN (ERE),
# an empty stdout.
refuse() {
  local pattern=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ]; then
    bad "$* -> exit $rc, expected 2; stderr: $(head -c 400 "$tmp/err")"
  elif [ "$lines" -ne 1 ]; then
    bad "$* -> $lines stderr lines, expected 1: $(head -c 600 "$tmp/err")"
  elif [ -s "$tmp/out" ]; then
    bad "$* -> stdout not empty: $(head -c 200 "$tmp/out")"
  elif ! grep -Eq -- "$pattern" "$tmp/err"; then
    bad "$* -> stderr '$(cat "$tmp/err")' lacks /$pattern/"
  else
    ok
  fi
}

# ---- 1. every list parse is bounded ---------------------------------------
# 'all' adds three schedules: the bound was checked as n == 16 per entry.
refuse 'listed twice' "$ocsim" layouts --cards 8 --model tiny --schedule all,all,all,all,all,all
iv=$(seq -s, -f 'interleaved:%g' 3 16)
refuse 'at most 16 schedules' "$ocsim" layouts --cards 8 --model tiny --schedule "$iv,all"
refuse 'at most 16 values' "$ocsim" layouts --cards 8 --model tiny --micro-batches "$(seq -s, 1 17)"
refuse 'listed twice' "$ocsim" layouts --cards 8 --model tiny --micro-batches 1,2,1
refuse 'at most 16 settings' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 \
  $(for i in $(seq 17); do printf -- '--cfg network/crosstraffic:0 '; done)
# An output folder so long that "<dir>/sweep.csv" would not fit a path
# buffer: refused before anything is cut short.
long=$(printf 'd%.0s' $(seq 3900))
refuse 'output folder name too long' "$ocsim" simulate --cards 8 --model tiny \
  --layout tp2-pp2-dp2 --global-batch 16 --seq 128 --out "$tmp/$long"

summary defects.sh
