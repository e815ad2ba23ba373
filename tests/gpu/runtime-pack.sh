#!/bin/bash
# Packs the Debian runtime libraries that Nereus binaries need (Open MPI with its plugins,
# parallel HDF5, OpenBLAS, PAPI, inih and what they pull in) into a folder that can travel
# to a machine that lacks them, such as a bare GPU machine with only the CUDA toolkit.
#
#   tests/gpu/runtime-pack.sh OUT BINARY...        here: writes OUT/debs/*.deb and OUT/activate.sh
#   source OUT/activate.sh                         there: unpacks once into /opt/nereus-rt, sets
#                                                  PATH, LD_LIBRARY_PATH, OPAL_PREFIX
#
# libc, libgcc and libstdc++ stay behind (every Linux has them, and newer ones run older code).
# Keep OUT out of git (.git/info/exclude); it is about 25 MB.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUT BINARY..." >&2; exit 2; }
out=$1; shift
for b in "$@"; do [ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }; done
owner() {  # the Debian package that installed a library path (merged /usr makes two spellings)
  local p=$1 q
  for q in "$p" "${p#/usr}" "/usr$p" "$(readlink -f "$p")" "/usr$(readlink -f "$p")" "$(readlink -f "$p" | sed 's|^/usr||')"; do
    dpkg -S "$q" 2>/dev/null | head -n 1 | cut -d: -f1 && return 0
  done
  return 0
}
libs=$( { for b in "$@"; do ldd "$b"; done
          for f in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
            [ -e "$f" ] && ldd "$f" 2>/dev/null; done; } | awk '/=>/ && $3 ~ /^\// {print $3}' | sort -u)
missing=$( { for b in "$@"; do ldd "$b"; done; } | awk '/not found/ {print $1}' | sort -u)
[ -z "$missing" ] || echo "$0: note: not found here either (not packed): $missing" >&2
pkgs=$( { for l in $libs; do owner "$l"; done; echo openmpi-bin; echo openmpi-common; } | sort -u \
        | grep -vE '^(libc6|libgcc-s1|libstdc\+\+6)(:.*)?$' | grep -v '^$')
mkdir -p "$out/debs"
( cd "$out/debs" && apt-get download $pkgs >/dev/null 2>&1 ) || { echo "$0: apt-get download failed (run apt-get update?)" >&2; exit 1; }
cat > "$out/activate.sh" <<'EOT'
# source me: unpacks the packed Debian runtime once into /opt/nereus-rt and points the loader at it
_rt_src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_rt=${NEREUS_RT:-/opt/nereus-rt}
if [ ! -e "$_rt/.unpacked" ]; then
  mkdir -p "$_rt" && for _d in "$_rt_src"/debs/*.deb; do dpkg-deb -x "$_d" "$_rt" || return 1; done && touch "$_rt/.unpacked"
fi
_l=$_rt/usr/lib/x86_64-linux-gnu
export PATH=$_rt/usr/bin:$PATH
export LD_LIBRARY_PATH=$_l/openblas-pthread:$_l/hdf5/openmpi:$_l/openmpi/lib:$_l:$_rt/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$_rt/usr
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset _rt_src _rt _l _d
EOT
n=$(ls "$out/debs" | wc -l); size=$(du -sh "$out/debs" | cut -f1)
echo "packed $n packages ($size) into $out; there: source $out/activate.sh"
