#!/usr/bin/env bash
# cli.sh: the `ocsim` command line as a user meets it: exit codes, the one
# line a bad input gets, and the files a command writes.
# usage: cli.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

# The issue's own example: the world size names both numbers.
expect 2 'TP\*PP\*DP.*= 32 does not match 64 cards' "$ocsim" memory --cards 64 --layout tp4-pp4-dp2
expect 0 'stage' "$ocsim" memory --cards 64 --layout tp8-pp8-dp1
# gradients: 358 M parameters on stage 0 at 4 bytes (bf16's default, fp32
# gradients) = 1.43 GB, at 2 with --no-grad-reduce-in-fp32 or fp16 = 716 MB
expect 0 ' 358 M +716 MB +1\.43 GB ' "$ocsim" memory --cards 8 --model gpt3-1.3b --layout tp2-pp2-dp2 --global-batch 16 --seq 1024
expect 0 ' 358 M +716 MB +716 MB ' "$ocsim" memory --cards 8 --model gpt3-1.3b --layout tp2-pp2-dp2 --global-batch 16 --seq 1024 --no-grad-reduce-in-fp32
expect 0 ' 358 M +716 MB +716 MB ' "$ocsim" memory --cards 8 --model gpt3-1.3b --layout tp2-pp2-dp2 --global-batch 16 --seq 1024 --fp16
expect 0 ' 358 M +716 MB +1\.43 GB ' "$ocsim" memory --cards 8 --model gpt3-1.3b --layout tp2-pp2-dp2 --global-batch 16 --seq 1024 --fp16 --accumulate-allreduce-grads-in-fp32
expect 0 'usage: ocsim layouts' "$ocsim" layouts --help
expect 0 'usage: ocsim memory' "$ocsim" memory --help
expect 0 'commands:' "$ocsim" --help
expect 2 'unknown command' "$ocsim" frobnicate
expect 2 '--cards N is required' "$ocsim" layouts
expect 2 "--cards: 'abc' is not an integer" "$ocsim" layouts --cards abc
expect 2 '--cards must be positive \(got -8\)' "$ocsim" layouts --cards -8
expect 2 '--cards must be positive \(got 0\)' "$ocsim" layouts --cards 0
expect 2 "unknown or misplaced option '--bogus'" "$ocsim" layouts --cards 8 --bogus
expect 2 "--model needs a value" "$ocsim" layouts --cards 8 --model
expect 2 "unknown model 'nosuch'.*llama2-70b" "$ocsim" layouts --cards 8 --model nosuch
expect 2 'nosuch.json: no such file' "$ocsim" layouts --cards 8 --model ./nosuch.json
expect 2 'a layout is required' "$ocsim" memory --cards 8
expect 2 "part 'xx3' not understood" "$ocsim" memory --cards 8 --layout tp8-xx3
expect 2 'must name tp, pp and dp' "$ocsim" memory --cards 8 --layout tp8-pp1
expect 2 'num_attention_heads 64 is not divisible by TP 3' "$ocsim" memory --cards 3 --layout tp3-pp1-dp1 --allow-cross-node-tp
expect 2 'num_hidden_layers 80 is not divisible by PP 3' "$ocsim" memory --cards 24 --layout tp8-pp3-dp1
expect 2 'global batch 512 is not divisible by DP\*micro-batch = 3\*1 = 3' "$ocsim" memory --cards 24 --layout tp8-pp1-dp3
expect 2 'TP 16 spans nodes of 8 GPUs' "$ocsim" memory --cards 16 --layout tp16-pp1-dp1 --model gpt3-175b
expect 2 'unknown schedule' "$ocsim" layouts --cards 8 --schedule zigzag
expect 2 'unknown mode' "$ocsim" layouts --cards 8 --recompute some
expect 2 'unexpected argument' "$ocsim" layouts --cards 8 extra

# A broken model file: one line naming the file and where it broke.
printf '{"hidden_size": 64,\n "num_attention_heads": \n}\n' >"$tmp/broken.json"
expect 2 'broken.json:3' "$ocsim" layouts --cards 8 --model "$tmp/broken.json"

# layouts --csv: every row's tp*pp*dp is the card count, and the header has
# the columns the issue names.
"$ocsim" layouts --cards 64 --csv "$tmp/l.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ]; then bad "layouts --cards 64 exit $rc: $(cat "$tmp/err")"; else ok; fi
head -1 "$tmp/l.csv" | grep -q '^tp,pp,dp,micro_batch,num_micro_batches,schedule,.*peak_mem_bytes,.*fits,reason,global_batch,layout,reserve_bytes$' \
  && ok || bad "layouts CSV header: $(head -1 "$tmp/l.csv")"
rows=$(tail -n +2 "$tmp/l.csv" | awk -F, '$1*$2*$3 != 64 {bad++} END {print NR, bad+0}')
[ "${rows#* }" = "0" ] && [ "${rows% *}" -gt 10 ] && ok || bad "layouts CSV rows (count, wrong): $rows"
awk -F, 'NR > 1 && $11 == 1 {fit++} END {exit fit > 0 ? 0 : 1}' "$tmp/l.csv" && ok || bad "no layout of 64 cards fits"

# simulate: one layout, its files, and bad simulator input.
expect 0 'step time' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --global-batch 16 --seq 128 --out "$tmp/sim"
for f in simulate.csv timeline.json pipeline.png pipeline.svg pipeline.gp pipeline.dat; do
  [ -s "$tmp/sim/$f" ] && ok || bad "simulate did not write $f"
done
head -1 "$tmp/sim/simulate.csv" | grep -q '^tp,pp,dp,micro_batch,num_micro_batches,schedule,.*step_time_s,tokens_per_s,tflops_per_gpu,mfu,bubble_fraction,.*tp_comm_s,pp_comm_s,dp_comm_s,exposed_comm_s,peak_mem_bytes,.*fits' \
  && ok || bad "simulate.csv header: $(head -1 "$tmp/sim/simulate.csv")"
grep -q '"traceEvents"' "$tmp/sim/timeline.json" && ok || bad "timeline.json has no traceEvents"
expect 2 'TP\*PP\*DP = 2\*2\*1 = 4 does not match 8 cards' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp1 --out "$tmp/sim"
expect 2 'nosuch.xml' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --platform "$tmp/nosuch.xml" --out "$tmp/sim"
expect 2 'cfg' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --cfg 'no value' --out "$tmp/sim"
expect 2 "unknown algorithm 'bus'" "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --collective bus
expect 2 'Bad config key|network/nosuch' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --global-batch 16 --seq 128 --cfg network/nosuch:1 --out "$tmp/sim"

# --log: SimGrid's log settings reach the simulation; ocsim_replay at debug
# prints one line per replayed op of every simulated rank (fast fidelity:
# the TP-rank-0 ranks), with its index, kind and simulated times. Rank 0's
# lines number its ops, and every op of rank 0 in ops.csv has its line.
"$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --global-batch 16 --seq 128 \
  --out "$tmp/simlog" --log=ocsim_replay.thres:debug >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok || bad "simulate --log exit $rc: $(head -c 300 "$tmp/err")"
sed -n 's/.*\[ocsim_replay\/DEBUG\] rank 0 op \([0-9]*\) \([a-z]*\).* -> .* s$/\1 \2/p' "$tmp/err" \
  >"$tmp/trace0"
n0=$(wc -l <"$tmp/trace0")
last0=$(awk 'END {print $1 + 1}' "$tmp/trace0")
[ "$n0" -gt 10 ] && [ "$n0" -eq "$last0" ] && ok || bad "rank 0 traced $n0 ops, last index $last0"
awk -F, 'NR > 1 && $1 == 0 {print $2, $3}' "$tmp/simlog/ops.csv" | sort >"$tmp/ops0"
sort "$tmp/trace0" | comm -13 - "$tmp/ops0" | grep -q . && bad "ops.csv rows of rank 0 missing in the trace" || ok
grep -q 'ocsim_replay.*rank 1 op' "$tmp/err" && bad "fast fidelity traced rank 1" || ok
"$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 --global-batch 16 --seq 128 \
  --out "$tmp/simlog" >"$tmp/out" 2>"$tmp/err"
[ -s "$tmp/err" ] && bad "simulate without --log wrote to stderr: $(head -c 300 "$tmp/err")" || ok

# sweep: the ranked table, sweep.csv with one row per candidate that is
# legal and fits (rejected.csv, with --rejected-csv, the others with their
# reasons), the report and the plots. Every knob but tp, pp, dp, the micro-batch and the schedule
# fixed (the space of the sweep before issue 12; tests/sweep_prune.sh
# holds the full space), with pruning by bound on.
old_space=("${knobs_fixed[@]}" --schedule 1f1b,interleaved:2)
expect 0 'report: ' "$ocsim" sweep --cards 8 --model tiny --global-batch 16 --seq 128 "${old_space[@]}" --out "$tmp/sweep" --jobs 2 --rejected-csv
header='^tp,pp,dp,micro_batch,num_micro_batches,schedule,vchunks,recompute,step_time_s,tokens_per_s,tflops_per_gpu,mfu,bubble_fraction,compute_s,tp_comm_s,pp_comm_s,dp_comm_s,exposed_comm_s,peak_mem_bytes,device_mem_bytes,fits,reason,global_batch,layout,bound_s$'
for f in sweep.csv rejected.csv; do
  head -1 "$tmp/sweep/$f" | grep -q "$header" && ok || bad "$f header: $(head -1 "$tmp/sweep/$f")"
done
# 8 = 2^3: C(5,2) = 10 (tp, pp, dp) triples x 3 micro-batch sizes x 2
# schedules = 60 candidates: the summary's counts, sweep.csv's rows (each
# simulated or pruned by its bound) and rejected.csv's (each with its
# reason, illegal or out of memory; none simulated) add up to them.
rows=$(tail -n +2 "$tmp/sweep/sweep.csv" | wc -l)
rej=$(tail -n +2 "$tmp/sweep/rejected.csv" | wc -l)
[ $((rows + rej)) -eq 60 ] && [ "$rej" -gt 0 ] && ok \
  || bad "sweep.csv has $rows rows and rejected.csv $rej, expected 60 in all"
read -r nsim npruned noom nillegal < <(sed -n 's/^60 layouts: \([0-9][0-9]*\) simulated.* \([0-9][0-9]*\) pruned by bound, \([0-9][0-9]*\) out of memory, \([0-9][0-9]*\) illegal.*/\1 \2 \3 \4/p' "$tmp/out")
[ -n "${nillegal:-}" ] && [ $((nsim + npruned)) -eq "$rows" ] && [ $((noom + nillegal)) -eq "$rej" ] && ok \
  || bad "summary counts ($nsim simulated, $npruned pruned, $noom out of memory, $nillegal illegal) do not match the tables ($rows, $rej)"
awk -F, 'NR > 1 && ($9 != "" || $22 == "" || $22 ~ /^pruned/)' "$tmp/sweep/rejected.csv" | grep -q . \
  && bad "rejected.csv holds a row that was simulated, pruned or has no reason" || ok
awk -F, 'NR > 1 && $9 == "" && $22 !~ /^pruned: bound /' "$tmp/sweep/sweep.csv" | grep -q . \
  && bad "sweep.csv holds a row neither simulated nor pruned by its bound" || ok
grep -q 'rejected.csv' "$tmp/sweep/report.md" && ok || bad "report.md does not name rejected.csv"
[ "$(grep -c '^| .*: .* | [0-9]* |$' "$tmp/sweep/report.md")" -ge 1 ] && ok || bad "report.md has no rejected counts"
# the first row is the best: it fits and has the most tokens/s of all rows
awk -F, 'NR == 2 {best = $10; fit = $21} NR > 2 && $10 != "" && $10 + 0 > best + 0 && $21 == 1 {worse = 1}
         END {exit (fit == 1 && !worse) ? 0 : 1}' "$tmp/sweep/sweep.csv" && ok || bad "sweep.csv is not ranked"
for f in report.md throughput.png memory.png breakdown.png bubble.png throughput.svg throughput.gp throughput.dat; do
  [ -s "$tmp/sweep/$f" ] && ok || bad "sweep did not write $f"
done
grep -q '## Chosen layout' "$tmp/sweep/report.md" && ok || bad "report.md has no chosen layout"
grep -q '^chosen: ' "$tmp/out" && ok || bad "sweep printed no chosen layout"
# Deterministic: the same sweep again gives the same sweep.csv, byte for byte.
# Without --rejected-csv, no rejected.csv (a stale one in the folder is
# removed) and the same sweep.csv.
mkdir -p "$tmp/sweep2" && cp "$tmp/sweep/rejected.csv" "$tmp/sweep2/"
"$ocsim" sweep --cards 8 --model tiny --global-batch 16 --seq 128 "${old_space[@]}" --out "$tmp/sweep2" --jobs 2 >/dev/null 2>&1
cmp -s "$tmp/sweep/sweep.csv" "$tmp/sweep2/sweep.csv" && ok || bad "two identical sweeps wrote different sweep.csv"
[ ! -e "$tmp/sweep2/rejected.csv" ] && ok || bad "a stale rejected.csv was left without --rejected-csv"

# Long sequences (issue 12): a rotary model beyond its max_position_embeddings
# runs with one warning line naming the config's rope_scaling (or none); a
# learned position table is still refused; cp<N> splits the sequence.
# (`memory` exits 1 when the layout does not fit; 2 would be a refusal.)
"$ocsim" memory --cards 8 --model llama2-70b --layout tp8-pp1-dp1 --global-batch 8 --seq 8192 \
  >"$tmp/out" 2>"$tmp/err"
[ $? -ne 2 ] && grep -q '^stage' "$tmp/out" && ok || bad "llama2-70b at seq 8192 refused: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q '^ocsim: warning: sequence length 8192 exceeds the model.s max_position_embeddings 4096 (no rope_scaling in the config)' "$tmp/err" \
  && ok || bad "no one-line long-sequence warning: $(cat "$tmp/err")"
"$ocsim" memory --cards 16 --model llama3.1-405b --layout tp8-cp2-pp1-dp1 --global-batch 1 --seq 262144 \
  >"$tmp/out" 2>"$tmp/err"
grep -q 'rope_scaling llama3 factor 8 (original 8192 positions)' "$tmp/err" && ok || bad "405B warning does not name rope_scaling: $(cat "$tmp/err")"
"$ocsim" memory --cards 16 --model llama3.1-405b --layout tp8-cp2-pp1-dp1 --global-batch 1 --seq 131072 \
  >"$tmp/out" 2>"$tmp/err"
[ $? -ne 2 ] && [ ! -s "$tmp/err" ] && ok || bad "405B at 131072 tokens warned or was refused: $(cat "$tmp/err")"
expect 2 'sequence length 256 exceeds the model.s max_position_embeddings 128 \(a learned position table\)' \
  "$ocsim" memory --cards 1 --model tiny --layout tp1-pp1-dp1 --global-batch 1 --seq 256
expect 2 'context parallel needs the sequence length 100 divisible by 2\*CP = 8' \
  "$ocsim" memory --cards 4 --model llama-tiny --layout tp1-cp4-pp1-dp1 --global-batch 1 --seq 100

summary cli
