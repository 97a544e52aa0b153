#!/usr/bin/env bash
# fault_disk.sh: a full disk at several points of the outputs of `ocsim
# sweep`, `ocsim simulate`, `ocsim compare` and `ocsim-exec` (issue 11:
# every output file is written whole or not at all).
#
#   fault_disk.sh OCSIM OCSIM_EXEC OUTCHECK
#
# Each program runs once on a roomy disk (the reference), then on a disk
# that fills at several points: during the first file, about a third and
# two thirds of the way, during the last; and once with room to spare (it
# must then succeed as the reference did). The small disk is
#   tmpfs   a tmpfs mounted for each run (as root, where mount works), with
#           0 pages free (a filler takes them), 1/3 and 2/3 of the pages the
#           reference's files take, and all of them but one;
#   ulimit  elsewhere: a file size limit (ulimit -f, SIGXFSZ ignored so that
#           the write fails with EFBIG instead of killing the program) of
#           4 KB (above SimGrid's platform file), 1/3 and 2/3 of the largest
#           output, and the largest output less 1 KB.
# OCSIM_FAULT_MODE=tmpfs|ulimit forces one; when neither works: skipped (77).
#
# After every run:
#   - no *.tmp (file or folder) is left under the output folder;
#   - every file there is complete (OUTCHECK: CSV records against the
#     header and the reference's count, JSON parsed whole, PNG chunk by
#     chunk to IEND, SVG's end, weights.bin's size from its table), and the
#     deterministic ones are byte-identical to the reference's;
#   - a run that fails exits with a code that is neither 0 nor the
#     reference's, with exactly one stderr line (the sweep's banner aside)
#     that names a file of the output folder, "cannot write" and the reason,
#     and that file is absent; a run that succeeds wrote every file the
#     reference did;
#   - stdout names no file that is absent ("table: ...", "wrote ...").
# Every level below the reference's size must fail: the test cannot pass by
# never filling the disk. About 24 runs of small jobs (~10 s; ~40 s under
# ASan).
set -uo pipefail
ocsim=${1:?usage: fault_disk.sh OCSIM OCSIM_EXEC OUTCHECK}
exe=${2:?usage: fault_disk.sh OCSIM OCSIM_EXEC OUTCHECK}
outcheck=${3:?usage: fault_disk.sh OCSIM OCSIM_EXEC OUTCHECK}
data=$(cd "$(dirname "$0")" && pwd)/data
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d)
mnt=$tmp/mnt
mkdir -p "$mnt"
mounted=0
cleanup() {
  [ "$mounted" = 1 ] && umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

fails=0 checks=0
ok() { checks=$((checks + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); checks=$((checks + 1)); }

# ------------------------------------------------------------------ mode
try_tmpfs() {
  [ "$(id -u)" = 0 ] || return 1
  mount -t tmpfs -o size=8k tmpfs "$mnt" 2>/dev/null || return 1
  umount "$mnt"
}
try_ulimit() { # a 1 KB limit must make a 2 KB write fail, not kill the shell
  ( trap '' XFSZ; ulimit -f 1 && ! head -c 2048 /dev/zero >"$tmp/probe" ) 2>/dev/null
  local rc=$?
  rm -f "$tmp/probe"
  return $rc
}
mode=${OCSIM_FAULT_MODE:-}
if [ -z "$mode" ]; then
  if try_tmpfs; then mode=tmpfs; elif try_ulimit; then mode=ulimit; fi
fi
case "$mode" in
tmpfs) try_tmpfs || { echo "skipped: cannot mount a tmpfs"; exit 77; } ;;
ulimit) try_ulimit || { echo "skipped: ulimit -f does not limit writes here"; exit 77; } ;;
*) echo "skipped: neither a tmpfs (needs root) nor ulimit -f works here"; exit 77 ;;
esac
echo "fault_disk: mode $mode"

# ------------------------------------------------------------------ running
# run P KB CMD...: CMD with files limited to KB kilobytes ("unlimited" in
# tmpfs mode); stdout, stderr and the exit code into P.out, P.err, P.rc.
# The limit is set in the program's own subshell and its output goes
# through pipes, so that the captures are not limited.
run() {
  local p=$1 kb=$2
  shift 2
  { { ( trap '' XFSZ; [ "$kb" = unlimited ] || ulimit -f "$kb"; exec "$@" ); echo $? >"$p.rc"; } 2>&1 1>&3 |
      cat >"$p.err"; } 3>&1 | cat >"$p.out"
}

# The files of a folder, relative, without gnuplot's log (a log, not an
# output: gnuplot's messages when a script fails).
# Not sweep.journal: it is the sweep's write-ahead log for --resume, not an
# output; a record cut by a full disk ends it and --resume drops that tail
# (reports/sweep_journal.h; tests/test_sweep_journal.c cuts it at every byte).
files_of() {
  (cd "$1" && find . -type f ! -name gnuplot.log ! -name sweep.journal | sed 's#^\./##' | sort)
}

# 4 KB pages the files of a folder take on a tmpfs.
pages_of() { find "$1" -type f -printf '%s\n' | awk '{p += int(($1 + 4095) / 4096)} END {print p}'; }
largest_kb() { find "$1" -type f -printf '%s\n' | sort -n | tail -1 | awk '{print int($1 / 1024)}'; }

# same NAME DIR REF FILE: FILE of DIR byte-identical to REF's (report.md
# without its timing line and with the folder's name replaced).
same() {
  local name=$1 dir=$2 ref=$3 f=$4
  local cut='wall|elapsed|took [0-9.]+ ?[mun]?s|seconds of CPU|simulated in'
  if [ "$f" = report.md ]; then
    cmp -s <(grep -a -v -E "$cut" "$dir/$f" | sed "s#$dir#OUT#g") \
      <(grep -a -v -E "$cut" "$ref/$f" | sed "s#$ref#OUT#g")
  else
    cmp -s "$dir/$f" "$ref/$f"
  fi || bad "$name: $f differs from the reference's"
}

# verdict NAME DIR REF P MUSTFAIL NONDET: the checks above on one run.
# NONDET: a regex of the files with measured times (parsed, not compared).
verdict() {
  local name=$1 dir=$2 ref=$3 p=$4 mustfail=$5 nondet=$6
  local rc refrc
  rc=$(cat "$p.rc")
  refrc=$(cat "$ref.rc")
  local left
  left=$(find "$(dirname "$dir")" -name '*.tmp' 2>/dev/null)
  [ -z "$left" ] && ok || bad "$name: temporaries left: $left"
  if [ -d "$dir" ]; then
    for f in $(files_of "$dir"); do
      if [ ! -f "$ref/$f" ]; then
        bad "$name: $f is not among the reference's files"
        continue
      fi
      "$outcheck" "$dir/$f" "$ref/$f" && ok || bad "$name: $f is incomplete"
      [[ "$f" =~ $nondet ]] || same "$name" "$dir" "$ref" "$f"
    done
  fi
  local errs nerr
  errs=$(grep -v -E '^ocsim sweep: .* layouts, .* to simulate' "$p.err")
  nerr=$(printf '%s' "$errs" | grep -c '')
  if [ "$rc" = "$refrc" ]; then
    [ "$mustfail" = 0 ] && ok || bad "$name: the disk filled but the run did not fail"
    [ "$nerr" -eq 0 ] && ok || bad "$name: succeeded with stderr: $errs"
    for f in $(files_of "$ref"); do
      [ -f "$dir/$f" ] || bad "$name: succeeded without $f"
    done
  else
    [ "$rc" -ne 0 ] && ok || bad "$name: failed with exit 0"
    [ "$nerr" -eq 1 ] && ok || bad "$name: $nerr stderr lines, not one: $errs"
    local named
    named=$(printf '%s\n' "$errs" | sed -n "s#.*\($dir/[^ :]*\): cannot write: ..*#\1#p" | head -1)
    if [ -n "$named" ]; then
      ok
      [ ! -e "$named" ] && ok || bad "$name: $named named as not written, but it is there"
    else
      bad "$name: the error names no file of $dir with a reason: $errs"
    fi
    grep -q '^wrote ' "$p.out" && bad "$name: failed but says: $(grep '^wrote ' "$p.out")" || ok
  fi
  for q in $(grep -oE "$dir/[A-Za-z0-9_./-]*[A-Za-z0-9_-]" "$p.out" | sort -u); do
    [ -e "$q" ] || bad "$name: stdout names $q, which is not there"
  done
  echo "  $name: exit $rc${named:+, $(basename "$named")}"
}

# case_ NAME NONDET CMD... (with OUT for the output folder): the reference,
# then each level.
case_() {
  local name=$1 nondet=$2
  shift 2
  local ref=$tmp/ref-$name
  run "$ref" unlimited "${@//OUT/$ref}"
  if [ ! -d "$ref" ] || [ -z "$(files_of "$ref")" ]; then
    bad "$name: the reference run wrote nothing (exit $(cat "$ref.rc")): $(cat "$ref.err")"
    return
  fi
  local levels=() i=0
  if [ "$mode" = tmpfs ]; then
    local pages
    pages=$(pages_of "$ref")
    levels=(0 $((pages / 3)) $((2 * pages / 3)) $((pages - 1)) $((2 * pages + 256)))
  else
    local big
    big=$(largest_kb "$ref")
    levels=(4 $((big / 3)) $((2 * big / 3)) $((big - 1)) $((big + 64)))
  fi
  for lv in "${levels[@]}"; do
    local p=$tmp/$name-$i mustfail=1 kb=unlimited dir
    [ "$i" -eq 4 ] && mustfail=0
    if [ "$mode" = tmpfs ]; then
      # lv pages free: a tmpfs of lv pages, or of one page a filler takes
      mount -t tmpfs -o size=$(((lv > 0 ? lv : 1) * 4))k tmpfs "$mnt" || {
        bad "$name: cannot mount"
        return
      }
      mounted=1
      [ "$lv" -eq 0 ] && head -c 4096 /dev/zero >"$mnt/filler" 2>/dev/null
      dir=$mnt/out
    else
      [ "$lv" -lt 4 ] && lv=4
      kb=$lv
      dir=$tmp/$name-$i.d/out
      mkdir -p "$(dirname "$dir")"
    fi
    run "$p" "$kb" "${@//OUT/$dir}"
    echo -n "  level $lv $([ "$mode" = tmpfs ] && echo pages free || echo KB per file):"
    verdict "$name" "$dir" "$ref" "$p" "$mustfail" "$nondet"
    if [ "$mode" = tmpfs ]; then
      umount "$mnt"
      mounted=0
    fi
    i=$((i + 1))
  done
}

echo "sweep:"
# the sweep's space before issue 12 (every knob but tp, pp, dp, mb and the
# schedule fixed): a few simulations, each fill point runs it again
case_ sweep '^$' "$ocsim" sweep --cards 4 --model tiny --global-batch 16 --seq 128 \
  --recompute selective --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce \
  --rank-order tp-dp-pp --collective auto --cp 1 --schedule 1f1b,interleaved:2 --jobs 2 --out OUT
echo "simulate:"
case_ simulate '^$' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 \
  --global-batch 16 --out OUT
echo "compare:"
case_ compare '^$' "$ocsim" compare "$data/compare/pred" "$data/compare/meas" --out OUT
echo "ocsim-exec:"
case_ exec '^(measured\.csv|ops\.csv|timeline\.json)$' "$exe" --no-mpi --model tiny \
  --global-batch 8 --seq 32 --steps 3 --timeout 60 --layout tp1-pp1-dp1 --out OUT

echo "fault_disk ($mode): $((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
