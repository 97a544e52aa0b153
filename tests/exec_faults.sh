#!/usr/bin/env bash
# exec_faults.sh: ocsim-exec under mpirun when its job does not end well
# (issue 11), each case a few seconds on the tiny model, 4 ranks
# (tp1-pp2-dp2), the runs long (--steps 100000) and ended from outside
# once loss.csv.partial holds 3 steps:
#   memory   --steps 1000000 against --steps 200, each rank's peak virtual
#            size and resident memory read from /proc mid-run: the same
#            within 16 MB (defect 5: the runner sized steps x ops timing
#            arrays up front, GBs here), then the job interrupted (SIGTERM
#            to mpirun): one line "interrupted (SIGTERM) ...", loss.csv
#            left as loss.csv.partial and marked
#   killed   kill -9 of rank 2 (defect 9): one line of ocsim-exec's own
#            naming rank 2 and the op it was in, a non-zero exit within
#            20 s, loss.csv.partial marked "# partial: K of 100000 steps
#            completed; rank 2 was lost ..." after its K rows, no loss.csv
#            and no measured.csv; the timeout line of --timeout auto
#   stopped  kill -STOP of rank 1 with --timeout 3: exit code 3 within 30
#            s, one line naming the rank that timed out, its op, and rank 1
#            as stopped with the op it was in; the same mark
# Usage: exec_faults.sh OCSIM-EXEC MPIRUN
set -u
exe=$1
mpirun=$2
tmp=$(mktemp -d)
pids_to_clean=()
cleanup() {
  for p in "${pids_to_clean[@]}"; do
    kill -CONT "$p" 2>/dev/null
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
common=(--model tiny --global-batch 8 --seq 32 --layout tp1-pp2-dp2 --no-weights)
# ok, bad, the environment of every run and ${mpi[@]}
# shellcheck source=exec_common.sh
source "$(dirname "$0")/exec_common.sh"

# start NAME ARGS...: the job in the background (at most 60 s); $job is
# the pid of its `timeout`, the log $tmp/NAME.log.
start() {
  local name=$1
  shift
  timeout 60 "${mpi[@]}" -np 4 "$exe" "${common[@]}" --out "$tmp/$name" "$@" \
    >"$tmp/$name.log" 2>&1 &
  job=$!
}

# rows FILE: the data rows of a loss.csv (not the header, not the mark).
rows() {
  local n
  n=$(grep -c '^[0-9]' "$1" 2>/dev/null)
  echo "${n:-0}"
}

# until_steps NAME K: waits (30 s at most) until the job wrote K steps
# (into loss.csv.partial; loss.csv before it was streamed under that name,
# so that this test measures what it says on the code before the fixes).
until_steps() {
  local i
  for i in $(seq 600); do
    [ "$(rows "$tmp/$1/loss.csv.partial")" -ge "$2" ] && return 0
    [ "$(rows "$tmp/$1/loss.csv")" -ge "$2" ] && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# rank_pid R: the pid of world rank R of the job (its process's
# environment; only the job's own descendants are looked at).
rank_pid() {
  local todo=("$job") p c
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    for c in $(pgrep -P "$p"); do
      todo+=("$c")
      if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
        echo "$c"
        return 0
      fi
    done
  done
  return 1
}

# kib PID FIELD: a /proc/PID/status field in kB (VmPeak, VmHWM).
kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# partial NAME STEPS PATTERN: loss.csv.partial ends in one "# partial: K
# of STEPS steps completed; PATTERN" after its K rows (K >= 3), and neither
# loss.csv nor measured.csv was written.
partial() {
  local f=$tmp/$1/loss.csv.partial k
  k=$(rows "$f")
  [ "$k" -ge 3 ] && [ "$(grep -c '^#' "$f")" -eq 1 ] &&
    tail -1 "$f" | grep -Eq "^# partial: $k of $2 steps completed; $3\$" &&
    [ ! -e "$tmp/$1/loss.csv" ] && [ ! -e "$tmp/$1/measured.csv" ]
}

# ocsim-exec's lines on stderr (the start line "ocsim-exec: tiny, ..." is
# stdout's): exactly one
own_lines() { grep '^ocsim-exec: ' "$tmp/$1.log" | grep -v '^ocsim-exec: tiny, '; }

# what a rank can be in (exec/runner_step.c, main.c, out_measured.c)
op='(op [0-9]+ \(.*\) of step [0-9]+|the barrier before step [0-9]+|the last pipeline messages of step [0-9]+|the end of step [0-9]+|gathering [a-z ]+ of step [0-9]+)'

# ---- memory: peaks at 1000000 steps against 200 ----------------------------
declare -A peak hwm
for steps in 200 1000000; do
  start "mem$steps" --steps "$steps"
  if until_steps "mem$steps" 3 && p=$(rank_pid 0); then
    peak[$steps]=$(kib "$p" VmPeak)
    hwm[$steps]=$(kib "$p" VmHWM)
  fi
  # to mpirun itself (its one SIGTERM: SIGCONT and SIGTERM to the ranks;
  # `timeout` would send it a second one, which kills them at once)
  kill -TERM "$(pgrep -P "$job")" 2>/dev/null
  wait "$job"
done
echo "rank 0 after 3 steps: VmPeak ${peak[200]:-?} kB at --steps 200, ${peak[1000000]:-?} kB at" \
  "--steps 1000000; VmHWM ${hwm[200]:-?} and ${hwm[1000000]:-?} kB"
if [ -n "${peak[200]:-}" ] && [ -n "${peak[1000000]:-}" ] &&
   [ $((peak[1000000] - peak[200])) -le 16384 ] && [ $((hwm[1000000] - hwm[200])) -le 16384 ]; then
  ok
else
  bad "memory of rank 0 after 3 steps: VmPeak ${peak[200]:-?} kB at --steps 200," \
      "${peak[1000000]:-?} kB at --steps 1000000; VmHWM ${hwm[200]:-?}, ${hwm[1000000]:-?} kB"
fi
# the interruption (SIGTERM from mpirun): one line, the stream marked
if [ "$(own_lines mem1000000 | wc -l)" -eq 1 ] &&
   own_lines mem1000000 | grep -Eq "^ocsim-exec: interrupted \(SIGTERM\) while rank [0-3] was in $op\$" &&
   partial mem1000000 1000000 "interrupted \(SIGTERM\) while rank [0-3] was in $op"; then
  ok
else
  bad "interrupted: $(own_lines mem1000000 | head -3) / $(tail -2 "$tmp/mem1000000/loss.csv.partial" 2>&1)"
fi

# signal_rank NAME SIG R ARGS...: a job of 100000 steps, SIG sent to rank R
# once it has done 3; sets rc (the job's exit code) and took (seconds).
signal_rank() {
  local name=$1 sig=$2 r=$3 t0 p
  shift 3
  t0=$(date +%s)
  start "$name" --steps 100000 "$@"
  if until_steps "$name" 3 && p=$(rank_pid "$r"); then
    pids_to_clean+=("$p")
    kill "-$sig" "$p"
  else
    kill -TERM "$job"
  fi
  wait "$job"
  rc=$?
  took=$(($(date +%s) - t0))
}

# verdict NAME LINE: one line of ocsim-exec's own, LINE, and the mark
verdict() {
  [ "$(own_lines "$1" | wc -l)" -eq 1 ] && own_lines "$1" | grep -Eq "^ocsim-exec: $2\$" &&
    partial "$1" 100000 "$2"
}

# ---- killed: kill -9 of rank 2 -----------------------------------------------
signal_rank killed KILL 2
line="rank 2 was lost in $op: its process is gone \(killed or crashed\), the job is ended"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le 20 ] && verdict killed "$line" &&
   grep -Eq '^timeout: 60 s per wait \(auto: the floor; 10 x the predicted step, .* on h100-100g, is less\)$' \
     "$tmp/killed.log"; then
  ok
else
  bad "killed rank: exit $rc after $took s: $(own_lines killed | head -3) / $(tail -1 "$tmp/killed/loss.csv.partial" 2>&1)"
fi

# ---- stopped: kill -STOP of rank 1, --timeout 3 -------------------------------
signal_rank stopped STOP 1 --timeout 3
line="rank [023] timed out after 3 s in $op; rank 1 is stopped \(SIGSTOP\) in $op"
if [ "$rc" -eq 3 ] && [ "$took" -le 30 ] && verdict stopped "$line" &&
   grep -q '^timeout: 3 s per wait (--timeout)$' "$tmp/stopped.log"; then
  ok
else
  bad "stopped rank: exit $rc after $took s: $(own_lines stopped | head -3) / $(tail -1 "$tmp/stopped/loss.csv.partial" 2>&1)"
fi

echo "exec_faults: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
