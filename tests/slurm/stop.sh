#!/usr/bin/env bash
# tests/slurm/stop.sh — stop what tests/slurm/setup.sh started: cancel the
# jobs still queued or running, then slurmd, slurmctld and munged, each by
# the pid in its pid file (never by name), waiting until each has exited.
# Only acts on a cluster whose slurm.conf setup.sh wrote. Safe to run twice.
set -uo pipefail

MARK="# written by nereus tests/slurm/setup.sh"
CONF=/etc/slurm/slurm.conf
say() { echo "slurm-stop: $*"; }

if [ ! -f "$CONF" ] || ! grep -qxF "$MARK" "$CONF"; then
  say "no slurm.conf written by tests/slurm/setup.sh: nothing to stop"
  exit 0
fi

# gone PID: exited (a zombie waiting for its parent to reap it counts as gone)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" = Z ]; }

stop_pidfile() { # NAME PIDFILE
  local name=$1 f=$2 pid
  [ -s "$f" ] || { say "$name not running"; return 0; }
  pid=$(cat "$f")
  # a stale pid file (after a reboot) may name another process now: check its name
  if ! kill -0 "$pid" 2>/dev/null || [ "$(cat /proc/"$pid"/comm 2>/dev/null)" != "$name" ]; then
    say "$name not running"; rm -f "$f"; return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 100); do gone "$pid" && break; sleep 0.1; done
  if ! gone "$pid"; then kill -KILL "$pid"; sleep 0.2; say "$name (pid $pid) killed"
  else say "stopped $name (pid $pid)"; fi
  rm -f "$f"
}

if scontrol ping 2>/dev/null | grep -q 'is UP'; then
  if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
    say "cancelling jobs: $(squeue -h -o %i | tr '\n' ' ')"
    scancel --full $(squeue -h -o %i) 2>/dev/null || true
    # let slurmd end the job steps (their processes) before it goes
    for _ in $(seq 150); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
  fi
fi
stop_pidfile slurmd /run/slurmd.pid
stop_pidfile slurmctld /run/slurmctld.pid
stop_pidfile munged /run/munge/munged.pid
