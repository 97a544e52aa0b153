#!/usr/bin/env bash
# sym_fast.sh: the symmetric fidelity (--fidelity sym, sim/replay_sym.c)
# against fast fidelity, on layouts small enough for both: one DP replica
# simulated, the others' traffic charged to its links, must give fast
# mode's figures. Held, per layout, for the columns of simulate.csv
# step_time_s, tokens_per_s, tflops_per_gpu, mfu, bubble_fraction,
# compute_s, tp_comm_s, pp_comm_s, dp_comm_s, exposed_comm_s: relative
# difference at most 1e-6 (the ring's chunks differ by a byte between
# positions, replica 0's sizes stand for all: about 1e-10 s per step;
# the csv prints 9 digits).
# Each case also says which mode must run ("sym": the symmetric mode held,
# from the ocsim_sym debug line; "fold": it held and folded the CP ring,
# CP rank 0 of each stage simulated for its CP group, from its debug
# line, "sym+fold"; "node": one node's replicas simulated for all, a
# flat ring across nodes with several members per node, its steps into
# a node through the NIC, "node+fold" with the fold; "fallback": it fell
# back to fast mode, a tree, a flat ring whose node blocks do not tile
# it, or fast mode simulating every rank), so that a sym that always
# fell back, or never folded, could not pass.
# Cases: tp/pp/dp shapes, both rank orders, overlap on and off, ZeRO-1 on
# and off, interleaved, ring / hier / tree / auto, three topologies (one
# NIC per node; eight NICs, where fast mode simulates every rank; one NIC
# with oversubscribed uplinks), a replica that straddles nodes, ZeRO-2
# and ZeRO-3's per-layer streams, an uneven split with rfull<k>.
# With context parallelism (the gradient group DP x CP holds cp members
# of replica 0): cp 2, 4, 8; the hierarchical ring with replica 0's block
# inside a node (tp1-pp8-dp2-cp4, tp-pp-dp) or sharing it with another
# replica (tp2-pp4-dp4-cp2), a flat ring inside one node (tp1-pp8-dp2-cp4,
# tp-dp-pp) and across nodes one member per node with the CP ring across
# nodes (tp8-pp2-dp2-cp2), a CP group on two nodes (tp4-pp2-dp2-cp4);
# folding the CP ring (CP rank 0 of each stage for its CP group, every CP
# hop of one kind): most of the above, and the CP ring across nodes
# (tp8-pp2-dp2-cp2), llama2-70b (tp2-pp16-dp1-cp2, hier); not
# folded: tp4-pp2-dp2-cp4 (a CP group on two nodes, hops of both kinds);
# a flat ring across nodes with replica 0's block of 8 on a node, its
# step into the next node to the block's first's ~in twin
# (tp1-pp4-dp2-cp8-coll=ring); one node's replicas standing for all
# ("node": flat rings across nodes with 2 to 8 replicas per node, gpt-22b
# dp16 ZeRO-3 on 16 dgx-a100, one NIC per node, oversubscribed uplinks);
# falling back: a tree, a replica straddling nodes. NCCL's multi-rail
# ring (twelfth session): replica 0 alone, its steps to its loops
# (tp1-pp4-dp16 on dgx-a100), and replica 0's CP block of 4 on two nodes
# (tp4-pp2-dp2-cp4, not folded), its steps to the images of its
# neighbours; NVLS inside one node, replica 0 standing for its DP group
# (tp2-pp1-dp4-zero0 on one dgx-h100).
# Three cases were cut as the suite's most expensive (more than two fifths
# of its simulation time between them): tp1-pp4-dp2-cp8-v2 (sym+fold),
# llama2-70b tp1-pp8-dp2-cp4-mb1-1f1b-rnone-order=tp-pp-dp and the
# 64-card sweep's best tp1-pp16-dp1-cp4-mb1-1f1b-rnone (both sym+fold):
# with gcov on a --coverage build (sim/, core/, reports/, tools/, cli/,
# both fidelities, the forked simulation included), every line and branch
# either reaches, in either fidelity, the cases kept reach too.
# usage: sym_fast.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

# expect | cards | model | topology | layout | extra flags
cases=(
  "sym|64|llama2-13b|h100-100g|tp8-pp2-dp4|"
  "sym|64|llama2-13b|h100-100g|tp8-pp2-dp4-noovl-zero0|"
  "sym|64|llama2-13b|h100-100g|tp2-pp2-dp16-coll=hier|"
  "node|64|llama2-13b|h100-100g|tp2-pp2-dp16-coll=ring|"
  "fallback|64|llama2-13b|h100-100g|tp8-pp2-dp4-coll=tree|"
  "sym|64|llama2-13b|h100-100g|tp4-pp2-dp8-v2-order=tp-pp-dp|"
  "sym|64|llama2-13b|h100-100g|tp2-pp4-dp8-noovl-coll=hier|"
  "sym|64|llama2-13b|h100-100g|tp2-pp2-dp16-order=tp-pp-dp|"
  "sym|64|llama2-13b|eth25g|tp8-pp2-dp4|"
  "sym|64|llama2-13b|eth25g|tp4-pp4-dp4-v2-order=tp-pp-dp|"
  "sym|64|gpt3-1.3b|h100-100g|tp1-pp4-dp16-order=tp-pp-dp|"
  "sym|48|gpt3-1.3b|h100-100g|tp4-pp3-dp4|--global-batch 48"
  "sym|64|gpt3-1.3b|dgx-a100|tp8-pp2-dp4-coll=ring|--coarse"
  "sym|64|llama2-13b|dgx-a100|tp2-pp2-dp16-coll=hier|"
  "fallback|48|gpt3-1.3b|h100-100g|tp2-pp3-dp8-order=tp-pp-dp|--global-batch 48"
  "sym|64|llama2-13b|h100-100g|tp4-pp2-dp8-zero3|"
  "sym|64|llama2-13b|h100-100g|tp4-pp2-dp8-zero3-noovl|"
  "sym|64|llama2-13b|h100-100g|tp8-pp2-dp4-zero2|"
  "sym|64|llama2-13b|h100-100g|tp4-pp4-dp4-first8-last8-rfull2|"
  "sym+fold|64|llama2-13b|h100-100g|tp1-pp8-dp2-cp4-order=tp-pp-dp|"
  "sym+fold|64|llama2-13b|h100-100g|tp2-pp4-dp4-cp2|"
  "sym+fold|64|llama2-13b|h100-100g|tp2-pp4-dp4-cp2-noovl-order=tp-pp-dp|"
  "sym+fold|64|llama2-13b|h100-100g|tp2-pp4-dp4-cp2-zero0|"
  "sym+fold|64|llama2-13b|h100-100g|tp8-pp2-dp2-cp2-coll=ring|"
  "sym|64|llama2-13b|h100-100g|tp4-pp2-dp2-cp4|"
  "sym|64|llama2-13b|h100-100g|tp1-pp4-dp2-cp8-coll=ring|"
  "sym+fold|64|llama2-13b|h100-100g|tp1-pp8-dp2-cp4-coll=ring|"
  "sym+fold|64|llama2-13b|dgx-a100|tp2-pp4-dp4-cp2|"
  "sym+fold|64|llama2-13b|eth25g|tp2-pp4-dp4-cp2-order=tp-pp-dp|"
  "fallback|48|gpt3-1.3b|h100-100g|tp1-pp3-dp4-cp4-order=tp-pp-dp|--global-batch 48"
  "fallback|64|llama2-13b|h100-100g|tp2-pp4-dp4-cp2-coll=tree|"
  "node|16|gpt-22b|dgx-a100|tp1-pp1-dp16-mb1-zero3-coll=ring|--global-batch 256 --seq 2048"
  "node|64|gpt3-1.3b|h100-100g|tp1-pp4-dp16-coll=ring|"
  "node|64|llama2-13b|eth25g|tp2-pp2-dp16-noovl-coll=ring|"
  "node|64|llama2-13b|h100-100g|tp1-pp2-dp16-cp2-coll=ring|"
  "node|48|gpt3-1.3b|h100-100g|tp2-pp1-dp24-coll=ring|--global-batch 48"
  "sym+fold|64|llama2-70b|h100-100g|tp2-pp16-dp1-cp2-mb1-1f1b-rnone-coll=hier|"
  "sym|64|gpt3-1.3b|dgx-a100|tp1-pp4-dp16|--collective rails"
  "sym|64|llama2-13b|h100-100g|tp4-pp2-dp2-cp4|--collective rails"
  "sym|8|gpt3-1.3b|dgx-h100|tp2-pp1-dp4-zero0|--global-batch 16 --collective nvls"
)

# Every simulation (each case's fast and sym) goes through a pool of two
# processes, the machine's two cores: a slot frees as soon as its run
# ends, so a short sym run does not leave a core idle until its fast twin
# ends. The checks follow, case by case, once all have run.
simulate() { # N FIDELITY: case N's run at that fidelity; its exit code in N.F.rc
  local c=${cases[$(($1 - 1))]} expect cards model topo layout extra
  IFS='|' read -r expect cards model topo layout extra <<<"$c"
  # shellcheck disable=SC2086
  "$ocsim" simulate --cards "$cards" --model "$model" --topology "$topo" \
    --layout "$layout" $extra --fidelity "$2" --out "$tmp/$1.$2" \
    --log ocsim_sym.thres:debug >"$tmp/$1.$2.out" 2>&1
  echo $? >"$tmp/$1.$2.rc"
}
for i in "${!cases[@]}"; do
  for f in fast sym; do
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    simulate $((i + 1)) $f &
  done
done
wait

for c in "${cases[@]}"; do
  IFS='|' read -r expect cards model topo layout extra <<<"$c"
  n=$((n + 1))
  ranok=1
  for f in fast sym; do
    if [ "$(cat "$tmp/$n.$f.rc" 2>/dev/null)" != 0 ]; then
      echo "FAIL $layout ($f): simulate failed"; sed 's/^/  /' "$tmp/$n.$f.out" | tail -3
      ranok=0
    fi
  done
  [ $ranok = 1 ] || { fail=1; continue; }
  ran=fallback
  grep -q "symmetric mode: replica 0 stands for" "$tmp/$n.sym.out" && ran=sym
  grep -q "symmetric mode: replicas 0\.\.[0-9]* (one node's) stand for" "$tmp/$n.sym.out" && ran=node
  [ $ran != fallback ] && grep -q "symmetric mode: CP rank 0 stands for" "$tmp/$n.sym.out" && ran=$ran+fold
  if [ "$ran" != "$expect" ]; then
    echo "FAIL $layout on $topo: expected $expect, ran $ran"
    grep "symmetric mode" "$tmp/$n.sym.out" | sed 's/^.*DEBUG\] /  /'
    fail=1
  fi
  if ! awk -F, -v lay="$layout" '
      NR == FNR && FNR == 2 { for (i = 9; i <= 18; i++) a[i] = $i; next }
      FNR == 2 {
        for (i = 9; i <= 18; i++) {
          d = a[i] - $i; if (d < 0) d = -d
          m = a[i] < 0 ? -a[i] : a[i]
          if (d > 1e-6 * m + 1e-12) { printf "FAIL %s: column %d fast %s sym %s\n", lay, i, a[i], $i; bad = 1 }
        }
      }
      END { exit bad }' "$tmp/$n.fast/simulate.csv" "$tmp/$n.sym/simulate.csv"; then
    fail=1
  else
    echo "ok   $layout on $topo ($ran): step $(sed -n 2p "$tmp/$n.sym/simulate.csv" | cut -d, -f9) s"
  fi
done
[ "$fail" = 0 ] && echo "sym_fast: $n layouts, sym equals fast"
exit "$fail"
