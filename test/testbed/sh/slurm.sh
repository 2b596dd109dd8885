#!/bin/bash
# A real Slurm cluster on bed hosts: the first host named runs slurmctld (and slurmd), the others
# slurmd; node names = host names, one munge key for all (kept in $TB_STATE/munge.key), one
# partition `all`. Plugins that work in a namespace host without systemd or cgroups:
# proctrack/linuxproc, task/none. The daemons start now and again at every boot of the host
# (/etc/tb-boot.d/50-slurm, run by tb-init); reset drops the whole set-up with the upper layer.
# Waits until sinfo shows every node idle.
# Usage: slurm.sh tb1 tb2 tb3   (or: slurm.sh 1 2 3)
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
exec 9>"$TB_LOCK"; flock 9
[ -f "$TB_STATE/config.env" ] || { echo "testbed: no bed is up" >&2; exit 1; }
. "$TB_STATE/config.env"
. "$TB_LIB/hostctl.sh"
idx=(); for h in "$@"; do x=$(tb_index "$h"); [ "$x" -ge 1 ] && [ "$x" -le "$N" ] || { echo "testbed: no host $h" >&2; exit 1; }; idx+=("$x"); done
[ ${#idx[@]} -gt 0 ] || { echo "usage: slurm.sh tbI..." >&2; exit 2; }
[ -f "${TB_SLURM_LAYER:-}/.tb-slurm-ready" ] ||
  { echo "testbed: no Slurm in this bed: the runner needs munge slurmctld slurmd slurm-client (apt-get install -y ...), then up again" >&2; exit 1; }

in_host() {  # in_host I CMD: sh -c CMD inside host I (all its namespaces), stdin passed on
  local p
  p=$(cat "$(host_dir "$1")/init.pid")
  [[ "$(cmdline_of "$p")" == *tb-init* ]] || { echo "testbed: tb$1 is not running" >&2; return 1; }
  nsenter -t "$p" -a -r -w env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c "$2" 9>&-   # the daemons must not hold the bed lock
}

T0=$EPOCHREALTIME
ctl=tb${idx[0]}
[ -s "$TB_STATE/munge.key" ] || { (umask 077; head -c 1024 /dev/urandom > "$TB_STATE/munge.key.tmp"); mv "$TB_STATE/munge.key.tmp" "$TB_STATE/munge.key"; }
# every host sees the runner's CPUs: its layout, as slurmd itself reports it (memory left at the default)
hw=$(slurmd -C | sed -n '1{s/^NodeName=[^ ]* //;s/ RealMemory=[^ ]*//;p}')
nodes=$(for i in "${idx[@]}"; do printf 'NodeName=tb%d %s State=UNKNOWN\n' "$i" "$hw"; done)
conf="# written by test/testbed/sh/slurm.sh
ClusterName=racksmith-bed
SlurmctldHost=$ctl
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/linear
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
$nodes
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
# the autodetected cgroup/v2 plugin needs /sys/fs/cgroup; v1 initialises without it and, with
# proctrack/linuxproc and task/none, is never used (the hosts share the machine's cgroups)
cgroup="CgroupPlugin=cgroup/v1"
boot='#!/bin/sh
# written by test/testbed/sh/slurm.sh: munged and this host'"'"'s Slurm daemons, at every boot
install -d -o munge -g munge -m 755 /run/munge
runuser -u munge -- /usr/sbin/munged
if [ "$(hostname)" = "$(sed -n "s/^SlurmctldHost=//p" /etc/slurm/slurm.conf)" ]; then /usr/sbin/slurmctld; fi
/usr/sbin/slurmd'
stop='for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
  [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
  for k in $(seq 50); do [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.1; done; rm -f "$f"; done; true'

for i in "${idx[@]}"; do
  in_host "$i" "set -e
$stop
install -d -o munge -g munge -m 700 /etc/munge /var/lib/munge /var/log/munge
install -d -o slurm -g slurm -m 755 /etc/slurm /var/spool/slurmctld /var/log/slurm
install -d -m 755 /var/spool/slurmd /etc/tb-boot.d"
  in_host "$i" 'umask 077; cat > /etc/munge/munge.key; chown munge:munge /etc/munge/munge.key' < "$TB_STATE/munge.key"
  printf '%s\n' "$conf" | in_host "$i" 'cat > /etc/slurm/slurm.conf'
  printf '%s\n' "$cgroup" | in_host "$i" 'cat > /etc/slurm/cgroup.conf'
  printf '%s\n' "$boot" | in_host "$i" 'cat > /etc/tb-boot.d/50-slurm; chmod 755 /etc/tb-boot.d/50-slurm'
  # the daemons must not keep our stdio open (a caller waiting for EOF would hang)
  in_host "$i" '/etc/tb-boot.d/50-slurm </dev/null >>/var/log/tb-boot.log 2>&1'
done

# every node idle (slurmd registered; ReturnToService=2 brings a node back after a restart)
want=${#idx[@]}
for ((k = 0; k < 300; k++)); do
  idle=$(in_host "${idx[0]}" "sinfo -h -N -o '%N %T' 2>/dev/null" | awk '$2 == "idle"' | sort -u | wc -l) || idle=0
  [ "$idle" = "$want" ] && break
  sleep 0.1
done
if [ "$idle" != "$want" ]; then
  echo "testbed: slurm: $idle of $want nodes idle after 30 s:" >&2
  in_host "${idx[0]}" "sinfo -N; tail -5 /var/log/slurm/slurmctld.log" >&2 || true
  exit 1
fi
tb_log "slurm: controller $ctl, nodes $(printf 'tb%s ' "${idx[@]}")idle in $(tb_secs "$T0" "$EPOCHREALTIME")s"
