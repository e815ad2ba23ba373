# tests/workdir.sh — sourced by tests/run.sh and tests/bench/run.sh from the
# repository root: moves into a scratch working directory, build/NAME, so
# that what runs write into their current directory (a deck's default
# NAME.trace.h5, say) lands there and not in the checkout. The directory
# holds links to the repository's bin, build, inputs, jobs, tests and tools,
# so every relative path the scripts and decks use resolves as it does from
# the root. Starts empty on every run.
#   . tests/workdir.sh NAME
nereus_workdir() {
  local name=$1 root
  root=$(pwd)
  rm -rf "build/$name"
  mkdir -p "build/$name"
  local d
  for d in bin build inputs jobs tests tools; do ln -s "$root/$d" "build/$name/$d"; done
  cd "build/$name"
}
nereus_workdir "$1"
