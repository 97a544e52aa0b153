#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets of fuzz/ with clang and run each for
# SECONDS (or N executions), one after another; print per target the
# executions, exec/s, coverage and corpus size; exit 1 on a crash, with the
# reproducer's path.
#
#   bash tools/fuzz.sh 20                     # every target, 20 s each (CI)
#   nice -n 19 bash tools/fuzz.sh --runs 10000000 86400     # 10 M each
#   bash tools/fuzz.sh --target model 600     # one target
#   bash tools/fuzz.sh --merge 60             # and keep what adds coverage
#                                             # in fuzz/corpus/<target>/
#
# The targets are fuzz/targets.txt (fuzz/fuzz_<name>.c); the build folder
# is $OCSIM_FUZZ_BUILD or build-fuzz/ (cmake -S fuzz, CC=clang). Each
# target starts from its seeds (fuzz/corpus/<t>/) and its regression inputs
# (fuzz/regressions/<t>/) and grows a work corpus in BUILD/corpus/<t>/, so
# the repository's folders are only read (unless --merge). A crash's input
# is saved as BUILD/crashes/<t>/crash-<sha1>: replay it with
# `BUILD/fuzz_<t> FILE`, and once understood copy it to
# fuzz/regressions/<t>/ (ctest's fuzz_replay_<t> replays that folder on
# every build) and fix it or list it in fuzz/known.txt. The known defects
# of fuzz/known.txt are tolerated ($OCSIM_FUZZ_ALLOW, fuzz/fuzz_check.h).
#
# Where clang or libFuzzer is missing it prints one line and exits 77
# (ctest: skipped); tools/install-deps.sh installs them.
set -uo pipefail

usage() { echo "usage: fuzz.sh [--runs N] [--target NAME]... [--merge] SECONDS" >&2; exit 2; }
runs=-1
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --target) [ $# -ge 2 ] || usage; targets+=("$2"); shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
seconds=$1
case "$seconds$runs" in *[!0-9-]*) usage ;; esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=${OCSIM_FUZZ_BUILD:-$root/build-fuzz}
cc=${OCSIM_FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz: skipped: $cc not found (tools/install-deps.sh installs clang and libclang-rt-14-dev)"
  exit 77
fi
# libFuzzer is clang's runtime (libclang-rt-14-dev on Debian 12): try a link.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' > "$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
  echo "fuzz: skipped: $cc cannot link -fsanitize=fuzzer (tools/install-deps.sh installs libclang-rt-14-dev)"
  exit 77
fi

if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(grep -E '^[a-z_]+$' "$root/fuzz/targets.txt")
fi
for t in "${targets[@]}"; do
  [ -f "$root/fuzz/fuzz_$t.c" ] || { echo "fuzz: no target '$t' (fuzz/targets.txt)" >&2; exit 2; }
done

if ! { cmake -S "$root/fuzz" -B "$build" -DCMAKE_C_COMPILER="$cc" >"$probe/configure.log" 2>&1 &&
       cmake --build "$build" -j2 >"$probe/build.log" 2>&1; }; then
  cat "$probe/configure.log" "$probe/build.log" 2>/dev/null | tail -30
  echo "fuzz: the build in $build failed" >&2
  exit 2
fi

# The known defects tolerated: the first word of each line of known.txt.
OCSIM_FUZZ_ALLOW=$(grep -vE '^[[:space:]]*(#|$)' "$root/fuzz/known.txt" | awk '{print $1}' | paste -sd, -)
export OCSIM_FUZZ_ALLOW
export OCSIM_DATA_DIR=$root
[ -n "$OCSIM_FUZZ_ALLOW" ] && echo "fuzz: tolerating the known defects $OCSIM_FUZZ_ALLOW (fuzz/known.txt)"

failed=0
printf '%-14s %12s %8s %6s %7s %7s %s\n' target executions exec/s cov ft corpus result
for t in "${targets[@]}"; do
  work=$build/corpus/$t
  crashes=$build/crashes/$t
  log=$build/logs/$t.log
  mkdir -p "$work" "$crashes" "$build/logs"
  seeds=("$root/fuzz/corpus/$t")
  [ -d "$root/fuzz/regressions/$t" ] && seeds+=("$root/fuzz/regressions/$t")
  dict=()
  [ -f "$root/fuzz/dict/$t.dict" ] && dict=("-dict=$root/fuzz/dict/$t.dict")
  "$build/fuzz_$t" -max_total_time="$seconds" -runs="$runs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
    "${dict[@]}" "$work" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  if [ $rc -eq 0 ]; then
    result=ok
  else
    result="CRASH (exit $rc)"
    failed=1
  fi
  printf '%-14s %12s %8s %6s %7s %7s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$result"
  if [ $rc -ne 0 ]; then
    grep -E '^(fuzz: |SUMMARY: |==[0-9]+==ERROR)' "$log" | head -5 | sed 's/^/  /'
    art=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
    echo "  reproducer: ${art:-none saved (see $log)}; replay: $build/fuzz_$t ${art:-FILE}"
    echo "  log: $log"
  elif [ $merge -eq 1 ]; then
    "$build/fuzz_$t" -merge=1 "$root/fuzz/corpus/$t" "$work" >"$build/logs/$t.merge.log" 2>&1 ||
      echo "  merge into fuzz/corpus/$t failed (see $build/logs/$t.merge.log)"
  fi
done
exit $failed
