#!/usr/bin/env bash
# bench-checkpoint.sh: how long ocsim-exec takes to save and to load a
# checkpoint (exec/ckpt.h), per GB of shards, on this machine's disk: the
# figure the failure / checkpoint planning uses. Writes a Markdown table to
# stdout; docs/benchmarks.md holds its output with the machine it ran on.
# Not a test: the figures depend on the disk and on the load.
#
# usage: tools/bench-checkpoint.sh [path/to/ocsim-exec] [repeats] [DIR]
#   DIR: where the checkpoints go (default a temporary folder under
#   $TMPDIR); point it at the file system the runs will save to.
#
# A save's time is from rank 0 starting the step folder to the manifest
# renamed and DIR/latest rewritten: every rank's shard written, fsync'ed
# and renamed (the ranks write at once), the manifest, the folder renames.
# A load's: the manifest read, every shard's header, size and SHA-256
# checked (rank i checks shards i, i + world, ...), each rank's tensors
# read and uploaded. Both as ocsim-exec prints them ("checkpoint: saved
# ... (X s/GB)"); the best of `repeats` runs of each.
set -euo pipefail
exe=${1:-./build/ocsim-exec}
reps=${2:-3}
base=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$base" ] || base=$tmp/ck
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader)

# best_of KIND NP ARGS...: the smallest "(X s/GB)" of a KIND line ("saved"
# or "loaded") over $reps runs into $best, with that run's $size (the
# shards' bytes) and $secs
best_of() {
  local kind=$1 np=$2 line
  best=""
  shift 2
  for _ in $(seq "$reps"); do
    [ "$kind" = saved ] && rm -rf "$base"
    "${mpi[@]}" -np "$np" "$exe" "$@" --out "$tmp/out" >"$tmp/log" 2>&1 ||
      { echo "failed: $*" >&2; tail -5 "$tmp/log" >&2; exit 1; }
    line=$(grep "^checkpoint: $kind" "$tmp/log")
    local spg
    spg=$(sed -n 's/.*(\([0-9.e+-]*\) s\/GB).*/\1/p' <<<"$line")
    if [ -z "$best" ] || awk -v a="$spg" -v b="$best" 'BEGIN {exit !(a < b)}'; then
      best=$spg
      size=$(sed -n 's/.*shards, \([0-9.]* [kMGT]*B\).*/\1/p' <<<"$line")
      secs=$(sed -n 's/.* in \([0-9.]* [mun]*s\) (.*/\1/p' <<<"$line")
    fi
  done
}

echo "Machine: $(getconf _NPROCESSORS_ONLN) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d);"
echo "file system of the checkpoints: $(df -T "$(dirname "$base")" | awk 'NR == 2 {print $2}')."
echo "Command: tools/bench-checkpoint.sh $exe $reps (best of $reps runs each)."
echo
echo "| model | layout | ranks | shards' size | save | save s/GB | load (verified) | load s/GB |"
echo "|---|---|--:|--:|--:|--:|--:|--:|"
for c in "gpt-50m tp1-pp1-dp1 1 1" "gpt2-small tp1-pp1-dp1 1 1" "gpt2-small tp1-pp1-dp2 2 2" \
         "gpt-50m tp2-pp2-dp1 4 1"; do
  set -- $c
  model=$1 layout=$2 np=$3 gb=$4
  args=(--model "$model" --layout "$layout" --global-batch "$gb" --seq 32 --steps 1
        --no-weights --timeout 600)
  best_of saved "$np" "${args[@]}" --save "$base"
  save_size=$size save_secs=$secs save_best=$best
  best_of loaded "$np" "${args[@]}" --load "$base"
  echo "| $model | $layout | $np | $save_size | $save_secs | $save_best | $secs | $best |"
done
