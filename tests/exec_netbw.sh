#!/usr/bin/env bash
# exec_netbw.sh: ocsim-exec --netbw on one machine, through Open MPI's TCP
# transport between local ranks (--mca btl tcp,self over the loopback), each
# group of ranks named a node with --ranks-per-node. Not a timed test: the
# figures vary with the machine's load, so it checks what holds whatever
# they are:
# - every table has nccl-tests' columns, sizes 8 B doubling to --max-msg,
#   count = size (int8) or size / 4 (float), #wrong 0, time > 0,
#   algbw = size / time, busbw = algbw for point-to-point and
#   algbw * 2(n-1)/n for the all-reduce (n = 4 nodes: 1.5), each to the
#   printed rounding, busbw > 0 at the largest size;
# - the written topology parses (`ocsim simulate --topology` runs on it),
#   holds the measured figures (NIC bandwidth = the log's median streaming
#   rate, or with two ranks per node the flows' aggregate / min(2, NICs);
#   NIC latency + switch hops = the log's median latency), and the
#   simulator's DP communication moves with them;
# - one node (no --ranks-per-node), groups that do not divide the ranks,
#   and --netbw with --calibrate are refused with one line, exit 2.
# usage: exec_netbw.sh path/to/ocsim-exec path/to/ocsim [mpirun]
set -u
exe=$1
ocsim=$2
mpirun=${3:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# Open MPI and hwloc leave allocations at exit under the sanitizer build.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi=("$mpirun" --oversubscribe --bind-to none --mca btl tcp,self
     --mca btl_tcp_if_include 127.0.0.1/8)
max=262144

# run NAME NP ARGS...: ocsim-exec --netbw into $tmp/NAME, log $tmp/NAME.log
run() {
  local name=$1 np=$2
  shift 2
  "${mpi[@]}" -np "$np" "$exe" --netbw --timeout 60 --max-msg "$max" --out "$tmp/$name" \
    "$@" >"$tmp/$name.log" 2>&1
}

# tables LOG NTABLES: every nccl-tests table of the log (see the top)
tables() {
  awk -v max="$max" -v want="$2" '
    function fail(m) { print "  " m; bad = 1 }
    function done_table() {
      if (!in_t) return
      if (last != max) fail("table " t ": last size " last ", not " max)
      if (!(lastbus > 0)) fail("table " t ": busbw " lastbus " at the largest size")
      in_t = 0
    }
    /^# (MPI|NCCL) (ping-pong|streaming|all-reduce)/ {
      done_table(); t++; in_t = 1; last = 0; f = 1
      if ($0 ~ /all-reduce/) {
        match($0, /across [0-9]+ nodes/); n = substr($0, RSTART + 7, RLENGTH - 13) + 0
        f = 2 * (n - 1) / n
      }
      next
    }
    /^#/ { next }
    in_t && NF >= 9 && ($3 == "int8" || $3 == "float") {
      size = $1; cnt = $2; time = $6; alg = $7; bus = $8; wrong = $9
      if (size != (last ? 2 * last : 8)) fail("table " t ": size " size " after " last)
      if (cnt != ($3 == "int8" ? size : size / 4)) fail("table " t ": count " cnt " for " size " B")
      if (wrong != "0") fail("table " t ": #wrong " wrong " at " size " B")
      if (!(time > 0)) fail("table " t ": time " time " at " size " B")
      # GB/s from bytes and microseconds, with the printed time rounding
      # (half a unit of its last decimal: 0.4 % at 1.23 us) and that of algbw
      # (0.0005 GB/s at 3 decimals, 0.0006 with slack)
      dec = index(time, ".") ? length(time) - index(time, ".") : 0
      terr = 0.5 * 10 ^ -dec
      a = size / time / 1e3
      a_hi = time > terr ? size / (time - terr) / 1e3 : 1e300
      a_lo = size / (time + terr) / 1e3
      if (alg > a_hi + 0.0006 + 0.002 * a || alg < a_lo - 0.0006 - 0.002 * a)
        fail("table " t ": algbw " alg " for " size " B in " time " us (" a ")")
      if ((bus - alg * f > 0.0005 * (1 + f) + 1e-9) || (alg * f - bus > 0.0005 * (1 + f) + 1e-9))
        fail("table " t ": busbw " bus " is not algbw " alg " x " f)
      last = size; lastbus = bus; rows++
      next
    }
    in_t && NF > 0 { done_table() }
    END { done_table()
          if (t != want) fail(t " tables, not " want)
          exit bad }' "$1"
}

# json_num SECTION KEY FILE: the number of "KEY" inside "SECTION": { ... }
json_num() {
  awk -v sec="\"$1\":" -v key="\"$2\":" '
    $1 == sec { in_s = 1; next }
    in_s && $1 == key { v = $2; sub(/,$/, "", v); print v; exit }
    in_s && /}/ { in_s = 0 }' "$3"
}

# close A B TOL: |A - B| <= TOL
close() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= tol) }'; }

# dp_comm TOPOLOGY: the simulator's dp_comm_s of a layout whose DP crosses nodes
dp_comm() {
  local d=$tmp/sim-$RANDOM
  "$ocsim" simulate --cards 16 --model tiny --layout tp4-pp1-dp4 --global-batch 16 --seq 128 \
    --topology "$1" --out "$d" >"$d.log" 2>&1 || { echo "simulate failed: $(tail -2 "$d.log")"; return 1; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "dp_comm_s") c = i }
           NR == 2 { print $c }' "$d/simulate.csv"
}

# -- four nodes of one rank: h100-100g (one NIC, one switch hop of 0.3 us)
if run four 4 --ranks-per-node 1 --topology h100-100g; then
  why=""
  tables "$tmp/four.log" 3 >"$tmp/four.tab" || why="tables: $(cat "$tmp/four.tab")"
  f=$tmp/four/topology-netbw.json
  line=$(grep '^# median over 3 node pairs' "$tmp/four.log")
  lat_us=$(sed -E 's/.*latency ([0-9.]+) us.*/\1/' <<<"$line")
  bw_gbs=$(sed -E 's/.*streaming ([0-9.]+) GB\/s.*/\1/' <<<"$line")
  nic_bw=$(json_num nic bandwidth_Bps "$f")
  nic_lat=$(json_num nic latency_s "$f")
  hop=$(json_num inter_node latency_s "$f")
  close "$(awk -v b="$nic_bw" 'BEGIN { print b / 1e9 }')" "$bw_gbs" 0.0006 ||
    why="$why nic.bandwidth_Bps $nic_bw is not the median streaming $bw_gbs GB/s;"
  close "$(awk -v l="$nic_lat" -v h="$hop" 'BEGIN { print (l + h) * 1e6 }')" "$lat_us" 0.006 ||
    why="$why nic.latency_s $nic_lat + 1 hop of $hop is not the median latency $lat_us us;"
  grep -q '"nic.bandwidth_Bps": "measured by ocsim-exec --netbw on 4 rank groups' "$f" ||
    why="$why no source for nic.bandwidth_Bps;"
  base_dp=$(dp_comm h100-100g) && new_dp=$(dp_comm "$f") || why="$why $base_dp $new_dp"
  [ -n "$base_dp" ] && [ -n "$new_dp" ] && [ "$base_dp" != "$new_dp" ] ||
    why="$why the simulator's dp_comm_s did not move ($base_dp, $new_dp);"
  [ -z "$why" ] && ok || bad "four nodes: $why"
else
  bad "four nodes: exit code $?: $(tail -5 "$tmp/four.log")"
fi

# -- two nodes of two ranks: dgx-h100 (8 NICs, leaf-spine): the flows table,
#    and the NIC figure = the two flows together / min(2, 8)
if run pairs 4 --ranks-per-node 2 --topology dgx-h100; then
  why=""
  tables "$tmp/pairs.log" 3 >"$tmp/pairs.tab" || why="tables: $(cat "$tmp/pairs.tab")"
  [ "$(grep -c -E '^ +[01] +[0-3] +[0-3] +[0-9.]+$' "$tmp/pairs.log")" = 2 ] ||
    why="$why the flows table has no row per local rank;"
  together=$(awk '$1 == "all" && /together/ { print $4 }' "$tmp/pairs.log")
  nic_bw=$(json_num nic bandwidth_Bps "$tmp/pairs/topology-netbw.json")
  close "$(awk -v b="$nic_bw" 'BEGIN { print b / 1e9 }')" \
        "$(awk -v t="$together" 'BEGIN { print t / 2 }')" 0.0006 ||
    why="$why nic.bandwidth_Bps $nic_bw is not the flows' $together GB/s / 2;"
  grep -q '2 groups of 2 ranks at once' "$tmp/pairs.log" || why="$why no all-reduce per local rank;"
  [ -z "$why" ] && ok || bad "two nodes of two ranks: $why"
else
  bad "two nodes of two ranks: exit code $?: $(tail -5 "$tmp/pairs.log")"
fi

# -- refusals: one line from rank 0, exit 2 (harness.sh's expect would count
#    mpirun's own lines about the exit code)
refused() { # NAME WANT NP ARGS...
  local name=$1 want=$2 np=$3 rc
  shift 3
  run "$name" "$np" "$@"
  rc=$?
  local lines
  lines=$(grep -c '^ocsim-exec: ' "$tmp/$name.log")
  if [ "$rc" -eq 2 ] && [ "$lines" = 1 ] && grep -q -- "$want" "$tmp/$name.log"; then
    ok
  else
    bad "$name: exit code $rc, $lines lines, want '$want': $(head -3 "$tmp/$name.log")"
  fi
}
refused one-node "run on one node" 2
refused groups "--ranks-per-node 3 does not divide the 4 ranks" 4 --ranks-per-node 3
refused both "--netbw and --calibrate measure different things" 2 --calibrate

summary exec_netbw
