#!/usr/bin/env bash
# jobs/local.sh — launch Nereus on this machine with mpirun.
#   jobs/local.sh [-np N] bin/nereus DECK [args...]
# Sets what this kind of machine needs: the run-as-root variables when root,
# oversubscription when N exceeds the cores, waiting ranks that yield the core
# instead of busy-polling, shared-memory transfers without CMA single-copy
# (3-4x faster point-to-point here) in fragments of 128 KiB rather than 32
# (re-cuts 7-15% faster, a step of the wide model with TP and DP 4% faster;
# docs/PERFORMANCE.md), and one BLAS thread per rank.
# --help before PROGRAM prints this; after it, PROGRAM's own (jobs/local.sh bin/nereus --help).
# Exit: PROGRAM's exit status (bin/nereus: 0 ok, 1 the run failed, 2 bad input); 2 for a bad command line.
# See also: jobs/slurm.sbatch (Slurm), bin/nereus --help, README.md "Running".
set -euo pipefail
help() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0; }
case "${1:-}" in -h|--help) help;; esac
np=1
if [ "${1:-}" = "-np" ] || [ "${1:-}" = "-n" ]; then np="$2"; shift 2; fi
case "${1:-}" in -h|--help) help;; esac
[ $# -ge 1 ] || { echo "usage: jobs/local.sh [-np N] PROGRAM [ARGS...]" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl_vader_max_send_size="${OMPI_MCA_btl_vader_max_send_size:-131072}"
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
extra=()
if [ "$np" -gt "$(nproc)" ]; then extra+=(--oversubscribe --bind-to none); fi
exec mpirun "${extra[@]}" -np "$np" "$@"
