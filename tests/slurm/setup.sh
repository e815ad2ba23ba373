#!/usr/bin/env bash
# tests/slurm/setup.sh — a real one-node Slurm on this machine, from Debian's
# packages (slurmctld, slurmd, slurm-client, munge), for tests/slurm/run.sh.
# Installs what is missing (root; apt-get, only if missing), writes
# /etc/slurm/slurm.conf (only where there is none or it is ours: it carries
# the marker line below, so a real cluster's file is never overwritten),
# makes the munge key if missing, and starts munged, slurmctld and slurmd as
# plain daemons (no systemd here). Idempotent: a second run finds them up and
# says so. tests/slurm/stop.sh stops them. Details: docs/SLURM.md.
set -euo pipefail

MARK="# written by nereus tests/slurm/setup.sh"
CONF=/etc/slurm/slurm.conf
HOST=$(hostname -s)
LOGDIR=/var/log/slurm
say() { echo "slurm-setup: $*"; }
die() { echo "slurm-setup: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (installs packages, starts daemons)"

# ---- packages: only what is missing; --no-install-recommends keeps it to 6
need=()
for p in slurmctld slurmd slurm-client munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # another apt-get may hold the lock for a while (make deps): wait for it
  apt_opts=(-o DPkg::Lock::Timeout=300 -y -q --no-install-recommends)
  if ! apt-get "${apt_opts[@]}" install "${need[@]}" >/tmp/nereus-slurm-apt.log 2>&1; then
    apt-get -o DPkg::Lock::Timeout=300 -q update >>/tmp/nereus-slurm-apt.log 2>&1 || true
    apt-get "${apt_opts[@]}" install "${need[@]}" >>/tmp/nereus-slurm-apt.log 2>&1 \
      || { tail -20 /tmp/nereus-slurm-apt.log >&2; die "apt-get install ${need[*]} failed (log: /tmp/nereus-slurm-apt.log)"; }
  fi
else
  say "packages present (slurmctld slurmd slurm-client munge)"
fi

# ---- slurm.conf: one node, this host; CPUs=8 so 4-8 ranks fit on any core
# count (config_overrides: slurmd takes the configured CPUs instead of
# draining a node that has fewer); no cgroups, no accounting database.
mkdir -p /etc/slurm "$LOGDIR" /var/spool/slurmctld /var/spool/slurmd
new=$(mktemp)
cat >"$new" <<EOF
$MARK
# A one-node test cluster; tests/slurm/stop.sh stops its daemons.
ClusterName=nereus
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGDIR/jobcomp.log
# finished jobs stay visible to scontrol for 10 minutes (no sacct here)
MinJobAge=600
KillWait=30
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$HOST CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
conf_changed=0
if [ -f "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
  rm -f "$new"
  die "$CONF exists and was not written by this script: not touching a real cluster's configuration"
fi
if ! cmp -s "$new" "$CONF" 2>/dev/null; then
  install -m 644 "$new" "$CONF"
  conf_changed=1
  say "wrote $CONF (node $HOST, CPUs=8)"
fi
rm -f "$new"

# ---- munge: the key (the package usually makes one), then munged as munge
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key
  else dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; fi
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  say "made /etc/munge/munge.key"
fi
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
if munge_ok; then
  say "munged is up"
else
  install -d -o munge -g munge -m 755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge_ok && break; sleep 0.1; done
  munge_ok || die "munged did not start (see /var/log/munge/munged.log)"
  say "started munged (pid $(cat /run/munge/munged.pid 2>/dev/null || echo ?))"
fi

# ---- slurmctld, slurmd
# alive PIDFILE NAME: the pid file names a running NAME (not a stale pid reused)
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null && [ "$(cat /proc/"$(cat "$1")"/comm 2>/dev/null)" = "$2" ]; }
if [ "$conf_changed" = 1 ]; then
  # a configuration change needs fresh daemons
  for d in slurmd slurmctld; do
    if alive /run/$d.pid $d; then kill "$(cat /run/$d.pid)"; say "stopped $d (new slurm.conf)"; sleep 1; fi
  done
fi
if alive /run/slurmctld.pid slurmctld && scontrol ping 2>/dev/null | grep -q 'is UP'; then
  say "slurmctld is up"
else
  /usr/sbin/slurmctld
  for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done
  scontrol ping 2>/dev/null | grep -q 'is UP' || { tail -20 $LOGDIR/slurmctld.log >&2; die "slurmctld did not come up"; }
  say "started slurmctld (pid $(cat /run/slurmctld.pid))"
fi
if alive /run/slurmd.pid slurmd; then
  say "slurmd is up"
else
  /usr/sbin/slurmd
  for _ in $(seq 50); do alive /run/slurmd.pid slurmd && break; sleep 0.1; done
  alive /run/slurmd.pid slurmd || { tail -20 $LOGDIR/slurmd.log >&2; die "slurmd did not start"; }
  say "started slurmd (pid $(cat /run/slurmd.pid))"
fi

# ---- the node: wait until it is usable; resume it if an earlier unclean
# stop left it down or drained
state=""
for i in $(seq 150); do
  state=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null | head -1)
  case "$state" in
    idle*|mixed*|allocated*|completing*) break ;;
    down*|drain*|fail*) [ $((i % 10)) = 1 ] && scontrol update nodename="$HOST" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.2
done
case "$state" in
  idle*|mixed*|allocated*|completing*) ;;
  *) tail -20 $LOGDIR/slurmd.log >&2; die "node $HOST is '$state', not usable" ;;
esac
say "up: $(scontrol ping | head -1); node $HOST $state; srun --mpi= $(srun --mpi=list 2>&1 | sed -n 's/^[[:space:]]\{1,\}//p' | tr '\n' ' ')"
