#!/usr/bin/env bash
# compare.sh: `ocsim compare` as a user meets it: exit codes (0 within
# tolerance, 1 beyond, 2 bad input with one line on stderr), the table, and
# the files --out writes. The fixtures and the figures they give are
# described in tests/data/compare/README.md and tests/test_compare.c
# (step time 80 ms predicted, 100 ms measured: +20 %; 5 rows checked, 3 of
# them beyond 15 %, none beyond 35 %).
# usage: compare.sh path/to/ocsim path/to/tests/data/compare
set -u
ocsim=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

expect 0 'usage: ocsim compare' "$ocsim" compare --help
expect 1 'BEYOND TOLERANCE: 3 of 5 checked rows' "$ocsim" compare "$data/pred" "$data/meas"
expect 1 'step_time_s +80.0 ms +100 ms +\+20.0% +no' "$ocsim" compare "$data/pred" "$data/meas"
expect 1 'pairing: by aggregate' "$ocsim" compare "$data/pred" "$data/meas"
expect 0 'within tolerance: 5 checked rows within 35%' "$ocsim" compare --tolerance 35 "$data/pred" "$data/meas"
expect 1 'BEYOND TOLERANCE: 2 of 5' "$ocsim" compare "$data/pred" "$data/meas" --tolerance 16
expect 1 'BEYOND TOLERANCE: 3 of 6' "$ocsim" compare "$data/pred" "$data/meas" --tolerance 16 --check-memory
expect 0 'pairing: by op' "$ocsim" compare "$data/meas" "$data/meas"
expect 1 'no per-op comparison' "$ocsim" compare "$data/pred/simulate.csv" "$data/meas/measured.csv"
expect 2 "--tolerance: 'abc' is not a positive number" "$ocsim" compare --tolerance abc "$data/pred" "$data/meas"
expect 2 "--tolerance: '0' is not a positive number" "$ocsim" compare --tolerance 0 "$data/pred" "$data/meas"
expect 2 '--tolerance needs a value' "$ocsim" compare "$data/pred" "$data/meas" --tolerance
expect 2 "unknown option '--bogus'" "$ocsim" compare --bogus "$data/pred" "$data/meas"
expect 2 'give PREDICTED and MEASURED \(got 1 argument' "$ocsim" compare "$data/pred"
expect 2 'nosuch: No such file' "$ocsim" compare "$data/pred" "$tmp/nosuch"
mkdir "$tmp/empty"
expect 2 'holds no simulate.csv, measured.csv or sweep.csv' "$ocsim" compare "$data/pred" "$tmp/empty"
head -n 3 "$data/meas/measured.csv" >"$tmp/other.csv"
tail -n 1 "$data/meas/measured.csv" | sed 's/^2,2,1,/1,2,2,/' >>"$tmp/other.csv"
expect 2 'are different layouts' "$ocsim" compare "$data/pred" "$tmp/other.csv"

# --out: compare.csv and the scatter files; the exit code stays the verdict.
expect 1 'wrote .*/cmp/compare.csv' "$ocsim" compare "$data/pred" "$data/meas" --out "$tmp/cmp"
for f in compare.csv scatter.gp scatter.dat; do
  [ -s "$tmp/cmp/$f" ] && ok || bad "--out: $f missing"
done
grep -q '^step_time_s,0.08,0.1,20,no$' "$tmp/cmp/compare.csv" && ok || bad "compare.csv: step_time_s row: $(grep step_time "$tmp/cmp/compare.csv")"
if command -v gnuplot >/dev/null 2>&1 && [ -z "${OCSIM_GNUPLOT:-}" ]; then
  [ -s "$tmp/cmp/scatter.png" ] && [ -s "$tmp/cmp/scatter.svg" ] && ok || bad "--out: scatter.png/.svg not rendered"
fi
# Without gnuplot: a warning, the script and data, the same exit code.
OCSIM_GNUPLOT=/nonexistent/gnuplot "$ocsim" compare "$data/pred" "$data/meas" --out "$tmp/cmp2" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && ok || bad "without gnuplot: exit $rc, expected 1"
grep -q 'warning: plots not rendered' "$tmp/err" && ok || bad "without gnuplot: no warning: $(cat "$tmp/err")"
[ -s "$tmp/cmp2/scatter.gp" ] && ok || bad "without gnuplot: scatter.gp missing"

summary compare.sh
