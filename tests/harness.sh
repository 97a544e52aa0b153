# harness.sh: the helpers the command-line tests share; source it after
# setting $tmp (a scratch folder). Counts in $pass and $fail; end the script
# with `summary NAME` for the closing line "NAME: N passed, M failed".
pass=0
fail=0

# The knobs of the sweep before issue 12's knob search, each at its default
# value, with its schedules (--core-knobs): tests that pin that
# space pass these, whatever the default space becomes.
knobs_fixed=(--core-knobs --recompute selective --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --rank-order tp-dp-pp --collective auto --cp 1)

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- command...: exit code CODE, stderr a single line
# matching PATTERN (for CODE 2), or stdout matching PATTERN (otherwise).
expect() {
  local code=$1 pattern=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    bad "$* -> exit $rc, expected $code; stderr: $(head -c 300 "$tmp/err")"
    return
  fi
  if [ "$code" -eq 2 ]; then
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$lines" -ne 1 ]; then
      bad "$* -> $lines stderr lines, expected 1: $(cat "$tmp/err")"
      return
    fi
    grep -Eq -- "$pattern" "$tmp/err" || { bad "$* -> stderr '$(cat "$tmp/err")' lacks /$pattern/"; return; }
  else
    grep -Eq -- "$pattern" "$tmp/out" || { bad "$* -> stdout lacks /$pattern/"; return; }
  fi
  ok
}

summary() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
