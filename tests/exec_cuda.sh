#!/usr/bin/env bash
# exec_cuda.sh: the cuda backend of ocsim-exec against the cpu backend on
# the tiny model (GPT-2 block) and llama-tiny (Llama block: RMSNorm, RoPE,
# SwiGLU, grouped-query attention), one GPU (tp1-pp1-dp1, 10 steps, 8 x 64
# tokens): fp32 GEMMs
# within 1e-4 relative of the cpu backend's loss at every step, bf16 GEMMs
# within 2e-2 (bf16 keeps 8 significant bits: 2^-8 = 3.9e-3 per rounding,
# and the difference grows over 10 AdamW steps). Where no GPU is visible it
# prints "skipped: no GPU" and exits 77 (ctest: Skipped).
# usage: exec_cuda.sh path/to/ocsim-exec
set -u
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:protect_shadow_gap=0"
common=(--layout tp1-pp1-dp1-nosp --global-batch 8 --micro-batch 2 --seq 64
        --steps 10 --no-mpi --timeout 120)

"$exe" --backend cuda --model tiny "${common[@]}" --out "$tmp/probe" --steps 1 \
  >"$tmp/probe.log" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'no CUDA device is visible' "$tmp/probe.log"; then
  echo "skipped: no GPU ($(cat "$tmp/probe.log"))"
  exit 77
fi
fail=0
for model in tiny llama-tiny; do
  "$exe" --backend cpu --model "$model" "${common[@]}" --out "$tmp/$model-cpu" \
    >"$tmp/$model-cpu.log" 2>&1 ||
    { echo "FAIL: $model cpu run: $(tail -3 "$tmp/$model-cpu.log")"; exit 1; }
  for prec in fp32:1e-4 bf16:2e-2; do
    p=${prec%%:*} tol=${prec#*:} d=$tmp/$model-$p
    if ! "$exe" --backend cuda --precision "$p" --model "$model" "${common[@]}" --out "$d" \
         >"$d.log" 2>&1; then
      echo "FAIL: $model cuda $p run: $(tail -3 "$d.log")"
      fail=1
      continue
    fi
    awk -F, -v tol="$tol" -v p="$model $p" 'NR == FNR { if (FNR > 1) a[$1] = $2; next }
        FNR > 1 { n++; d = ($2 - a[$1]) / a[$1]; if (d < 0) d = -d; if (d > m) m = d;
                  if (!($1 in a) || d > tol) bad++ }
        END { printf "%s: max relative loss difference %.3e over %d steps (tolerance %g)\n",
                     p, m, n, tol; exit (bad || n != 10) }' \
      "$tmp/$model-cpu/loss.csv" "$d/loss.csv" || { echo "FAIL: $model cuda $p losses"; fail=1; }
  done
done
[ "$fail" -eq 0 ] && echo "exec_cuda: passed"
exit "$fail"
