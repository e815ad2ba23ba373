#!/usr/bin/env bash
# jobs/local.sh — launch Nereus on this machine with mpirun.
#   jobs/local.sh [-np N] bin/nereus DECK [args...]
#   jobs/local.sh --ft [-np N] bin/nereus-ft DECK [args...]
# Sets what this kind of machine needs: the run-as-root variables when root,
# oversubscription when N exceeds the cores, waiting ranks that yield the core
# instead of busy-polling, shared-memory transfers without CMA single-copy
# (3-4x faster point-to-point here) in fragments of 128 KiB rather than 32
# (re-cuts 7-15% faster, a step of the wide model with TP and DP 4% faster;
# docs/PERFORMANCE.md), and one BLAS thread per rank.
# --ft: with fault tolerance: Open MPI 5's mpirun (from $FT_MPI_DIR, default /opt/nereus-ompi5, which
# make deps installs) with --with-ft ulfm, for bin/nereus-ft (make ft): a rank that dies no longer ends the
# job; the survivors shrink and go on (docs/ELASTIC.md). PROGRAM must be linked against that Open MPI.
# --help before PROGRAM prints this; after it, PROGRAM's own (jobs/local.sh bin/nereus --help).
# Exit: PROGRAM's exit status (bin/nereus: 0 ok, 1 the run failed, 2 bad input); 2 for a bad command line.
# See also: jobs/slurm.sbatch (Slurm), bin/nereus --help, README.md "Running".
set -euo pipefail
help() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0; }
case "${1:-}" in -h|--help) help;; esac
np=1 ft=0
if [ "${1:-}" = "--ft" ]; then ft=1; shift; fi
if [ "${1:-}" = "-np" ] || [ "${1:-}" = "-n" ]; then np="$2"; shift 2; fi
if [ "${1:-}" = "--ft" ]; then ft=1; shift; fi
case "${1:-}" in -h|--help) help;; esac
[ $# -ge 1 ] || { echo "usage: jobs/local.sh [--ft] [-np N] PROGRAM [ARGS...]" >&2; exit 2; }
case "$np" in ''|*[!0-9]*|0) echo "jobs/local.sh: -np $np: a positive number of ranks" >&2; exit 2;; esac
# which Open MPI PROGRAM is linked against: the ULFM one under FT_MPI_DIR, or another (Debian's)
ftdir=${FT_MPI_DIR:-/opt/nereus-ompi5}
ulfm_linked=0
# (ldd's output kept whole first: under pipefail, grep -q closing the pipe early fails the pipeline)
libs=""; if prog=$(command -v "$1" 2>/dev/null); then libs=$(env -u LD_PRELOAD ldd "$prog" 2>/dev/null || true); fi
case "$libs" in *"=> $ftdir/lib/libmpi.so"*) ulfm_linked=1;; esac
if [ $ft = 1 ]; then
  info=$("$ftdir/bin/ompi_info" 2>/dev/null || true)
  if [[ $info != *"FT MPI support: yes"* ]]; then
    echo "jobs/local.sh: --ft needs Open MPI 5 with ULFM in $ftdir (FT_MPI_DIR): make deps installs it, make ft" \
         "builds bin/nereus-ft against it" >&2; exit 2
  fi
  if [ $ulfm_linked = 0 ]; then
    echo "jobs/local.sh: --ft: $1 is not linked against $ftdir's Open MPI with ULFM; run bin/nereus-ft" \
         "(make ft builds it)" >&2; exit 2
  fi
elif [ $ulfm_linked = 1 ]; then
  echo "jobs/local.sh: $1 is linked against Open MPI 5 with ULFM ($ftdir): launch it with jobs/local.sh --ft" >&2
  exit 2
fi
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_mpi_yield_when_idle=1
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
extra=()
if [ "$np" -gt "$(nproc)" ]; then extra+=(--oversubscribe --bind-to none); fi
if [ $ft = 1 ]; then
  # Open MPI 5 names the shared-memory transport sm (4.1: vader); its ompio warns that it is untested after a
  # failure, which is why the survivors write no checkpoint with a dead rank's file handle open (docs/ELASTIC.md)
  export OMPI_MCA_btl_sm_single_copy_mechanism=none
  export OMPI_MCA_btl_sm_max_send_size="${OMPI_MCA_btl_sm_max_send_size:-131072}"
  # mpirun --with-ft ulfm exits 0 even when every rank died of a signal: rank 0 of the ranks that finish writes
  # its exit status into NEREUS_EXIT_FILE (bin/nereus-ft), and no file after a 0 means that none finished.
  # mpirun runs in the background so that the file can be read after it; SIGTERM, SIGUSR1 and SIGUSR2 go on
  # to it (it passes them to the ranks) as they would with exec
  NEREUS_EXIT_FILE=$(mktemp "${TMPDIR:-/tmp}/nereus-exit.XXXXXX"); rm -f "$NEREUS_EXIT_FILE"; export NEREUS_EXIT_FILE
  "$ftdir/bin/mpirun" --with-ft ulfm "${extra[@]}" -np "$np" "$@" &
  pid=$!
  for s in TERM USR1 USR2 INT; do trap "kill -$s $pid 2>/dev/null || true" $s; done
  rc=0
  while kill -0 "$pid" 2>/dev/null; do wait "$pid" && rc=0 || rc=$?; done
  status=$(cat "$NEREUS_EXIT_FILE" 2>/dev/null || true); rm -f "$NEREUS_EXIT_FILE"
  if [ "$rc" = 0 ] && [ -z "$status" ] && [[ $(basename "$1") == nereus-ft ]]; then
    echo "jobs/local.sh: no rank of the job finished (every rank died, mpirun --with-ft says 0): exit 1; the newest" \
         "complete checkpoint stays: --restart latest goes on from it" >&2
    exit 1
  fi
  # the file is the job's own word once rank 0 finished: processes spawned to replace ranks ([elastic] respawn)
  # leave as the survivors do, without MPI_Finalize (docs/ELASTIC.md), which mpirun counts as an improper exit
  if [ -n "$status" ]; then rc=$status; fi
  exit "$rc"
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl_vader_max_send_size="${OMPI_MCA_btl_vader_max_send_size:-131072}"
export OMPI_MCA_rmaps_base_oversubscribe=1
exec mpirun "${extra[@]}" -np "$np" "$@"
