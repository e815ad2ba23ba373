# tests/suites/decks.sh — input refused or survived: bad decks, plans and run decks (exit 2, the message), the command line, random mutated decks and damaged files, the deck reference, a cgroup memory limit
section "bad input"
for f in tests/decks/bad/*.deck; do
  bad "deck-$(basename "$f" .deck)" "$(header expect "$f")" bin/nereus "$f"
done
section "bad plans (mpirun, ranks per deck from '# ranks: N')"
for f in tests/decks/bad_plans/*.deck; do
  n=plan-$(basename "$f" .deck)
  note=$(header expect-note "$f")
  [ -z "$note" ] || feeds "$n" "$n-note"
  bad "$n" "$(header expect "$f")" $L -np "$(header ranks "$f")" bin/nereus "$f"
  if [ -n "$note" ] && want "$n-note"; then
    if grep -qE -- "$note" "$LOG/$n.log"; then result "$n-note" 0 0; else result "$n-note" 1 0 "no /$note/"; fi
  fi
done
section "bad run decks: what the job checks at start-up ([planner], [inject], [data]; mpirun, ranks from '# ranks: N')"
for f in tests/decks/bad_runs/*.deck; do
  bad "run-$(basename "$f" .deck)" "$(header expect "$f")" $L -np "$(header ranks "$f")" bin/nereus "$f"
done
bad deck-nonexistent 'no/such\.deck.*(No such file|cannot|does not exist)' bin/nereus tests/decks/no/such.deck
bad deck-directory 'tests/decks.*(directory|cannot read|not a regular)' bin/nereus tests/decks
bad deck-binary 'bin/nereus.*binary' bin/nereus bin/nereus
bad cli-no-deck 'no input deck' bin/nereus
bad cli-unknown-option "unknown option '--bogus'" bin/nereus --bogus inputs/tiny.deck
bad deck-max-seq 'max_seq_short\.deck:[0-9]+: error: .*max_seq' bin/nereus tests/decks/max_seq_short.deck
bad deck-missing-token-file 'tokens_file.*/nonexistent/tokens\.bin' bin/nereus tests/decks/missing_tokens.deck
# 50 decks mutated at random (a fixed seed) from tests/decks/fuzz/, on 1 and 4 ranks and simulated: each runs
# or is refused with a message (make fuzz: more, other seeds)
t deck-fuzz "$(fuzz_to 300)" /usr/bin/python3 tests/test_deck_fuzz.py "$(fuzz_n 50)" "$LOG/fuzz" "$(fuzz_seed 20261204)"
! runs deck-fuzz || grep -E '^(FAIL|fuzz:)' "$LOG/deck-fuzz.log" | sed 's/^/      /'
# 24 damaged checkpoints and traces (tests/test_file_fuzz.py, a fixed seed): every tool that reads them ends
# with a refusal naming the file, or with the results of the undamaged file; none crashes or hangs
t file-fuzz "$(fuzz_to 240)" /usr/bin/python3 tests/test_file_fuzz.py "$(fuzz_n 24)" "$LOG/filefuzz" "$(fuzz_seed 20261205)"
! runs file-fuzz || grep -E '^(FAIL|file fuzz:)' "$LOG/file-fuzz.log" | sed 's/^/      /'

# the committed deck reference is the one the key table generates
if want deck-reference-current; then
  if bin/nereus --deck-reference 2>/dev/null | diff -u inputs/REFERENCE.md - >"$LOG/deck-reference.log"; then result deck-reference-current 0 0
  else result deck-reference-current 1 0 "inputs/REFERENCE.md is stale: bin/nereus --deck-reference > inputs/REFERENCE.md"; fi
fi

# a cgroup's memory limit (what Slurm's --mem sets) is the node's memory for the start-up check: a plan of about
# 5.7 GiB under a 2 GiB limit is refused with the limit named (without the check the kernel killed it, exit 137).
# Skipped where this machine lets no cgroup be made (cgroup v1 memory/ or v2 with the memory controller).
if want memory-cgroup-limit; then
  CGT=$(mktemp -d); sed "s|@WORK@|$CGT|g; s/^n_embd = .*/n_embd = 2048/; s/^n_head = .*/n_head = 64/; s/^policy = payback/policy = off/" \
    tests/decks/fuzz/payback.deck > "$CGT/cg.deck"
  CG=""
  for base in /sys/fs/cgroup/memory /sys/fs/cgroup; do
    d=$base/nereus_test_$$
    if mkdir "$d" 2>/dev/null; then # a real cgroup gets its control files from the kernel (not so a plain tmpfs)
      if [ -e "$d/cgroup.procs" ] && { [ -e "$d/memory.limit_in_bytes" ] || [ -e "$d/memory.max" ]; } && \
         { echo 2147483648 > "$d/memory.limit_in_bytes" || echo 2147483648 > "$d/memory.max"; } 2>/dev/null; then CG=$d; break; fi
      rmdir "$d" 2>/dev/null
    fi
  done
  if [ -n "$CG" ]; then
    bash -c 'echo $$ > "$1/cgroup.procs" && exec bin/nereus "$2"' _ "$CG" "$CGT/cg.deck" >"$LOG/memory-cgroup.out" 2>"$LOG/memory-cgroup.log"; rc=$?
    for i in $(seq 1 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done # MPI's helpers leave it late
    if [ $rc = 2 ] && grep -qE "cg\.deck:[0-9]+: error: the plan does not fit in memory: .*has 2\.0 GiB \(its cgroup's memory limit" "$LOG/memory-cgroup.log"; then
      result memory-cgroup-limit 0 0 "refused under a 2 GiB cgroup limit"
    else result memory-cgroup-limit 1 0 "exit $rc: $(grep -m1 error "$LOG/memory-cgroup.log")"; fi
  else result memory-cgroup-limit 77 0 "no cgroup with a memory limit can be made here"; fi
  rm -rf "$CGT"
fi
