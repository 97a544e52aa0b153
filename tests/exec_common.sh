# exec_common.sh: what the mpirun checks of the executor share
# (exec_equivalence.sh: the GPT-2 block on tiny; exec_equivalence_llama.sh:
# the Llama block on llama-tiny), sourced after setting
#   exe, wdiff, mpirun   ocsim-exec, ocsim-weights-diff, the mpirun to use
#   tmp                  a scratch folder (the caller removes it)
#   common=(...)         the arguments of every run (model, batch, steps)
#   loss_tol             the relative loss difference a layout may show
# It sets the environment of every run (Open MPI as root, more ranks than
# cores, shared memory, one BLAS thread, no LeakSanitizer) and defines:
#   ok / bad MSG           count a check passed / failed (bad prints MSG)
#   run NAME NP ARGS...    ocsim-exec into $tmp/NAME, output in $tmp/NAME.log
#   same_losses A B TOL    every step of B's loss.csv within TOL of A's
#   check NAME NP ARGS...  run, then losses within loss_tol of $tmp/ref,
#                          weights within 1e-5 (model) and 1e-2 (tensor),
#                          every replica bitwise equal
#   refused NAME PATTERN NP ARGS...  one ocsim-exec line matching PATTERN,
#                          a non-zero exit, nothing written
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Open MPI as root in CI containers; more ranks than cores; shared memory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# Under the sanitizer build, Open MPI, hwloc and OpenBLAS leave allocations
# at exit that LeakSanitizer reports (none from ocsim: the model code's leaks
# are checked in-process by test_exec_gpt). Address and UB checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi=("$mpirun" --oversubscribe --bind-to none --mca btl self,vader)

run() {
  local name=$1 np=$2
  shift 2
  "${mpi[@]}" -np "$np" "$exe" "${common[@]}" --out "$tmp/$name" "$@" \
    >"$tmp/$name.log" 2>&1
}

same_losses() {
  awk -F, -v tol="$3" '
    NR == FNR { if (FNR > 1) ref[$1] = $2; n++; next }
    FNR > 1 { m++; r = ($2 - ref[$1]) / ref[$1]; if (r < 0) r = -r;
              if (!($1 in ref) || r > tol) { bad = 1; print "  step " $1 ": " $2 " vs " ref[$1] } }
    END { if (m + 1 != n || m == 0) { bad = 1; print "  " m " steps vs " n - 1 }; exit bad }' \
    "$1/loss.csv" "$2/loss.csv"
}

check() {
  local name=$1 rc
  run "$@"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$name: exit code $rc: $(tail -5 "$tmp/$name.log")"
    return
  fi
  local why=""
  same_losses "$tmp/ref" "$tmp/$name" "$loss_tol" >"$tmp/$name.cmp" || why="losses differ: $(cat "$tmp/$name.cmp")"
  "$wdiff" --tol 1e-5 --tensor-tol 1e-2 "$tmp/$name/weights.bin" "$tmp/ref/weights.bin" \
    >"$tmp/$name.wd" 2>&1 || why="$why weights: $(cat "$tmp/$name.wd")"
  grep -q '^replicas: every DP replica' "$tmp/$name.log" || why="$why replicas differ: $(grep warning "$tmp/$name.log")"
  [ -z "$why" ] && ok || bad "$name: $why"
}

refused() {
  local name=$1 pattern=$2
  shift 2
  run "$name" "$@"
  local rc=$? lines
  lines=$(grep -c '^ocsim-exec:' "$tmp/$name.log")
  if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -Eq "$pattern" "$tmp/$name.log" ||
     [ -e "$tmp/$name" ]; then
    bad "$name: exit $rc, $lines ocsim-exec lines: $(head -3 "$tmp/$name.log")"
  else
    ok
  fi
}
