#!/usr/bin/env bash
# sweep_interrupt.sh: a sweep stopped by SIGINT or SIGTERM, resumed with
# --resume, refused a resume of another sweep, with failed simulations, and
# with simulation settings SimGrid refuses (issue 11, defect 4 and
# "Interrupted and resumed sweeps").
#
# The sweep is the tiny model on 8 cards (39 simulations). The test hooks
# of sim/sweep.h make it slow enough to stop mid-run
# (OCSIM_TEST_SWEEP_DELAY_MS: every simulation starts late) and kill
# chosen simulations (OCSIM_TEST_SWEEP_KILL). Each interrupted sweep runs
# in a session of its own (setsid), so that whatever it leaves behind
# (workers, SimGrid children, zombies) is found by its session id; env
# --default-signal undoes the SIGINT a script's background job ignores.
# About 10 s.
# usage: sweep_interrupt.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
# the space before issue 12 (every knob but tp, pp, dp, mb and the schedule
# fixed) and --no-prune: 39 simulations to interrupt
args=(sweep --cards 8 --model tiny --global-batch 16 --seq 128 --jobs 2
      "${knobs_fixed[@]}" --schedule 1f1b,interleaved:2 --no-prune)

# The reference: the same sweep run through.
"$ocsim" "${args[@]}" --out "$tmp/ref" >"$tmp/ref.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || bad "reference sweep exit $rc: $(tail -3 "$tmp/ref.out")"
read -r total tosim < <(sed -n 's/.*: \([0-9]*\) layouts, \([0-9]*\) to simulate.*/\1 \2/p' "$tmp/ref.out")
[ "$total" -eq 60 ] && [ "$tosim" -eq 39 ] && ok || bad "reference: $total layouts, $tosim to simulate"
# sweep.csv: the 39 to simulate (the 21 rejected are counted, not listed)
[ "$(($(wc -l <"$tmp/ref/sweep.csv") - 1))" -eq 39 ] && ok || bad "reference sweep.csv: not 39 rows"

# same_rows DIR: DIR/sweep.csv holds whole rows of the reference, in the
# reference's order (a subset of a ranking keeps its order).
same_rows() {
  grep -Fxf "$1/sweep.csv" "$tmp/ref/sweep.csv" | cmp -s - "$1/sweep.csv"
}

# resumed DIR: after --resume, DIR's files are the reference's, byte for
# byte, but for the command line and the timing in report.md.
resumed() {
  local d=$1 f
  for f in sweep.csv throughput.dat throughput.gp memory.dat memory.gp breakdown.dat \
    breakdown.gp bubble.dat bubble.gp; do
    cmp -s "$tmp/ref/$f" "$d/$f" && ok || bad "$d/$f differs from the sweep that ran through"
  done
  diff <(sed "s#$tmp/ref#OUT#; /sweep took/d" "$tmp/ref/report.md") \
    <(sed "s#$d#OUT#; /sweep took/d" "$d/report.md") >"$tmp/report.diff" \
    && ok || bad "$d/report.md differs: $(head -c 400 "$tmp/report.diff")"
}

# interrupt SIGNAL DIR [SECOND]: the sweep stopped by SIGNAL once at least
# three layouts were simulated (SECOND: the signal again 50 ms later, in
# the write-up); checks exit 130, no process left, the report, sweep.csv.
interrupt() {
  local sig=$1 d=$2 second=${3:-} pid rows i
  OCSIM_TEST_SWEEP_DELAY_MS=150 setsid env --default-signal=INT,TERM \
    "$ocsim" "${args[@]}" --out "$d" >"$d.out" 2>"$d.err" &
  pid=$!
  for i in $(seq 300); do
    # sweep.csv appears only whole, at the end (core/outfile.h): count the
    # journal's records instead, each opening with the magic 0x6f63736a
    # (little-endian bytes "jsco"; reports/sweep_journal.c).
    rows=$( [ -f "$d/sweep.journal" ] && grep -a -o 'jsco' "$d/sweep.journal" | wc -l || echo 0)
    [ "$rows" -ge 3 ] && break
    sleep 0.1
  done
  kill "-$sig" "$pid"
  if [ -n "$second" ]; then sleep 0.05; kill "-$sig" "$pid" 2>/dev/null; fi
  wait "$pid"
  rc=$?
  [ "$rc" -eq 130 ] && ok || bad "$sig: exit $rc, expected 130: $(cat "$d.err")"
  local left
  left=$(ps -eo sid=,pid=,stat=,args= | awk -v s="$pid" '$1 == s')
  [ -z "$left" ] && ok || bad "$sig: processes of the sweep left: $left"
  rows=$(($(wc -l <"$d/sweep.csv") - 1))
  local n=$rows
  [ "$n" -ge 3 ] && [ "$n" -lt "$tosim" ] && ok || bad "$sig: $n simulated rows, expected 3..$((tosim - 1))"
  same_rows "$d" && ok || bad "$sig: sweep.csv is not whole rows of the reference in rank order"
  grep -q "^\*\*Interrupted by SIG$sig: $n of $tosim layouts simulated\.\*\*" "$d/report.md" \
    && ok || bad "$sig: report.md does not say 'Interrupted by SIG$sig: $n of $tosim'"
  tail -1 "$d/report.md" | grep -q 'before relying on it\.$' \
    && ok || bad "$sig: report.md is not whole"
  grep -q "^interrupted by SIG$sig: $n of $tosim layouts simulated" "$d.out" \
    && ok || bad "$sig: stdout does not say it was interrupted: $(tail -3 "$d.out")"
  grep -q "interrupted by SIG$sig: $n of $tosim" "$d/throughput.gp" \
    && ok || bad "$sig: the plots carry no note"
  [ ! -e "$d/sweep.csv.tmp" ] && ok || bad "$sig: sweep.csv.tmp left"
}

# resume DIR PATTERN: --resume in DIR exits 0, says what it reuses
# (stderr matches PATTERN) and ends as the sweep that ran through.
resume() {
  "$ocsim" "${args[@]}" --out "$1" --resume >"$tmp/res.out" 2>"$tmp/res.err"
  rc=$?
  [ "$rc" -eq 0 ] && ok || bad "--resume in $1: exit $rc: $(cat "$tmp/res.err")"
  grep -q -- "$2" "$tmp/res.err" && ok || bad "--resume in $1: stderr lacks /$2/: $(cat "$tmp/res.err")"
  resumed "$1"
}

# SIGINT, a second one in the write-up, then --resume: the sweep that ran
# through. Resuming a finished sweep then simulates nothing, changes nothing.
interrupt INT "$tmp/int" second
resume "$tmp/int" 'resuming: [0-9]* of the 39 simulated before'
resume "$tmp/int" 'resuming: 39 of the 39 simulated before.*, 0 left'

# SIGTERM; the journal then loses its last 100 bytes (a sweep killed while
# writing a record): --resume says so, simulates those again, same result.
interrupt TERM "$tmp/term"
truncate -s -100 "$tmp/term/sweep.journal"
resume "$tmp/term" 'sweep.journal: [0-9]* bytes after its last whole record dropped'

# A resume of another sweep's folder: one line, exit 2, nothing touched.
cp "$tmp/int/sweep.csv" "$tmp/before.csv"
expect 2 "int/sweep.journal belongs to another sweep: its cards differs \('8' there, '16' here\)" \
  "$ocsim" sweep --cards 16 --model tiny --global-batch 16 --seq 128 --out "$tmp/int" --resume
[ ! -s "$tmp/out" ] && ok || bad "refused resume wrote to stdout"
expect 2 "its knobs differs \('zero1=1' there, 'zero1=0' here\)" \
  "$ocsim" "${args[@]/--use-distributed-optimizer/--no-shard-optimizer}" --out "$tmp/int" --resume
expect 2 "its model differs \('tiny' there, 'llama-tiny' here\)" \
  "$ocsim" sweep --cards 8 --model llama-tiny --global-batch 16 --seq 128 --out "$tmp/int" --resume
cmp -s "$tmp/before.csv" "$tmp/int/sweep.csv" && ok || bad "a refused resume changed sweep.csv"
expect 2 'nothing/sweep.journal: no such file: no sweep to resume there' \
  "$ocsim" "${args[@]}" --out "$tmp/nothing" --resume
[ ! -e "$tmp/nothing" ] && ok || bad "a refused resume made its folder"

# Failed simulations (two killed by SIGKILL, as by the OOM killer): exit 1,
# how many and why on stdout and in report.md; the survivors still ranked.
OCSIM_TEST_SWEEP_KILL=0,3 "$ocsim" "${args[@]}" --out "$tmp/fail" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && ok || bad "failed simulations: exit $rc, expected 1"
grep -q '^2 of 39 simulations failed (2 x simulation crashed (signal 9, Killed)); the first, tp[0-9]' "$tmp/out" \
  && ok || bad "stdout does not count the failures: $(tail -3 "$tmp/out")"
grep -q '^\*\*Simulations failed:\*\* 2 of 39 simulations failed (2 x simulation crashed (signal 9, Killed))' \
  "$tmp/fail/report.md" && ok || bad "report.md does not count the failures"
grep -q '60 candidates: 37 simulated (37 fit in memory), 2 failed in simulation, 21 rejected before simulation' \
  "$tmp/fail/report.md" && ok || bad "report.md's layout counts: $(grep '| Layouts' "$tmp/fail/report.md")"
[ "$(grep -c 'simulation failed: simulation crashed (signal 9, Killed)' "$tmp/fail/sweep.csv")" -eq 2 ] \
  && ok || bad "sweep.csv does not hold the 2 failed rows"
# The survivors in the reference's order, the failed rows after them.
grep -v 'simulation failed' "$tmp/fail/sweep.csv" >"$tmp/fail/survivors.csv"
grep -Fxf "$tmp/fail/survivors.csv" "$tmp/ref/sweep.csv" | cmp -s - "$tmp/fail/survivors.csv" \
  && ok || bad "the survivors are not ranked as in the reference"
[ "$(($(wc -l <"$tmp/fail/sweep.csv") - 1))" -eq "$tosim" ] && ok || bad "sweep.csv lost rows"

# Simulation settings SimGrid refuses: exit 2 and its one line before the
# sweep starts, as `simulate` gives (defect 4), and no file written.
expect 2 "fail in SimGrid: .*Model 'NOPE' is invalid" \
  "$ocsim" "${args[@]}" --cfg network/model:NOPE --out "$tmp/badcfg"
[ ! -s "$tmp/out" ] && [ ! -e "$tmp/badcfg" ] && ok || bad "--cfg NOPE wrote stdout or files"
printf '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n<zone id="z" routing="Full">\n<host id="h0" speed="1Gf"/>\n</platform>\n' \
  >"$tmp/broken.xml"
expect 2 "fail in SimGrid: .*broken.xml:6.*end-tag" \
  "$ocsim" "${args[@]}" --platform "$tmp/broken.xml" --out "$tmp/badxml"
[ ! -e "$tmp/badxml" ] && ok || bad "a broken --platform wrote files"

summary sweep_interrupt
