#!/usr/bin/env bash
# validate.sh: `ocsim validate` as a user meets it. A row's prediction must
# be what `ocsim simulate` gives for the same flags (the one code path), a
# memory row what the parameter count worked by hand gives, the error and
# the MAPE what the measured numbers written into the table make them;
# --mape exits 1 when missed; bad input is one line naming the file, the
# line and the column, exit 2.
# usage: validate.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

expect 0 'usage: ocsim validate' "$ocsim" validate --help

# The reference: ocsim simulate of the layout the table's rows name.
flags=(--cards 8 --model gpt3-1.3b --topology dgx-a100 --layout tp2-pp2-dp2-mb2
       --global-batch 16 --seq 1024 --recompute none --no-sequence-parallel
       --zero-stage 0 --attention flash --fidelity sym)
"$ocsim" simulate "${flags[@]}" --out "$tmp/sim" >/dev/null 2>&1 || bad "ocsim simulate failed"
read -r step tflops < <(awk -F, '!/^#/ && !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
  !/^#/ { print $c["step_time_s"], $c["tflops_per_gpu"] }' "$tmp/sim/simulate.csv")
[ -n "${step:-}" ] && ok || bad "no step time in simulate.csv"

# Measured: 1.25 x the prediction in s (error -20 %), 0.8 x it in ms
# (+25 %), the TFLOP/s exactly (0 %). Memory: GPT, h 64, 4 heads, 2 layers,
# V 128, P = seq = 32, f = 4h, tied: per layer 12h^2 + 13h = 49984
# parameters, embedding (V + P) h = 10240, final norm 2h = 128: 110336
# parameters at 2 + 4 + 12 bytes (bf16 with fp32 gradients, Megatron-LM's
# default; Adam, ZeRO-0) = 1986048 bytes = 1.89404296875 MiB, measured as
# 1.6 MiB (error +18.377685546875 %).
hdr='name,model,hidden_size,num_attention_heads,num_hidden_layers,vocab_size,cards,topology,layout,global_batch,seq,recompute,sequence_parallel,zero,attention,quantity,measured,unit,source'
row="gpt3-1.3b,,,,,8,dgx-a100,tp2-pp2-dp2-mb2,16,1024,none,no,0,flash"
meas_s=$(awk -v s="$step" 'BEGIN { printf "%.12g", s * 1.25 }')
meas_ms=$(awk -v s="$step" 'BEGIN { printf "%.12g", s * 1000 * 0.8 }')
{
  echo "# a tiny validation table (tests/validate.sh)"
  echo "$hdr"
  echo "slow,$row,step_time,$meas_s,s/step,made up"
  echo "fast,$row,,$meas_ms,ms/step,made up"
  echo "tput,$row,tflops_per_gpu,$tflops,TFLOP/s,made up"
  echo "mem,,64,4,2,128,1,dgx-a100,tp1-pp1-dp1,1,32,none,no,0,flash,memory_states,1.6,MiB,worked by hand"
} >"$tmp/t.csv"

# MAPE over the four rows: (20 + 25 + 0 + 18.377685546875) / 4 = 15.844
expect 0 'MAPE 15\.8% over 4 rows' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v"
expect 0 ' 3 slow .* -20\.0% ' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v"
expect 0 ' 4 fast .* \+25\.0% ' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v"
expect 0 ' 5 tput .* [+-]0\.0% ' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v"
expect 0 ' 6 mem .* 1\.894 MiB .* \+18\.4% ' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v"
# validation.csv holds simulate's numbers (to the digits both print).
awk -F, -v s="$step" -v t="$tflops" 'NR > 1 && $3 == "slow" { p = $7 }
  NR > 1 && $3 == "fast" { q = $7 } NR > 1 && $3 == "tput" { u = $7 }
  NR > 1 && $3 == "mem" { m = $7; e = $8 }
  END { d = p / s - 1; d2 = q / (1000 * s) - 1; d3 = u / t - 1
        exit !(d * d < 1e-14 && d2 * d2 < 1e-14 && d3 * d3 < 1e-14 &&
               (m - 1.89404296875)^2 < 1e-16 && (e - 18.377685546875)^2 < 1e-12) }' \
  "$tmp/v/validation.csv" && ok || bad "validation.csv: predictions differ from ocsim simulate's"
for f in validation.csv validation.dat validation.gp; do
  [ -s "$tmp/v/$f" ] && ok || bad "--out: $f missing"
done

# A layer's forward and backward (with its recompute): the sum of the
# layer-grain ops of the middle layer rank 0 holds, micro-batch 0, in the
# ops.csv of ocsim simulate --fidelity full (measured: exactly that).
lflags=(--cards 8 --model gpt3-1.3b --topology dgx-a100 --layout tp2-pp2-dp2-mb2
        --global-batch 16 --seq 1024 --recompute full --no-sequence-parallel
        --zero-stage 0 --attention flash --fidelity full)
"$ocsim" simulate "${lflags[@]}" --out "$tmp/lsim" >/dev/null 2>&1 ||
  bad "ocsim simulate --fidelity full failed"
read -r lfwd lbwd < <(awk -F, '!/^#/ && !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
  !/^#/ && $c["rank"] == 0 { n++; L[n] = $c["layer_first"]; C[n] = $c["layer_count"]
    K[n] = $c["kind"]; P[n] = $c["phase"]; M[n] = $c["mb"]; D[n] = $c["end_s"] - $c["start_s"]
    if (K[n] == "compute" && C[n] == 1 && L[n] >= 0) { if (lo == "" || L[n] < lo) lo = L[n]
      if (hi == "" || L[n] > hi) hi = L[n] } }
  END { k = lo + int((hi - lo) / 2)
    for (i = 1; i <= n; i++) if (L[i] == k && C[i] == 1 && M[i] == 0 &&
        (K[i] == "compute" || K[i] == "collective")) {
      if (P[i] == "fwd") f += D[i]; else if (P[i] == "bwd" || P[i] == "recompute") b += D[i] }
    printf "%.12g %.12g\n", f * 1000, b * 1000 }' "$tmp/lsim/ops.csv")
lrow="gpt3-1.3b,8,dgx-a100,tp2-pp2-dp2-mb2,16,1024,full,no,0,flash"
{
  echo 'name,model,cards,topology,layout,global_batch,seq,recompute,sequence_parallel,zero,attention,quantity,measured,unit,source'
  echo "lfwd,$lrow,layer_forward_time,$lfwd,ms,ops.csv"
  echo "lbwd,$lrow,layer_backward_time,$lbwd,ms,ops.csv"
} >"$tmp/layer.csv"
expect 0 'MAPE 0\.0% over 2 rows' "$ocsim" validate "$tmp/layer.csv" --out "$tmp/lv"
awk -F, 'NR > 1 { e = $8; if (e * e > 1e-10) bad = 1; n++ } END { exit bad || n != 2 }' \
  "$tmp/lv/validation.csv" && ok || bad "layer rows: not ops.csv's sums ($lfwd, $lbwd ms)"
awk -v f="$lfwd" -v b="$lbwd" 'BEGIN { exit !(f > 0 && b > 1.5 * f) }' && ok ||
  bad "layer times: forward $lfwd ms, backward $lbwd ms (backward with recompute > 1.5 x forward)"

# An all-reduce's bus bandwidth: a ring of 8 GPUs on dgx-a100's NVLink at
# NCCL's figure (B = 240e9 bytes/s, l = 1 us per hop) over S = 8 GiB takes
# t = 2(N-1)/N S/B + 2(N-1) l (core/closed_form.h; the reductions, 3S/(NM)
# per step at M = 2.039e12, hide behind the S/(NB) hops) plus NCCL's
# terms under its Simple protocol (core/nccl_model.h: baseLat 8.4 us, and per
# step hwLat 3.4 us less the 1 us the hop pays: 8.4 + 14 x 2.4 = 42 us;
# LL128 would add 1/0.92 of the bytes), and nccl-tests'
# busbw = 2(N-1)/N S/t = 239.786 GB/s.
bw=$(awk 'BEGIN { S = 8589934592; t = 1.75 * S / 240e9 + 14e-6 + 42e-6; printf "%.9g", 1.75 * S / t / 1e9 }')
{
  echo 'name,cards,bytes,topology,collective,quantity,measured,unit,source'
  echo "ring,8,8589934592,dgx-a100,ring,allreduce_busbw,$bw,GB/s,worked by hand"
  echo "auto,8,8589934592,dgx-a100,,,$(awk -v b="$bw" 'BEGIN { print b * 0.9 }'),GB/s,worked by hand"
} >"$tmp/bw.csv"
expect 0 ' 2 ring .* 239\.79 GB/s +[+-]0\.0% ' "$ocsim" validate "$tmp/bw.csv" --out "$tmp/bwv"
awk -F, 'NR == 2 { e = $8 } END { exit !(e * e < 1e-4) }' "$tmp/bwv/validation.csv" && ok ||
  bad "allreduce_busbw: not the ring's closed form ($bw GB/s)"
sed 's/,bytes,/,size,/' "$tmp/bw.csv" >"$tmp/bw2.csv"
expect 2 "bw2.csv:2: no column 'bytes'" "$ocsim" validate "$tmp/bw2.csv" --out "$tmp/bwv"
sed '2s/,ring,/,spiral,/' "$tmp/bw.csv" >"$tmp/bw3.csv"
expect 2 "bw3.csv:2: column 'collective': .*spiral" "$ocsim" validate "$tmp/bw3.csv" --out "$tmp/bwv"

# --mape: 12.56 misses 12 (exit 1), meets 13.
expect 1 'MAPE 15\.8% is above --mape 15%' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v" --mape 15
expect 0 'MAPE 15\.8%' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v" --mape 16
# --max-cards: the 8-GPU rows are skipped, said, and out of the MAPE.
expect 0 'MAPE 18\.4% over 1 rows .*3 skipped' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v" --max-cards 4
expect 0 'skipped: 8 cards > --max-cards 4' "$ocsim" validate "$tmp/t.csv" --out "$tmp/v" --max-cards 4

# The gradient precision column: the memory row with 16-bit gradients
# (grad_reduce_in_fp32 no, Megatron-LM's --no-... ) is 2 + 2 + 12 bytes per
# parameter: 110336 * 16 = 1765376 bytes = 1.68359375 MiB, +5.2 % against
# 1.6; "yes" keeps the bf16 default's 18 bytes (+18.4 %).
{
  echo "$hdr,grad_reduce_in_fp32"
  echo "mem16,,64,4,2,128,1,dgx-a100,tp1-pp1-dp1,1,32,none,no,0,flash,memory_states,1.6,MiB,worked by hand,no"
  echo "mem18,,64,4,2,128,1,dgx-a100,tp1-pp1-dp1,1,32,none,no,0,flash,memory_states,1.6,MiB,worked by hand,yes"
} >"$tmp/g.csv"
expect 0 ' 2 mem16 .* 1\.6836 MiB .* \+5\.2% ' "$ocsim" validate "$tmp/g.csv" --out "$tmp/v"
expect 0 ' 3 mem18 .* 1\.894 MiB .* \+18\.4% ' "$ocsim" validate "$tmp/g.csv" --out "$tmp/v"

# Bad input: one line, exit 2, naming the file, the line and the column.
bad_table() { # NAME SED-EXPRESSION: a copy of t.csv changed by sed
  sed "$2" "$tmp/t.csv" >"$tmp/$1.csv"
}
bad_table unit 's/,ms\/step,/,furlongs,/'
expect 2 "unit.csv:4: column 'unit': unknown unit 'furlongs'" "$ocsim" validate "$tmp/unit.csv" --out "$tmp/v"
bad_table nocol '2s/,unit,/,units,/'
expect 2 "nocol.csv: no column 'unit'" "$ocsim" validate "$tmp/nocol.csv" --out "$tmp/v"
bad_table broken '5s/,made up$/,"made up/'
expect 2 'broken.csv:5' "$ocsim" validate "$tmp/broken.csv" --out "$tmp/v"
bad_table fields '4s/,made up$//'
expect 2 'fields.csv:4: .*fields' "$ocsim" validate "$tmp/fields.csv" --out "$tmp/v"
bad_table layout '5s/tp2-pp2-dp2-mb2/tp2-pp2-dp4-mb2/'
expect 2 'layout.csv:5: layout tp2-pp2-dp4' "$ocsim" validate "$tmp/layout.csv" --out "$tmp/v"
bad_table heads '6s/,1,dgx-a100,tp1-pp1-dp1,/,8,dgx-a100,tp8-pp1-dp1,/'
expect 2 'heads.csv:6: layout tp8-pp1-dp1.*' "$ocsim" validate "$tmp/heads.csv" --out "$tmp/v"
bad_table gb '4s/,16,1024,/,x16,1024,/'
expect 2 "gb.csv:4: column 'global_batch': 'x16'" "$ocsim" validate "$tmp/gb.csv" --out "$tmp/v"
bad_table sp '4s/,none,no,0,/,none,maybe,0,/'
expect 2 "sp.csv:4: column 'sequence_parallel': 'maybe' is not yes or no" "$ocsim" validate "$tmp/sp.csv" --out "$tmp/v"
bad_table rec '4s/,none,no,0,/,sometimes,no,0,/'
expect 2 "rec.csv:4: column 'recompute': --recompute: unknown mode 'sometimes'" "$ocsim" validate "$tmp/rec.csv" --out "$tmp/v"
bad_table src '4s/,made up$/,/'
expect 2 "src.csv:4: column 'source' is empty" "$ocsim" validate "$tmp/src.csv" --out "$tmp/v"
bad_table qty '3s/,step_time,/,step_timing,/'
expect 2 "qty.csv:3: column 'quantity': 'step_timing'" "$ocsim" validate "$tmp/qty.csv" --out "$tmp/v"
bad_table mix '3s/,s\/step,/,GiB,/'
expect 2 "mix.csv:3: column 'unit': 'GiB' is not a unit of step_time" "$ocsim" validate "$tmp/mix.csv" --out "$tmp/v"
bad_table neg '3s/,step_time,[^,]*,/,step_time,-1,/'
expect 2 "neg.csv:3: column 'measured': -1 is not a positive number" "$ocsim" validate "$tmp/neg.csv" --out "$tmp/v"
bad_table model '6s/^mem,,64,/mem,,,/'
expect 2 "model.csv:6: no model: give column 'model'" "$ocsim" validate "$tmp/model.csv" --out "$tmp/v"
bad_table topo '4s/,dgx-a100,/,dgx-z900,/'
expect 2 "topo.csv:4: column 'topology': .*dgx-z900" "$ocsim" validate "$tmp/topo.csv" --out "$tmp/v"
expect 2 "nosuch.csv.*No such file" "$ocsim" validate "$tmp/nosuch.csv"
expect 2 "a validation table is required" "$ocsim" validate --out "$tmp/v"
expect 2 "--mape: 'x' is not a percentage" "$ocsim" validate "$tmp/t.csv" --mape x
expect 2 "unknown option '--bogus'" "$ocsim" validate "$tmp/t.csv" --bogus 1

summary validate
