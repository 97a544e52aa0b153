#!/usr/bin/env bash
# exec_equivalence.sh: ocsim-exec through mpirun on the tiny model (fp32, cpu
# backend). Every layout must give the one-process run's numbers:
# - each step's loss within 1e-5 relative of tp1-pp1-dp1's;
# - the final weights (weights.bin) within 1e-5 relative over the whole
#   model and 1e-2 per tensor (why two: exec/weights_diff.c); and every DP
#   replica, TP replica and tied-embedding copy bitwise equal (the run's
#   "replicas:" line);
# - recompute none, selective and full bitwise the same numbers;
# for tp2-pp2-dp2, tp4-pp1-dp2, tp1-pp4-dp2 and tp2-pp4-dp1 under 1f1b, and
# gpipe and interleaved (v2) on the pipelined ones, ZeRO-1 and plain DP
# all-reduce, with and without overlapped gradient reduction; and sequence
# parallelism (tp2-pp2-dp2, tp4-pp1-dp2, tp2-pp4-dp1-v2: the residual
# stream split over the TP ranks by token rows, GPT-2's learned positions
# added by each row's position, the LayerNorm gains' gradients summed over
# TP).
# Every run uses the layouts' default flash attention unless it says
# classic: a classic run's losses are bitwise the flash run's at step 1
# (the cpu kernels' fused forward is the classic loop) and within 1e-5 after.
# Also: the same run without MPI (--no-mpi) gives bitwise the same numbers;
# a process count that does not match the layout is refused before any
# work with one line naming both numbers; a bf16 layout is refused; the
# cuda backend, where it starts, gives the reference's numbers within fp32
# GEMMs' rounding, and elsewhere is refused;
# 20 steps make the loss fall; a rank that hangs or dies ends the job within
# seconds, a hang with a message naming the rank and the op it waited in.
# usage: exec_equivalence.sh path/to/ocsim-exec path/to/ocsim-weights-diff [mpirun]
set -u
exe=$1
wdiff=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# (a flag given twice with different values is refused: the runs below
# that need another timeout, batch or step count start from `base` or set
# `common` for themselves)
base=(--model tiny --global-batch 8 --seq 32 --steps 3)
common=("${base[@]}" --timeout 60)
loss_tol=1e-5
# run, same_losses, check (losses within loss_tol, weights, replicas),
# refused, ok, bad; the environment of the runs.
. "$(dirname "$0")/exec_common.sh"

# The one-process reference.
if ! run ref 1 --layout tp1-pp1-dp1-nosp; then
  bad "reference run: $(tail -5 "$tmp/ref.log")"
  echo "exec_equivalence: $pass passed, $fail failed"
  exit 1
fi

# Without MPI (--no-mpi: the control plane of ctl_local.c, as on a GPU
# machine without MPI): bitwise the reference's losses and weights; more
# than one rank of the cpu backend is refused there.
if "$exe" --no-mpi "${common[@]}" --out "$tmp/nompi" --layout tp1-pp1-dp1-nosp \
     >"$tmp/nompi.log" 2>&1 && cmp -s "$tmp/ref/loss.csv" "$tmp/nompi/loss.csv" &&
   cmp -s "$tmp/ref/weights.bin" "$tmp/nompi/weights.bin"; then
  ok
else
  bad "--no-mpi: not the reference's numbers: $(tail -3 "$tmp/nompi.log")"
fi
"$exe" --no-mpi "${common[@]}" --out "$tmp/nompi2" --layout tp2-pp1-dp1-nosp \
  >"$tmp/nompi2.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/nompi2.log")" -eq 1 ] &&
  grep -q '^ocsim-exec: layout tp2-pp1-dp1.* without MPI the cpu backend runs one' "$tmp/nompi2.log" &&
  [ ! -e "$tmp/nompi2" ] && ok || bad "--no-mpi tp2: exit $rc: $(cat "$tmp/nompi2.log")"

for l in tp2-pp2-dp2 tp4-pp1-dp2 tp1-pp4-dp2 tp2-pp4-dp1; do
  check "$l" 8 --layout "$l-nosp-1f1b"
done
for l in tp2-pp2-dp2 tp1-pp4-dp2 tp2-pp4-dp1; do
  check "$l-gpipe" 8 --layout "$l-nosp-gpipe"
  check "$l-v2" 8 --layout "$l-nosp-interleaved-v2"
done
# DP variants: plain all-reduce, reduce-scatter + all-gather, each with and
# without the per-chunk overlapped buckets.
check tp2-pp2-dp2-nozero 8 --layout tp2-pp2-dp2-nosp-nozero
check tp2-pp2-dp2-zero1-nooverlap 8 --layout tp2-pp2-dp2-nosp-zero1 --no-overlap-grad-reduce
check tp1-pp2-dp4-v2-nozero 8 --layout tp1-pp2-dp4-nosp-v2-nozero
check tp1-pp2-dp4-v2-zero1 8 --layout tp1-pp2-dp4-nosp-v2-zero1
check tp2-pp2-dp2-mb2 8 --layout tp2-pp2-dp2-nosp-mb2
# sequence parallelism, and classic attention against flash
check tp2-pp2-dp2-sp 8 --layout tp2-pp2-dp2-sp
check tp4-pp1-dp2-sp 8 --layout tp4-pp1-dp2-sp-rfull
# without DP the norms' gradients are summed over TP at the optimizer; the
# tied embedding's copy on the last stage
check tp2-pp4-dp1-sp-v2 8 --layout tp2-pp4-dp1-sp-v2
check classic 1 --layout tp1-pp1-dp1-nosp-classic
awk -F, 'NR == FNR { r[$1] = $2; next } FNR == 2 { exit !($2 == r[$1]) }' \
  "$tmp/ref/loss.csv" "$tmp/classic/loss.csv" && ok ||
  bad "classic: step 1's loss is not bitwise flash's"

# Recompute none / selective / full: bitwise the same losses and weights.
# Selective is the default: tp2-pp2-dp2-v2 above (tp2-pp2-dp2-nosp-
# interleaved-v2) is the very layout tp2-pp2-dp2-nosp-v2-rsel, run once.
for r in rnone rfull; do
  check "rc-$r" 8 --layout "tp2-pp2-dp2-nosp-v2-$r"
done
rsel=$tmp/tp2-pp2-dp2-v2
for r in rnone rfull; do
  if cmp -s "$rsel/loss.csv" "$tmp/rc-$r/loss.csv" &&
     "$wdiff" --tol 0 --tensor-tol 0 "$tmp/rc-$r/weights.bin" "$rsel/weights.bin" >/dev/null; then
    ok
  else
    bad "recompute $r is not bitwise rsel's"
  fi
done

# The outputs of one run: measured.csv in simulate.csv's columns, every
# rank's ops, memory by buffer kind, the trace.
d=$tmp/tp2-pp2-dp2
hdr='tp,pp,dp,micro_batch,num_micro_batches,schedule,vchunks,recompute,step_time_s,tokens_per_s,tflops_per_gpu,mfu,bubble_fraction,compute_s,tp_comm_s,pp_comm_s,dp_comm_s,exposed_comm_s,peak_mem_bytes,device_mem_bytes,fits,reason,global_batch,layout'
if [ "$(head -1 "$d/measured.csv")" = "$hdr" ] && [ "$(wc -l <"$d/measured.csv")" -eq 2 ] &&
   awk -F, 'NR == 2 { exit !($1 == 2 && $2 == 2 && $3 == 2 && $9 > 0 && $14 > 0 && $15 > 0 && $16 > 0 && $17 > 0 && $19 > 0) }' "$d/measured.csv"; then
  ok
else
  bad "measured.csv: $(cat "$d/measured.csv")"
fi
ranks=$(awk -F, 'NR > 1 { r[$1] = 1 } END { print length(r) }' "$d/ops.csv")
kinds=$(awk -F, 'NR > 1 { k[$3] = 1 } END { n = 0; for (x in k) n++; print n }' "$d/ops.csv")
bad_times=$(awk -F, 'NR > 1 && !($17 >= 0 && $18 >= $17) { n++ } END { print n + 0 }' "$d/ops.csv")
[ "$ranks" -eq 8 ] && [ "$kinds" -eq 5 ] && [ "$bad_times" -eq 0 ] && ok ||
  bad "ops.csv: $ranks ranks, $kinds op kinds (compute send recv collective wait), $bad_times bad times"
mem=$(awk -F, 'NR > 1 && $3 > 0 && $2 == "total" { n++ } END { print n + 0 }' "$d/memory.csv")
[ "$mem" -eq 8 ] && ok || bad "memory.csv: $mem ranks with a total"
grep -q '"source":"measured"' "$d/timeline.json" && ok || bad "timeline.json lacks source measured"

# 20 steps of 16 x 64 tokens at lr 3e-3: the loss falls (seen: 6.25 -> 4.74;
# the 8-layer tiny model does not learn at lr 1e-2, nor much in 20 steps of
# 8 x 32 tokens).
common=(--model tiny --timeout 60)
if run falls 2 --layout tp1-pp2-dp1-nosp --steps 20 --lr 3e-3 --global-batch 16 --seq 64; then
  awk -F, 'NR == 2 { f = $2 } NR > 1 { l = $2; n++ }
           END { printf "  loss %.3f -> %.3f\n", f, l; exit !(n == 20 && f > l * 1.2) }' \
    "$tmp/falls/loss.csv" >"$tmp/falls.cmp" && ok || bad "20 steps: $(cat "$tmp/falls.cmp")"
else
  bad "20 steps: $(tail -5 "$tmp/falls.log")"
fi
common=("${base[@]}" --timeout 60)

# Refusals: one line from ocsim-exec, exit 2, nothing written.
refused np3 '^ocsim-exec: layout tp2-pp2-dp2.* 8 processes, but MPI started 3' 3 --layout tp2-pp2-dp2
# the executor's runs are fp32 runs (layout.h): a bf16 layout is refused
refused bf16 '^ocsim-exec: layout precision bf16: the cpu backend keeps activations' 1 \
  --layout tp1-pp1-dp1-bf16
# cuda: where the backend starts (a GPU is visible and the build has it),
# the one-process layout on it must give the cpu reference's numbers within
# fp32 GEMMs' rounding (exec_cuda.sh's tolerances: losses 1e-4 relative,
# weights 1e-4 over the model and 1e-2 per tensor); where it does not, it
# is refused with one line: not built (no nvcc / NCCL at configure time),
# or no device visible, which must not happen where nvidia-smi lists a GPU.
if ASAN_OPTIONS="$ASAN_OPTIONS:protect_shadow_gap=0" \
   run cuda 1 --layout tp1-pp1-dp1-nosp --backend cuda --precision fp32; then
  why=""
  same_losses "$tmp/ref" "$tmp/cuda" 1e-4 >"$tmp/cuda.cmp" || why="losses: $(cat "$tmp/cuda.cmp")"
  "$wdiff" --tol 1e-4 --tensor-tol 1e-2 "$tmp/cuda/weights.bin" "$tmp/ref/weights.bin" \
    >"$tmp/cuda.wd" 2>&1 || why="$why weights: $(cat "$tmp/cuda.wd")"
  [ -z "$why" ] && ok || bad "cuda against cpu: $why"
else
  rm -rf "$tmp/cuda"
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    pattern='^ocsim-exec: --backend cuda is not built'
  else
    pattern='^ocsim-exec: --backend cuda(: no CUDA device is visible| is not built)'
  fi
  refused cuda "$pattern" 1 --layout tp1-pp1-dp1-nosp --backend cuda --precision fp32
fi

# A rank that hangs: the others time out (--timeout 3), name themselves and
# the op, and the job ends; loss.csv.partial (its header) stays readable,
# marked: no step completed. (The
# layout runs sequence parallelism: the first op waited in may be a TP
# reduce-scatter.)
start=$(date +%s)
OCSIM_EXEC_TEST_HANG_RANK=1 timeout 60 "${mpi[@]}" -np 8 "$exe" "${base[@]}" \
  --layout tp2-pp2-dp2 --timeout 3 --out "$tmp/hang" >"$tmp/hang.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le 15 ] &&
   grep -Eq '^ocsim-exec: rank [0-9]+ timed out after 3 s in op [0-9]+ \((recv|allreduce|allgather|reducescatter|send|wait).*\) of step 1' "$tmp/hang.log" &&
   [ "$(head -1 "$tmp/hang/loss.csv.partial")" = "step,loss" ] &&
   grep -q '^# partial: 0 of 3 steps completed; rank [0-9]* timed out after 3 s' \
     "$tmp/hang/loss.csv.partial" && [ ! -e "$tmp/hang/loss.csv" ]; then
  ok
else
  bad "hung rank: exit $rc after $took s: $(grep ocsim-exec "$tmp/hang.log" | head -3)"
fi
# A rank that dies (SIGKILL): mpirun ends the job.
start=$(date +%s)
OCSIM_EXEC_TEST_DIE_RANK=1 timeout 60 "${mpi[@]}" -np 8 "$exe" "${base[@]}" \
  --layout tp2-pp2-dp2 --timeout 3 --out "$tmp/die" >"$tmp/die.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le 15 ] && ok ||
  bad "dead rank: exit $rc after $took s"

echo "exec_equivalence: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
