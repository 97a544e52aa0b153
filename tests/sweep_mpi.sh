#!/usr/bin/env bash
# sweep_mpi.sh: `mpirun -np K ocsim sweep` (sim/sweep_mpi.h) against the
# single-process sweep, on one machine.
#
# The sweep: tiny on 8 cards, global batch 16, seq 128, micro-batches 1,2
# (40 candidates, 28 simulated), --jobs 2 on every rank. Each run is made
# in a folder of its own with the same --out, so report.md's command line
# is the same. Held:
# 1. -np 2 and -np 3: sweep.csv byte-identical to the single-process one;
#    report.md identical but for its timing line ("sweep took ... s");
#    stdout identical but for the summary's "simulated in ... s"; exit 0
#    like it; at -np 3 (OCSIM_LOG at DEBUG on rank 0's sweep) ranks 1 and
#    2 both simulated layouts; no serving rank wrote to stdout.
# 2. A bad flag under mpirun -np 3: exit 2 (as without mpirun) and one
#    stderr line of ocsim's (rank 0's; mpirun adds its own notice of the
#    exit code, which is not ocsim's), no hang; --help printed once.
# 3. A rank that hangs (rank 1 stopped by SIGSTOP mid-sweep, with
#    OCSIM_SWEEP_MPI_TIMEOUT_S=2 and every simulation 500 ms late through
#    OCSIM_TEST_SWEEP_DELAY_MS): rank 0 warns once that rank 1 is lost and
#    simulates its layouts in flight again itself, so the sweep ends whole
#    with the reference sweep.csv byte for byte and no failure; rank 0 then
#    skips MPI_Finalize (it would wait for the stopped rank) and mpirun
#    ends the job (the stopped rank too) with a non-zero exit, well within
#    the test's timeout; --resume without mpirun finds nothing left.
# 4. A rank killed outright (SIGKILL to rank 1): mpirun ends the job with a
#    non-zero exit, nothing hangs, and --resume again ends with the
#    reference sweep.csv.
#
# Open MPI as root and more ranks than cores (tests/exec_common.sh's
# settings: --allow-run-as-root through the environment, --oversubscribe,
# no binding, shared memory). LeakSanitizer stays on: MPI runs only in the
# proxy program ocsim-mpi-proxy, which leaves with _exit (no leak check
# there), so ocsim's own processes are checked as in any other test.
# usage: sweep_mpi.sh path/to/ocsim [mpirun]
set -u
ocsim=$1
mpirun=${2:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=("$mpirun" --oversubscribe --bind-to none --mca btl self,vader)
args=(sweep --model tiny --cards 8 --global-batch 16 --seq 128 --recompute selective --sequence-parallel
      --use-distributed-optimizer --overlap-grad-reduce --rank-order tp-dp-pp --collective auto --cp 1
      --schedule 1f1b,interleaved:2 --micro-batches 1,2
      --jobs 2 --out out)

# run NAME [launcher...] -- [ocsim args after the sweep's]: in $tmp/NAME,
# stdout and stderr into NAME.out / NAME.err, the exit code into NAME.rc.
run() {
  local name=$1
  shift
  local pre=()
  while [ "$1" != -- ]; do
    pre+=("$1")
    shift
  done
  shift
  mkdir -p "$tmp/$name"
  (cd "$tmp/$name" && timeout 60 "${pre[@]}" "$ocsim" "${args[@]}" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"; echo $? >"$tmp/$name.rc")
}
rc() { cat "$tmp/$1.rc"; }
# The report and stdout without their wall times.
untimed() { sed -E 's/sweep took [^|]*/sweep took T /; s/simulated in [0-9.]+ s/simulated in T s/' "$1"; }

# ---- 1. the same sweep on 1, 2 and 3 ranks --------------------------------
run ref --
[ "$(rc ref)" = 0 ] && ok || bad "the single-process sweep exits $(rc ref): $(cat "$tmp/ref.err")"
ref=$tmp/ref/out
for np in 2 3; do
  if [ "$np" = 3 ]; then
    OCSIM_LOG="ocsim_sweep.thres:debug" run np3 "${mpi[@]}" -np 3 --
  else
    run np2 "${mpi[@]}" -np 2 --
  fi
  d=$tmp/np$np/out
  [ "$(rc np$np)" = 0 ] && ok || bad "-np $np exits $(rc np$np): $(tail -3 "$tmp/np$np.err")"
  cmp -s "$ref/sweep.csv" "$d/sweep.csv" && ok || bad "-np $np: sweep.csv differs"
  if diff <(untimed "$ref/report.md") <(untimed "$d/report.md") >/dev/null; then ok; else
    bad "-np $np: report.md differs beyond the timing line"
    diff <(untimed "$ref/report.md") <(untimed "$d/report.md") | head -5
  fi
  diff <(untimed "$tmp/ref.out") <(untimed "$tmp/np$np.out") >/dev/null && ok ||
    bad "-np $np: stdout differs from the single-process run's (a serving rank printed?)"
  grep -q "^ocsim sweep: $np of $np MPI ranks simulate" "$tmp/np$np.err" && ok ||
    bad "-np $np: no line saying the $np ranks simulate"
done
for r in 1 2; do
  n=$(grep -c "rank $r: layout [0-9]* simulated" "$tmp/np3.err")
  [ "$n" -ge 1 ] && ok || bad "-np 3: rank $r simulated no layout"
done

# ---- 2. a bad flag --------------------------------------------------------
run flag "${mpi[@]}" -np 3 -- --no-such-flag
[ "$(rc flag)" = 2 ] && ok || bad "a bad flag under mpirun exits $(rc flag), not 2"
n=$(grep -c '^ocsim' "$tmp/flag.err")
[ "$n" = 1 ] && ok || bad "a bad flag under mpirun: $n lines of ocsim on stderr, not 1"
grep -q "^ocsim sweep: unknown or misplaced option '--no-such-flag'" "$tmp/flag.err" && ok ||
  bad "a bad flag under mpirun: not the flag's message: $(head -2 "$tmp/flag.err")"
[ ! -s "$tmp/flag.out" ] && ok || bad "a bad flag under mpirun printed on stdout"

# --help: printed once, by rank 0 (the serving ranks' stdout is /dev/null)
(cd "$tmp" && "$ocsim" sweep --help >help1.out 2>&1)
(cd "$tmp" && timeout 60 "${mpi[@]}" -np 3 "$ocsim" sweep --help >help3.out 2>&1)
cmp -s "$tmp/help1.out" "$tmp/help3.out" && ok || bad "--help under mpirun -np 3 is not the help once"

# ---- 3 and 4. a rank that hangs, a rank killed --------------------------
# rank_pid MPIRUN R: the pid of rank R's ocsim (a child of mpirun).
rank_pid() {
  local c
  for c in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$c"
      return
    fi
  done
}

# broken NAME SIGNAL: the sweep on 2 ranks, rank 1 sent SIGNAL once it
# serves (it has workers of its own); then --resume without mpirun.
broken() {
  local name=$1 sig=$2
  mkdir -p "$tmp/$name"
  (cd "$tmp/$name" && OCSIM_SWEEP_MPI_TIMEOUT_S=2 OCSIM_TEST_SWEEP_DELAY_MS=500 \
    timeout 60 "${mpi[@]}" -np 2 "$ocsim" "${args[@]}" >"$tmp/$name.out" \
    2>"$tmp/$name.err"; echo $? >"$tmp/$name.rc") &
  local job=$! t0 r1="" i
  t0=$(date +%s)
  for i in $(seq 200); do
    local to mr=""
    to=$(pgrep -P "$job" | head -1)
    [ -n "$to" ] && mr=$(pgrep -P "$to" | head -1)
    [ -n "$mr" ] && r1=$(rank_pid "$mr" 1)
    # serving: the proxy and at least one worker are its children
    [ -n "$r1" ] && [ "$(pgrep -P "$r1" | wc -l)" -ge 2 ] && break
    r1=""
    sleep 0.05
  done
  if [ -z "$r1" ]; then
    bad "$name: rank 1 never served"
    wait "$job"
    return
  fi
  sleep 0.3
  if [ "$sig" = STOP ]; then
    kill -STOP "$r1" $(pgrep -P "$r1")
  else
    kill -KILL "$r1"
  fi
  wait "$job"
  [ -f "$tmp/$name/out/sweep.csv" ] && cp "$tmp/$name/out/sweep.csv" "$tmp/$name/out/sweep.csv.mpi"
  local took=$(($(date +%s) - t0))
  [ "$took" -le 30 ] && ok || bad "$name: the job took $took s to end"
  (cd "$tmp/$name" && timeout 60 "$ocsim" "${args[@]}" --resume >"$tmp/$name.res.out" \
    2>"$tmp/$name.res.err")
  [ $? = 0 ] && ok || bad "$name: --resume failed: $(cat "$tmp/$name.res.err")"
  cmp -s "$ref/sweep.csv" "$tmp/$name/out/sweep.csv" && ok ||
    bad "$name: after --resume, sweep.csv differs from the reference"
}

broken hung STOP
cmp -s "$ref/sweep.csv" "$tmp/hung/out/sweep.csv.mpi" && ok ||
  bad "a hung rank: the sweep under mpirun did not end with the reference sweep.csv"
grep -q "^ocsim sweep: warning: rank 1 ([^)]*) lost: not heard for 2 s; its [1-9][0-9]* layouts in flight are simulated again elsewhere" "$tmp/hung.err" && ok ||
  bad "a hung rank: no warning that rank 1 was lost: $(grep -v '^[-A-Z ]' "$tmp/hung.err" | head -3)"
grep -Eq ", 0 failed(;|$)" "$tmp/hung.out" && ok || bad "a hung rank: failures: $(tail -3 "$tmp/hung.out")"
[ "$(rc hung)" != 0 ] && ok || bad "a hung rank: the job exits 0 (mpirun should end it: rank 0 skipped MPI_Finalize)"

broken killed KILL
[ "$(rc killed)" != 0 ] && ok || bad "a killed rank: the job exits 0"

echo "sweep_mpi: $pass passed, $fail failed"
[ "$fail" = 0 ]
