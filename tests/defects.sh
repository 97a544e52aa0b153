#!/usr/bin/env bash
# defects.sh: the bad inputs of issue 11's defects 1, 3, 6, 7 and 8 as a
# user meets them, each under the bad-input contract: exit code 2, exactly
# one line on stderr holding the words that name the problem (no control
# character, valid UTF-8), nothing on stdout. Under the Asan build a sanitizer report is a second line (or
# another exit code), so each case also proves the input is handled, not
# crashed on.
# usage: defects.sh path/to/ocsim path/to/tests/data
set -u
ocsim=$(realpath "$1")
data=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
# A command that is wrongly accepted writes its files here, not beside the
# caller.
cd "$tmp" || exit 1

# refuse PATTERN command...: exit 2, one stderr line matching PATTERN (ERE),
# an empty stdout; the line holds no control character and is valid UTF-8
# (what a terminal shows is what ocsim wrote). refuse_text TEXT command...:
# the same with TEXT a fixed string (for escapes such as \n and \x1b).
refuse() { refuse_as -E "$@"; }
refuse_text() { refuse_as -F "$@"; }
refuse_as() {
  local how=$1 pattern=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ]; then
    bad "$* -> exit $rc, expected 2; stderr: $(head -c 400 "$tmp/err")"
  elif [ "$lines" -ne 1 ]; then
    bad "$* -> $lines stderr lines, expected 1: $(head -c 600 "$tmp/err")"
  elif [ -s "$tmp/out" ]; then
    bad "$* -> stdout not empty: $(head -c 200 "$tmp/out")"
  elif tr -d '\n' <"$tmp/err" | LC_ALL=C grep -q '[[:cntrl:]]'; then
    bad "$* -> a control character on stderr: $(od -c "$tmp/err" | head -5)"
  elif ! iconv -f UTF-8 -t UTF-8 "$tmp/err" >/dev/null 2>&1; then
    bad "$* -> stderr is not UTF-8: $(od -c "$tmp/err" | head -5)"
  elif ! grep -q "$how" -- "$pattern" "$tmp/err"; then
    bad "$* -> stderr '$(cat "$tmp/err")' lacks /$pattern/"
  else
    ok
  fi
}

# ---- 1. every list parse is bounded ---------------------------------------
# 'all' adds three schedules: the bound was checked as n == 16 per entry.
refuse 'listed twice' "$ocsim" layouts --cards 8 --model tiny --schedule all,all,all,all,all,all
iv=$(seq -s, -f 'interleaved:%g' 3 16)
refuse 'at most 16 schedules' "$ocsim" layouts --cards 8 --model tiny --schedule "$iv,all"
refuse 'at most 16 values' "$ocsim" layouts --cards 8 --model tiny --micro-batches "$(seq -s, 1 17)"
refuse 'listed twice' "$ocsim" layouts --cards 8 --model tiny --micro-batches 1,2,1
refuse 'at most 16 settings' "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2 \
  $(for i in $(seq 17); do printf -- '--cfg network/crosstraffic:0 '; done)
# An output folder so long that "<dir>/sweep.csv" would not fit a path
# buffer: refused before anything is cut short.
long=$(printf 'd%.0s' $(seq 3900))
refuse 'output folder name too long' "$ocsim" simulate --cards 8 --model tiny \
  --layout tp2-pp2-dp2 --global-batch 16 --seq 128 --out "$tmp/$long"

# ---- 3. compare refuses what cannot be compared -------------------------
# NaN or inf passed as "within tolerance" (exit 0), zero gave -inf (exit 1).
cmp=$data/compare
for v in nan inf 0 -0.1; do
  mkdir -p "$tmp/m$v"
  sed 's/^2,2,1,1,1,1f1b,1,selective,0\.1,1280,/2,2,1,1,1,1f1b,1,selective,'"$v"',1280,/' \
    "$cmp/meas/measured.csv" >"$tmp/m$v/measured.csv"
  refuse "measured.csv:4: column 'step_time_s': '$v' is (not a finite number|not positive)" \
    "$ocsim" compare "$cmp/pred" "$tmp/m$v"
done
mkdir -p "$tmp/pinf"
sed 's/^\(2,2,1,1,1,1f1b,1,selective,0\.08,1600,0\.1\),0\.2,/\1,inf,/' "$cmp/pred/simulate.csv" \
  >"$tmp/pinf/simulate.csv"
refuse "simulate.csv:2: column 'mfu': 'inf' is not a finite number" \
  "$ocsim" compare "$tmp/pinf" "$cmp/meas"

# ---- 6. no product of layout sizes overflows ------------------------------
refuse 'TP\*PP\*DP = 1000000000\*1000000000\*1000000000 is more than 1000000000 cards' \
  "$ocsim" simulate --cards 8 --model tiny --layout tp1000000000-pp1000000000-dp1000000000
refuse 'is more than 1000000000 cards' "$ocsim" memory --cards 8 --model tiny \
  --tp 1000000000 --pp 1000000000 --dp 1000000000
# b*s rows times heads and tiles in the cost model (core/cost.c, int64)
cat >"$tmp/long.json" <<'JSON'
{"model_type": "gpt2", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
 "intermediate_size": 256, "vocab_size": 512, "max_position_embeddings": 100000000}
JSON
refuse 'a micro-batch of 1000000000 sequences of 100000000 tokens is more than 1000000000 tokens' \
  "$ocsim" simulate --cards 1 --model "$tmp/long.json" --layout tp1-pp1-dp1 \
  --global-batch 1000000000 --micro-batch 1000000000 --seq 100000000 --out "$tmp/o6"

# ---- 7. user text is echoed escaped and shortened ------------------------
refuse_text "layout 'tp2-pp2-dp2-\x1b[31mred\nx': part '\x1b[31mred\nx' not understood" \
  "$ocsim" simulate --cards 8 --model tiny --layout "$(printf 'tp2-pp2-dp2-\033[31mred\nx')"
refuse_text "part '\xff' not understood" \
  "$ocsim" simulate --cards 8 --model tiny --layout "$(printf 'tp2-pp2-dp2-\377')"
printf '{"model_type": "llama\\n\\u001b[2J", "hidden_size": 64}\n' >"$tmp/type.json"
refuse_text "field 'model_type' is 'llama\n\x1b[2J', which ocsim does not know" \
  "$ocsim" layouts --cards 8 --model "$tmp/type.json"
sed 's/"gpus_per_node"/"gpus\\nper\\u001b": 1, "gpus_per_node"/' "$data/topo_ok.json" >"$tmp/topo.json"
refuse_text "field 'gpus\nper\x1b' is unknown" \
  "$ocsim" layouts --cards 8 --model tiny --topology "$tmp/topo.json"
printf '{"model_type": "llama", "x": \033}\n' >"$tmp/tok.json"
refuse_text "invalid token near '\x1b'" "$ocsim" layouts --cards 8 --model "$tmp/tok.json"
# a CSV cell
mkdir -p "$tmp/cell"
sed 's/^2,2,1,1,1,1f1b,1,selective,0\.1,/2,2,1,1,1,1f1b,1,selective,"0.1\xff\x1b",/' \
  "$cmp/meas/measured.csv" >"$tmp/cell/measured.csv"
refuse_text "column 'step_time_s': '0.1\xff\x1b' is not a number" \
  "$ocsim" compare "$cmp/pred" "$tmp/cell"
# the command line itself
refuse_text "ocsim: unknown command 'sim\x1b[2J' (see ocsim --help)" "$ocsim" "$(printf 'sim\033[2J')"
refuse_text "unknown option '--x\ny'" "$ocsim" compare "$(printf -- '--x\ny')" "$cmp/pred" "$cmp/meas"
# A long --out path under a file: the reason stays in the message.
: >"$tmp/file"
long=$(printf 'e%.0s' $(seq 3700))
refuse 'cannot create folder: Not a directory$' "$ocsim" simulate --cards 8 --model tiny \
  --layout tp2-pp2-dp2 --global-batch 16 --seq 128 --out "$tmp/file/$long"
# A 160-byte UTF-8 name is cut between characters (the table names it).
name=$(printf '\303\251%.0s' $(seq 80))
printf '{"_name_or_path": "%s", "model_type": "gpt2", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 8, "intermediate_size": 256, "vocab_size": 512, "max_position_embeddings": 128}\n' \
  "$name" >"$tmp/name.json"
if "$ocsim" memory --cards 8 --model "$tmp/name.json" --layout tp2-pp2-dp2 --global-batch 16 \
  --seq 128 >"$tmp/out" 2>"$tmp/err" && iconv -f UTF-8 -t UTF-8 "$tmp/out" >/dev/null 2>&1; then
  ok
else
  bad "a 160-byte UTF-8 name: the memory table is not UTF-8: $(head -c 300 "$tmp/out" "$tmp/err")"
fi

# ---- 8. nothing is accepted silently, no word misleads --------------------
refuse "'tp8' and 'tp8' both give tp" "$ocsim" simulate --cards 64 --model tiny \
  --layout tp8-tp8-pp8-dp1
refuse "'gpipe' and 'interleaved' both give the schedule" "$ocsim" simulate --cards 8 \
  --model tiny --layout tp2-pp2-dp2-gpipe-interleaved-1f1b
refuse "'rfull' and 'rnone' both give recompute" "$ocsim" simulate --cards 8 --model tiny \
  --layout tp2-pp2-dp2-rfull-rnone
refuse '--tp 4 and --layout tp8-pp8-dp1 disagree on tp' "$ocsim" simulate --cards 64 \
  --model tiny --layout tp8-pp8-dp1 --tp 4
refuse '--tp 2 and --tp 4 disagree' "$ocsim" simulate --cards 8 --model tiny --tp 2 --tp 4 --pp 2 \
  --dp 1
refuse '--schedule interleaved and --layout tp2-pp2-dp2-gpipe disagree on the schedule' \
  "$ocsim" simulate --cards 8 --model tiny --layout tp2-pp2-dp2-gpipe --schedule interleaved
refuse "$tmp: is a directory" "$ocsim" layouts --cards 8 --model "$tmp"
refuse '--tolerance 10 and --tolerance 20 disagree' "$ocsim" compare --tolerance 10 \
  --tolerance 20 "$cmp/pred" "$cmp/meas"
# Mixtral-8x7B's config relabelled "mistral"; Mistral-7B-v0.1's window.
cat >"$tmp/mixtral.json" <<'JSON'
{"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
 "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
 "vocab_size": 32000, "max_position_embeddings": 32768, "sliding_window": null,
 "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu"}
JSON
refuse "field 'num_local_experts' is 8: a mixture of experts, which ocsim does not model" \
  "$ocsim" layouts --cards 8 --model "$tmp/mixtral.json"
sed 's/"sliding_window": null/"sliding_window": 4096/; s/"num_local_experts": 8, "num_experts_per_tok": 2, //' \
  "$tmp/mixtral.json" >"$tmp/window.json"
refuse "field 'sliding_window' is 4096: sliding-window attention" \
  "$ocsim" layouts --cards 8 --model "$tmp/window.json"

summary defects.sh
