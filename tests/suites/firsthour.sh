# tests/suites/firsthour.sh — a new user's first hour (issue 48): nothing at the root a user did not ask for, --help alike everywhere, outputs never overwritten silently, plans checked before step 1
# Each test here failed on the code before its fix: the behaviour a new user met, reproduced.
ROOT=$(cd -P tests/.. && pwd)
W=$LOG/firsthour
mkdir -p "$W"
export ROOT W

section "the checkout"
# no tracked file at the root whose name starts with '-' (a bench once wrote its output to a file named --help)
no_dash_files() { ! git -C "$ROOT" ls-files --full-name -- ':/' | grep -E '^-' ; }
# a benchmark given --help prints its usage and exits 0, and one given an option where its output file
# belongs refuses it: neither leaves a file behind
bench_help_no_file() {
  local d=$W/bench-help b
  rm -rf "$d"; mkdir -p "$d"
  for b in bench_gen bench_step bench_ckpt bench_transition bench_moves bench_tok; do
    (cd "$d" && timeout 20 "$ROOT/build/bench/$b" --help >out 2>err) || { echo "$b --help: exit $?"; return 1; }
    grep -q '^usage: ' "$d/out" || { echo "$b --help: no usage on stdout"; return 1; }
    (cd "$d" && timeout 20 "$ROOT/build/bench/$b" --quick >out 2>err); local rc=$?
    [ $rc = 2 ] || { echo "$b --quick: exit $rc, want 2"; return 1; }
    rm -f "$d/out" "$d/err"
    [ -z "$(ls -A "$d")" ] || { echo "$b left: $(ls -A "$d")"; return 1; }
  done
}
export -f no_dash_files bench_help_no_file
t root-no-dash-files 10 bash -c no_dash_files
t bench-help-no-file 120 bash -c bench_help_no_file
