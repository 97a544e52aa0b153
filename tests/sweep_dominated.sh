#!/usr/bin/env bash
# sweep_dominated.sh: the dominance rules of tools/sweep_plan.h hold in the
# simulator. With --keep-dominated every variant that fits is simulated
# (--no-prune); for each pair of rows equal in every knob but recompute
# where the rules call one dominated (the other: no recompute; or both full
# recompute and the other of fewer layers), the dominated row's step time
# is no shorter; and every row's bound_s is at most its step. Also: the default sweep skips dominated variants, counts
# them in the summary, and its best step equals the --keep-dominated one's.
# usage: sweep_dominated.sh path/to/ocsim
set -u
ocsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
export LC_ALL=C
top=10

# sweep.csv columns: 9 step_time_s, 21 fits, 24 layout (the label).
# key = label less its recompute token; class: rnone 0, rfull<k> k,
# rfull 1e9, selective (no token) -1.
pairs() {
  awk -F, 'NR > 1 && $21 == 1 && $9 != "" {
    n = split($24, t, "-"); key = ""; r = -1
    for (i = 1; i <= n; i++) {
      if (t[i] == "rnone") r = 0
      else if (t[i] == "rfull") r = 1e9
      else if (t[i] ~ /^rfull[0-9]+$/) r = substr(t[i], 6) + 0
      else key = key "-" t[i]
    }
    rows[key] = rows[key] " " r "=" $9
  }
  END {
    pairs = 0; bad = 0
    for (k in rows) {
      m = split(rows[k], v, " ")
      for (i = 1; i <= m; i++) for (j = 1; j <= m; j++) {
        split(v[i], a, "="); split(v[j], d, "=")
        ra = a[1] + 0; rd = d[1] + 0
        if (!((ra == 0 && rd != 0) || (ra > 0 && rd > ra))) continue
        pairs++
        if (d[2] + 0 < a[2] + 0) { bad++; if (bad <= 3) print "dominated faster: " k " r" rd " " d[2] " < r" ra " " a[2] }
      }
    }
    print pairs " pairs"
    exit (bad > 0 || pairs == 0)
  }' "$1"
}

check() {
  local name=$1
  shift
  "$ocsim" sweep --all-knobs "$@" --top $top --jobs 2 --no-prune --keep-dominated --out "$tmp/$name-k" \
    >"$tmp/$name-k.out" 2>&1 || { bad "$name: --keep-dominated sweep exit $?"; return; }
  "$ocsim" sweep --all-knobs "$@" --top $top --jobs 2 --out "$tmp/$name-d" >"$tmp/$name-d.out" 2>&1 \
    || { bad "$name: default sweep exit $?"; return; }
  local res
  res=$(pairs "$tmp/$name-k/sweep.csv") && ok || bad "$name: $res"
  # every variant simulated (ZeRO-2/3 included): the bound holds (bound.h)
  awk -F, 'NR > 1 && $9 != "" && $25 != "" && $25 + 0 > $9 + 0 { print $24 ": bound " $25 " > " $9; b++ }
           END { exit b > 0 }' "$tmp/$name-k/sweep.csv" >"$tmp/$name.viol" && ok \
    || bad "$name: bound above the simulated step: $(head -3 "$tmp/$name.viol")"
  grep -Eq ' 0 dominated skipped' "$tmp/$name-k.out" && ok || bad "$name: --keep-dominated skipped some"
  grep -Eq ' [1-9][0-9]* dominated skipped' "$tmp/$name-d.out" && ok \
    || bad "$name: no dominated variant skipped: $(grep 'layouts:' "$tmp/$name-d.out")"
  # the best step is the same: a dominated variant is never faster
  local bk bd
  bk=$(awk -F, 'NR == 2 { print $9 }' "$tmp/$name-k/sweep.csv")
  bd=$(awk -F, 'NR == 2 { print $9 }' "$tmp/$name-d/sweep.csv")
  [ -n "$bk" ] && [ "$bk" = "$bd" ] && ok || bad "$name: best step $bd, with dominated $bk"
  echo "  $name: $res; $(grep 'layouts:' "$tmp/$name-d.out" | sed 's/ in [0-9.]* s//')"
}

check tiny8 --cards 8 --model tiny --global-batch 16 --seq 128 --micro-batches 2 --cp 1 \
  --collective auto
check gpt16 --cards 16 --model gpt3-1.3b --global-batch 32 --seq 1024 --micro-batches 1 \
  --sequence-parallel --zero-stage 1 --schedule 1f1b,interleaved:2 --cp 1 --collective auto \
  --rank-order tp-dp-pp --overlap-grad-reduce

summary sweep_dominated
