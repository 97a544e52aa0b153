#!/usr/bin/env bash
# golden.sh: the outputs a refactoring must leave byte-identical, written
# into one folder so that two builds can be compared with diff -r.
#
#   bash tools/golden.sh build out/golden-before     # on the old commit
#   bash tools/golden.sh build out/golden-after      # on the new one
#   diff -r out/golden-before out/golden-after       # empty: nothing moved
#
# What it runs (each into its own subfolder of OUT):
# - sweep64: `ocsim sweep --cards 64` on the default model and topology:
#   sweep.csv and report.md without its timing line;
# - sim-<layout>-<fast|full>: `ocsim simulate` of tp8-pp8-dp1, tp4-pp4-dp4-v2
#   and tp2-pp16-dp2 on 64 cards of GPT-3 2.7B (32 layers: small enough for
#   full fidelity, divisible by 16 stages): simulate.csv, ops.csv,
#   timeline.json;
# - coll-<algo>[-nozero]: llama2-13b tp4-pp2-dp8 with --collective ring,
#   tree, hier, with and without the distributed optimizer;
# - sched-*: gpipe, recompute none/full, no overlap, classic attention,
#   tp-pp-dp order, coarse rings;
# - layouts64 / memory64: the closed-form commands' CSV;
# - exec-<layout>: ocsim-exec (cpu backend, mpirun) on the tiny model:
#   loss.csv and weights.bin (bitwise: the cpu math must not move). The
#   environment's GOLDEN_EXEC_SUFFIX is appended to these layouts (for
#   example -classic: classic attention, the executor's only attention
#   before issue 10, to compare with outputs written before it).
# Timing lines (wall clock) are cut; everything left is deterministic.
set -euo pipefail
build=${1:?usage: golden.sh BUILD_DIR OUT_DIR}
out=${2:?usage: golden.sh BUILD_DIR OUT_DIR}
ocsim=$build/ocsim
exe=$build/ocsim-exec
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# GPT-3 2.7B (Brown et al. 2020, table 2.1: 32 layers, d_model 2560, 32
# heads of 80), in config.json vocabulary.
cat >"$out/gpt3-2.7b.json" <<'EOF'
{"model_type": "gpt2", "n_layer": 32, "n_embd": 2560, "n_head": 32,
 "n_inner": 10240, "vocab_size": 50257, "n_positions": 2048,
 "tie_word_embeddings": true, "activation_function": "gelu_new"}
EOF

# keep DIR FILE...: the files of a run with timing lines cut; a file over
# 1 MB is kept as its SHA-256 only (DIR/FILE.sha256), so that OUT stays small.
keep() {
  local d=$1
  shift
  mkdir -p "$out/$d"
  for f in "$@"; do
    [ -f "$tmp/$d/$f" ] || { echo "golden: $d/$f was not written" >&2; exit 1; }
    grep -a -v -i -E 'wall|elapsed|took [0-9.]+ ?[mun]?s|seconds of CPU|simulated in' \
      "$tmp/$d/$f" | sed "s#$tmp#TMP#g" >"$tmp/$d/$f.kept" || true
    if [ "$(stat -c %s "$tmp/$d/$f.kept")" -gt 1000000 ]; then
      sha256sum <"$tmp/$d/$f.kept" >"$out/$d/$f.sha256"
    else
      cp "$tmp/$d/$f.kept" "$out/$d/$f"
    fi
  done
}

# the sweep's space before issue 12 (every knob but tp, pp, dp, mb and the
# schedule fixed), every candidate simulated
"$ocsim" sweep --cards 64 --out "$tmp/sweep64" --recompute selective --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --rank-order tp-dp-pp --collective auto --cp 1 \
  --schedule 1f1b,interleaved:2 --no-prune >"$tmp/sweep64.stdout" 2>&1
keep sweep64 sweep.csv report.md
cp "$tmp/sweep64.stdout" "$tmp/sweep64/stdout"
keep sweep64 stdout

for l in tp8-pp8-dp1 tp4-pp4-dp4-v2 tp2-pp16-dp2; do
  for f in fast full; do
    "$ocsim" simulate --cards 64 --model "$out/gpt3-2.7b.json" --layout "$l" \
      --fidelity "$f" --out "$tmp/sim-$l-$f" >"$tmp/sim-$l-$f.stdout"
    cp "$tmp/sim-$l-$f.stdout" "$tmp/sim-$l-$f/stdout"
    keep "sim-$l-$f" simulate.csv ops.csv timeline.json stdout
  done
done

for a in ring tree hier auto; do
  for z in "" --no-shard-optimizer; do
    d="coll-$a${z:+-nozero}"
    "$ocsim" simulate --cards 64 --model llama2-13b --layout tp4-pp2-dp8 \
      --collective "$a" $z --out "$tmp/$d" >/dev/null
    keep "$d" simulate.csv ops.csv
  done
done

sched() { # sched NAME ARGS... (the model: $sched_model, else llama2-13b; a
  # second --model would be refused)
  local n=$1
  shift
  "$ocsim" simulate --cards 64 --model "${sched_model:-llama2-13b}" "$@" \
    --out "$tmp/sched-$n" >/dev/null
  keep "sched-$n" simulate.csv ops.csv timeline.json
}
sched gpipe --layout tp4-pp4-dp4-gpipe --global-batch 32
sched rnone --layout tp8-pp4-dp2-rnone
sched rfull --layout tp8-pp4-dp2-rfull --fidelity full
sched nooverlap --layout tp2-pp4-dp8 --no-overlap-grad-reduce
sched classic --layout tp8-pp2-dp4-classic
sched order --layout tp4-pp4-dp4 --rank-order tp-pp-dp
sched_model=$out/gpt3-2.7b.json sched coarse --layout tp4-pp4-dp4 --coarse --fidelity full
sched eth --layout tp8-pp2-dp4-v2 --topology eth25g

mkdir -p "$out/layouts64" "$out/memory64"
"$ocsim" layouts --cards 64 --csv "$out/layouts64/layouts.csv" >"$out/layouts64/stdout"
"$ocsim" memory --cards 64 --layout tp8-pp8-dp1 --csv "$out/memory64/memory.csv" \
  >"$out/memory64/stdout"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader)
ex() { # ex NAME NP LAYOUT [ARGS...]
  local n=$1 np=$2 l=$3
  shift 3
  "${mpi[@]}" -np "$np" "$exe" --model tiny --global-batch 8 --seq 32 --steps 3 \
    --timeout 60 --layout "$l${GOLDEN_EXEC_SUFFIX:-}" "$@" --out "$tmp/exec-$n" \
    >"$tmp/exec-$n.log" 2>&1
  keep "exec-$n" loss.csv
  sha256sum <"$tmp/exec-$n/weights.bin" >"$out/exec-$n/weights.bin.sha256"
}
ex ref 1 tp1-pp1-dp1-nosp
ex tp2pp2dp2 8 tp2-pp2-dp2-nosp
ex tp4pp1dp2 8 tp4-pp1-dp2-nosp-rfull
ex tp1pp4dp2v2 8 tp1-pp4-dp2-v2-rsel
ex tp2pp4gpipe 8 tp2-pp4-dp1-gpipe-nosp
echo "golden: $(find "$out" -type f | wc -l) files in $out"
