#!/usr/bin/env bash
# run.sh: the bad-input table (tests/badinput/cases.tsv) against a build of
# ocsim and ocsim-exec, normally the Asan one (AddressSanitizer +
# UndefinedBehaviorSanitizer). Every case is one malformed input: a flag, a
# layout string, a model config.json, a topology JSON, a platform XML, a CSV
# for `ocsim compare`, a checkpoint. The contract each case checks (issue 11):
#   - the exit code the table gives (2: bad input; 1: a check failed);
#   - exactly ONE line on stderr, with no control characters in it (echoed
#     user text is escaped), matching the table's pattern (an ERE);
#   - nothing on stdout when the exit code is 2;
#   - within 60 s (a hang is a failure; no case starts a long simulation;
#     $BADINPUT_TIMEOUT seconds when set).
# A sanitizer report, a crash or an abort fails the first two checks.
#
# usage: run.sh [--pending | --all] [--only ERE] [-j N] [--times] BIN_DIR
#   BIN_DIR   the build folder holding ocsim and ocsim-exec
#   --pending run pending.tsv instead: cases written to the contract whose
#             fix is on another branch (they move to cases.tsv once merged)
#   --all     cases.tsv and pending.tsv
#   --only    only the cases whose id matches ERE
#   -j N      N cases at a time (default: the cores, at most 8)
#   --times   also list the ten slowest cases
# Also: run.sh --selftest BIN_DIR runs selftest.tsv, cases that each break
# one rule on purpose, and passes only when the runner fails every one of
# them (so that a check that cannot fail is seen) and every file of files/
# is named by a case of cases.tsv or pending.tsv.
#
# The table: one case per line, fields separated by TABs, '#' lines and
# empty lines ignored:
#   ID  EXIT  PATTERN  COMMAND  [SETUP]
# COMMAND and SETUP are bash command lines (quotes and $'...' work), run in
# the case's own empty scratch folder; SETUP runs first and must succeed.
# Placeholders in both:
#   @BIN@    BIN_DIR               @DATA@   tests/data
#   @FILES@  tests/badinput/files  @ROOT@   the source tree (models/, ...)
#   @TMP@    the case's scratch folder
#   @CKPT@   a complete checkpoint of tiny (tp1-pp1-dp1, 1 step, global
#            batch 2, seq 16), made once per run when a case names it; copy
#            it before changing it
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tables=("$here/cases.tsv")
only=""
# Most of a case is the start of a sanitized program: one case per core.
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 8 ] && jobs=8
selftest=0
times=0
limit=${BADINPUT_TIMEOUT:-60}
while [ $# -gt 1 ]; do
  case $1 in
    --pending) tables=("$here/pending.tsv") ;;
    --all) tables=("$here/cases.tsv" "$here/pending.tsv") ;;
    --selftest) tables=("$here/selftest.tsv"); selftest=1; limit=2 ;;
    --only) only=$2; shift ;;
    --times) times=1 ;;
    -j) jobs=$2; shift ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [ $# -ne 1 ] || [ ! -x "$1/ocsim" ] || [ ! -x "$1/ocsim-exec" ]; then
  echo "usage: run.sh [--pending | --all | --selftest] [--only ERE] [-j N] [--times] BIN_DIR (with ocsim and ocsim-exec)" >&2
  exit 2
fi
bin=$(cd "$1" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/ocsim-badinput.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The programs find their shipped models and topologies here; Open MPI may
# run as root in CI containers; one BLAS thread.
export OCSIM_DATA_DIR=$root
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export LC_ALL=C

# ---------------------------------------------------------------- the table
ids=() codes=() pats=() cmds=() setups=()
declare -A seen=()
bad_table=0
for t in "${tables[@]}"; do
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case $line in '' | '#'*) continue ;; esac
    IFS=$'\t' read -r id code pat cmd setup extra <<<"$line"
    if [ -z "${cmd:-}" ] || [ -n "${extra:-}" ] || ! [[ $code =~ ^[0-9]+$ ]] ||
       ! [[ $id =~ ^[a-z0-9][a-z0-9._-]*$ ]] || [ -n "${seen[$id]:-}" ]; then
      echo "run.sh: $(basename "$t"):$n: not ID<TAB>EXIT<TAB>PATTERN<TAB>COMMAND[<TAB>SETUP] with a new id" >&2
      bad_table=1
      continue
    fi
    seen[$id]=1
    [ -n "$only" ] && ! [[ $id =~ $only ]] && continue
    ids+=("$id") codes+=("$code") pats+=("$pat") cmds+=("$cmd") setups+=("${setup:-}")
  done <"$t"
done
[ "$bad_table" -eq 0 ] || exit 2

subst() {
  local s=$1 dir=$2
  s=${s//@BIN@/$bin}
  s=${s//@DATA@/$root/tests/data}
  s=${s//@FILES@/$here/files}
  s=${s//@ROOT@/$root}
  s=${s//@CKPT@/$work/ckpt-good}
  s=${s//@TMP@/$dir}
  printf '%s' "$s"
}

# ------------------------------------------------------- the good checkpoint
for c in "${cmds[@]}" "${setups[@]}"; do
  case $c in *@CKPT@*)
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
      "$bin/ocsim-exec" --no-mpi --model tiny --layout tp1-pp1-dp1 --steps 1 \
      --global-batch 2 --seq 16 --save "$work/ckpt-good" --out "$work/ckpt-run" \
      >"$work/ckpt.log" 2>&1 || { echo "run.sh: cannot make the checkpoint:"; cat "$work/ckpt.log"; exit 1; }
    break ;;
  esac
done

# ----------------------------------------------------------------- one case
# Writes $dir/result: "ok" or what went wrong.
one() {
  local i=$1 id=${ids[$1]} code=${codes[$1]} pat=${pats[$1]}
  local dir=$work/case/$id
  mkdir -p "$dir/tmp"
  local cmd setup
  cmd=$(subst "${cmds[$i]}" "$dir/tmp")
  setup=$(subst "${setups[$i]}" "$dir/tmp")
  # Open MPI, hwloc and OpenBLAS leave allocations at exit that
  # LeakSanitizer reports (exec_common.sh); ocsim itself is leak-checked.
  local asan=${ASAN_OPTIONS:-}
  case $cmd in *ocsim-exec*) asan="${asan:+$asan:}detect_leaks=0" ;; esac
  if [ -n "$setup" ] && ! (cd "$dir/tmp" && bash -c "$setup") >"$dir/setup.log" 2>&1; then
    echo "setup failed: $(head -c 300 "$dir/setup.log")" >"$dir/result"
    return
  fi
  local t0=$EPOCHREALTIME
  (cd "$dir/tmp" && ASAN_OPTIONS=$asan timeout -k 5 "$limit" bash -c "$cmd") \
    </dev/null >"$dir/out" 2>"$dir/err"
  local rc=$? why=""
  echo "$t0 $EPOCHREALTIME" >"$dir/time"
  local lines
  lines=$(tr -cd '\n' <"$dir/err" | wc -c)
  [ "$rc" -eq 124 ] && why="$why; timed out after $limit s"
  [ "$rc" -ne "$code" ] && why="$why; exit $rc, expected $code"
  if [ "$lines" -ne 1 ] || [ -n "$(tail -c 1 "$dir/err")" ]; then
    why="$why; $lines stderr lines, expected one ending in a newline"
  elif tr -d '\n' <"$dir/err" | grep -q '[[:cntrl:]]'; then
    why="$why; a control character in the stderr line"
  elif ! grep -Eq -- "$pat" "$dir/err"; then
    why="$why; stderr lacks /$pat/"
  fi
  [ "$code" -eq 2 ] && [ -s "$dir/out" ] && why="$why; $(wc -l <"$dir/out") lines on stdout"
  if [ -z "$why" ]; then
    echo ok >"$dir/result"
  else
    # what it printed, control characters shown, cut short
    local said
    said=$(head -c 400 "$dir/err" | cat -v | tr '\n' '|')
    echo "${why#; } -- stderr: $said" >"$dir/result"
  fi
}

# ------------------------------------------------------------------ run all
t0=$(date +%s)
running=0
for i in "${!ids[@]}"; do
  one "$i" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

pass=0
fail=0
for i in "${!ids[@]}"; do
  r=$(cat "$work/case/${ids[$i]}/result" 2>/dev/null || echo "no result")
  if [ "$r" = ok ]; then
    pass=$((pass + 1))
    [ "$selftest" -eq 1 ] && echo "SELFTEST NOT CAUGHT: ${ids[$i]} passed"
  else
    fail=$((fail + 1))
    [ "$selftest" -eq 0 ] && echo "FAIL ${ids[$i]}: $r"
  fi
done
if [ "$times" -eq 1 ]; then
  echo "slowest cases (s):"
  for i in "${!ids[@]}"; do
    read -r a b <"$work/case/${ids[$i]}/time" 2>/dev/null || continue
    echo "$a $b ${ids[$i]}"
  done | awk '{printf "  %6.2f %s\n", $2 - $1, $3}' | sort -rn | head -10
fi
names=$(for t in "${tables[@]}"; do basename "$t"; done | paste -sd+)
if [ "$selftest" -eq 1 ]; then
  # The data too: every file of files/ is named by a case (a folder by its
  # name), so that none is left over from a case that went.
  unused=0
  while IFS= read -r f; do
    name=$(basename "$f")
    [ "$name" = README ] && name=$(basename "$(dirname "$f")")
    if ! grep -qF -- "$name" "$here/cases.tsv" "$here/pending.tsv"; then
      echo "SELFTEST: files/${f#"$here/files/"} is named by no case"
      unused=$((unused + 1))
    fi
  done < <(find "$here/files" -type f | sort)
  echo "badinput selftest: $fail of ${#ids[@]} broken cases caught, $unused unused files"
  [ "$pass" -eq 0 ] && [ "${#ids[@]}" -gt 0 ] && [ "$unused" -eq 0 ]
else
  echo "badinput ($names): ${#ids[@]} cases, $pass passed, $fail failed, $(( $(date +%s) - t0 )) s"
  [ "$fail" -eq 0 ] && [ "${#ids[@]}" -gt 0 ]
fi
