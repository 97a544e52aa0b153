#!/usr/bin/env bash
# sweep_plan_jobs.sh: the sweep's plan built by several processes
# (tools/sweep_plan_part.h: the search's units dealt round-robin to forked
# parts, merged by unit) is the plan of one: on three problems, the
# outputs of a sweep planned by 1, 2 and 3 processes (OCSIM_PLAN_JOBS;
# 3 > the cores of a 2-core machine deals the units unevenly) are equal
# byte for byte: sweep.csv (items, bounds, pruning order), every plot's
# data, script and image, and report.md (knob ranges, counts, the first
# illegal candidates and the closest misses of memory) but its command
# line and the sweep's wall time, and sweep.journal's identity lines (the
# plan's counts and the hash of its items with their candidate numbers;
# its records come in the order the simulations finish). The problems:
#   tiny8:   tiny on 8 cards, every knob: illegal, dominated, pruned;
#   llama32: llama2-13b on 32 cards, every knob: 15 011 to simulate, out
#            of memory (the closest misses), illegal, dominated, pruned;
#   mixed16: llama2-70b on 16 cards of two node groups (the bound per
#            group), nothing fits: the report of misses alone (exit 1).
# Also held: the sweep says how many processes planned it; a bad
# OCSIM_PLAN_JOBS is one warning and the default; --rejected-csv plans in
# one process (its rows in candidate order) and writes the same table.
# usage: sweep_plan_jobs.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C

# run NAME JOBS CODE args...: one sweep planned by JOBS processes
run() {
  local name=$1 jobs=$2 code=$3
  shift 3
  OCSIM_PLAN_JOBS=$jobs "$ocsim" sweep "$@" --jobs 1 --out "$tmp/$name-$jobs" \
    >"$tmp/$name-$jobs.out" 2>"$tmp/$name-$jobs.err"
  local rc=$?
  [ $rc -eq "$code" ] && ok || bad "$name, $jobs processes: exit $rc: $(tail -2 "$tmp/$name-$jobs.err")"
  if [ "$jobs" -gt 1 ]; then
    grep -q "planned in [0-9.]* s by $jobs processes" "$tmp/$name-$jobs.err" && ok \
      || bad "$name: not planned by $jobs processes: $(grep planned "$tmp/$name-$jobs.err")"
  else
    grep -q "planned in [0-9.]* s$" "$tmp/$name-$jobs.err" && ok \
      || bad "$name: not planned by one process: $(grep planned "$tmp/$name-$jobs.err")"
  fi
}

# same NAME A B: the outputs of runs A and B equal (report.md less its
# command line and wall time)
same() {
  local a=$tmp/$1-$2 b=$tmp/$1-$3 f n=0
  [ "$(cd "$a" && ls)" = "$(cd "$b" && ls)" ] && ok || bad "$1: files of $2 and $3 differ"
  for f in "$a"/*; do
    f=$(basename "$f")
    case $f in
    gnuplot.log) continue ;;
    sweep.journal) # its identity (the plan's counts, the items' hash)
      cmp -s <(sed '/^end$/q' "$a/$f") <(sed '/^end$/q' "$b/$f") ;;
    report.md)
      cmp -s <(grep -v -e '^ocsim sweep ' -e 'sweep took' "$a/$f") \
        <(grep -v -e '^ocsim sweep ' -e 'sweep took' "$b/$f") ;;
    *) cmp -s "$a/$f" "$b/$f" ;;
    esac
    [ $? -eq 0 ] && n=$((n + 1)) || bad "$1: $f of $2 and $3 processes differ"
  done
  [ $n -ge 4 ] && ok || bad "$1: only $n files compared"
}

problem() {
  local name=$1 code=$2
  shift 2
  for j in 1 2 3; do
    run "$name" $j "$code" "$@"
  done
  same "$name" 1 2
  same "$name" 1 3
  echo "  $name: $(grep 'layouts:' "$tmp/$name-1.out" | sed 's/ in [0-9.]* s//')"
}

problem tiny8 0 --cards 8 --model tiny --global-batch 16 --seq 128
problem llama32 0 --cards 32 --model llama2-13b --global-batch 64 --seq 1024
problem mixed16 1 --cards 16 --model llama2-70b --topology mixed-h100-a100 --global-batch 64 \
  --seq 1024
# What the parts merged, by hand (llama32): the first illegal candidates
# of the enumeration (tp 1, cp 1, pp 1, dp 32: micro-batch 4 needs a
# global batch of 128; pp 2, dp 16, micro-batch 4: one micro-batch, and
# interleaving needs a multiple of pp, for v = 2 and 4), then three of the
# closest misses of memory.
for j in 1 3; do
  grep '^- `' "$tmp/llama32-$j/report.md" >"$tmp/ex-$j"
  sed -n 1,3p "$tmp/ex-$j" | cut -d'`' -f2 | tr '\n' ' ' >"$tmp/ill-$j"
  [ "$(cat "$tmp/ill-$j")" = "tp1-pp1-dp32-mb4-1f1b tp1-pp2-dp16-mb4-v2 tp1-pp2-dp16-mb4-v4 " ] \
    && ok || bad "llama32, $j processes: the first illegal: $(cat "$tmp/ill-$j")"
  [ "$(grep -c 'out of memory: stage' "$tmp/ex-$j")" -eq 3 ] && ok \
    || bad "llama32, $j processes: not three closest misses in report.md"
done
grep -q 'out of memory: stage' "$tmp/mixed16-1/report.md" && ok || bad "mixed16: no closest miss in report.md"

# a bad OCSIM_PLAN_JOBS: one warning, the default count
OCSIM_PLAN_JOBS=two "$ocsim" sweep --cards 8 --model tiny --global-batch 16 --seq 128 --jobs 2 \
  --out "$tmp/bad" >"$tmp/bad.out" 2>"$tmp/bad.err"
grep -q "warning: OCSIM_PLAN_JOBS='two' is not a positive count" "$tmp/bad.err" && ok \
  || bad "no warning for OCSIM_PLAN_JOBS=two: $(head -2 "$tmp/bad.err")"

# --rejected-csv: one process, the same tables
for j in 1 3; do
  OCSIM_PLAN_JOBS=$j "$ocsim" sweep --cards 8 --model tiny --global-batch 16 --seq 128 --jobs 1 \
    --rejected-csv --out "$tmp/rej-$j" >"$tmp/rej-$j.out" 2>"$tmp/rej-$j.err"
done
grep -q "planned in [0-9.]* s$" "$tmp/rej-3.err" && ok || bad "--rejected-csv: planned by more than one"
cmp -s "$tmp/rej-1/rejected.csv" "$tmp/rej-3/rejected.csv" && cmp -s "$tmp/rej-1/sweep.csv" \
  "$tmp/rej-3/sweep.csv" && ok || bad "--rejected-csv: tables differ"

summary sweep_plan_jobs
