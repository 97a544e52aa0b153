#!/usr/bin/env bash
# mutate.sh: does the test suite see deliberate bugs? Each mutation in
# tests/mutations/NN-name.patch (a one-line bug, its first lines say what
# and why) is applied to the working tree with `git apply`, built in an
# incremental build folder, tested with the whole ctest suite, and
# reverted (always: also on an error, Ctrl-C or SIGTERM). A mutation is
# caught when the suite fails; the script prints, per mutation, caught or
# MISSED with the tests that failed, then the score, and exits 1 if any
# mutation was missed, did not apply or did not build.
#
# usage: tools/mutate.sh [--build DIR] [--type Release|Asan] [--jobs N]
#                        [--no-baseline] [--list] [PATTERN...]
#   --build DIR    build folder (default build-mutate, configured if new)
#   --type T       CMAKE_BUILD_TYPE of a new build folder (default Release)
#   --jobs N       cmake --build -j N and ctest -j N (default 2)
#   --no-baseline  skip the run without a mutation (by default the suite
#                  must pass first, or nothing it says about a mutation
#                  means anything)
#   --list         print the mutations and what each is, run nothing
#   PATTERN        run only the mutations whose file name contains it
#
# The whole suite runs for every mutation, in two passes that together are
# all of ctest: first every test but the long executor runs (LONG below),
# then those; a pass stops at its first failure (--stop-on-failure), and a
# mutation caught in the first pass skips the second. Logs: DIR/mutate/.
# Patches apply with one line of context (git apply -C1), so that edits
# near a mutated line do not stop it; one that no longer applies is
# reported (DOES NOT APPLY) and must be made again on the new code. Run it
# on a clean tree (it edits tracked files while it runs); the record of a
# full run is in docs/reliability.md, "Mutation testing".
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
build=build-mutate type=Release jobs=2 baseline=1 list=0
pats=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mutate.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) pats+=("$1"); shift ;;
  esac
done
LONG='^(exec_equivalence|exec_equivalence_llama|exec_grads|exec_checkpoint|exec_netbw|exec_cuda|exec_cuda_emu|plan_run_compare)$'

muts=()
for f in tests/mutations/*.patch; do
  [ -e "$f" ] || continue
  if [ ${#pats[@]} -gt 0 ]; then
    keep=0
    for p in "${pats[@]}"; do [[ $(basename "$f") == *"$p"* ]] && keep=1; done
    [ "$keep" -eq 1 ] || continue
  fi
  muts+=("$f")
done
if [ ${#muts[@]} -eq 0 ]; then
  echo "mutate.sh: no mutation in tests/mutations matches" >&2
  exit 2
fi
if [ "$list" -eq 1 ]; then
  for f in "${muts[@]}"; do
    printf '%s\n' "$(basename "$f" .patch)"
    sed -n '1,/^$/p' "$f" | sed '/^$/d; s/^/    /'
  done
  exit 0
fi

# A patch already applied (a run killed with SIGKILL) would be reverted
# by nobody: say so and stop.
for f in "${muts[@]}"; do
  if git apply -C1 -R --check "$f" 2>/dev/null; then
    echo "mutate.sh: $f is applied to the tree (an earlier run was killed?);" \
         "revert it with: git apply -C1 -R $f" >&2
    exit 2
  fi
done

# fd 3: the terminal's stderr, for what a trap says while a command's
# output goes to a log
exec 3>&2
applied=""
revert() {
  if [ -n "$applied" ]; then
    git apply -C1 -R "$applied" 2>&3 ||
      echo "mutate.sh: could not revert $applied: revert it by hand" >&3
    applied=""
  fi
}
# Builds and test runs go in the background, each in a process group of
# its own (setsid), and are waited for, so that a signal is handled at
# once (bash runs a trap only after a foreground command ends): the
# handler ends the running group (ctest and the tests it started), then
# reverts.
child=""
fg_wait() {
  setsid "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=""
  return "$rc"
}
interrupted() {
  printf '\nmutate.sh: interrupted; reverting %s\n' "${applied:-nothing}" >&3
  if [ -n "$child" ]; then
    kill -TERM -- "-$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  revert
  exit 130
}
trap 'revert' EXIT
trap interrupted INT TERM

mkdir -p "$build/mutate"
logs=$build/mutate
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="$type" >"$logs/configure.log" 2>&1 ||
    { echo "mutate.sh: configuring $build failed: $logs/configure.log" >&2; exit 2; }
fi

# suite LOG: the whole suite in two passes; 0 when it passed, else 1 and
# the failed tests' names in $failed.
failed=""
suite() {
  local log=$1
  failed=""
  fg_wait ctest --test-dir "$build" -j "$jobs" -E "$LONG" --stop-on-failure >"$log" 2>&1 &&
    fg_wait ctest --test-dir "$build" -j "$jobs" -R "$LONG" --stop-on-failure >>"$log" 2>&1 &&
    return 0
  failed=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (\(Failed\|Timeout\|SEGFAULT\|Subprocess aborted\|Child aborted\|Exception\|Not Run\).*/\1/p' "$log" |
           sort -u | tr '\n' ' ')
  [ -n "$failed" ] || failed="(ctest: see $log)"
  return 1
}

start_all=$(date +%s)
if [ "$baseline" -eq 1 ]; then
  printf '%-40s ' "baseline (no mutation)"
  t0=$(date +%s)
  if ! fg_wait cmake --build "$build" -j "$jobs" >"$logs/baseline-build.log" 2>&1; then
    echo "does not build: $logs/baseline-build.log"
    exit 2
  fi
  if ! suite "$logs/baseline.log"; then
    echo "FAILS: $failed($logs/baseline.log)"
    echo "mutate.sh: the suite fails without a mutation; fix that first" >&2
    exit 2
  fi
  echo "passes ($(($(date +%s) - t0)) s)"
fi

caught=0 missed=0 broken=0
for f in "${muts[@]}"; do
  name=$(basename "$f" .patch)
  printf '%-40s ' "$name"
  t0=$(date +%s)
  if ! git apply -C1 "$f" 2>"$logs/$name.apply.log"; then
    echo "DOES NOT APPLY: $(head -1 "$logs/$name.apply.log")"
    broken=$((broken + 1))
    continue
  fi
  applied=$f
  if ! fg_wait cmake --build "$build" -j "$jobs" >"$logs/$name.build.log" 2>&1; then
    revert
    echo "DOES NOT BUILD: $logs/$name.build.log"
    broken=$((broken + 1))
    continue
  fi
  if suite "$logs/$name.log"; then
    revert
    echo "MISSED ($(($(date +%s) - t0)) s)"
    missed=$((missed + 1))
  else
    revert
    echo "caught by $failed($(($(date +%s) - t0)) s)"
    caught=$((caught + 1))
  fi
done

total=${#muts[@]}
echo "score: $caught of $total caught, $missed missed, $broken did not apply or build" \
     "($(($(date +%s) - start_all)) s; the build folder $build holds the last mutant:" \
     "rebuild it before other use)"
[ "$caught" -eq "$total" ]
