#!/bin/bash
# Bring up N test hosts tb1..tbN on this machine (root only), each with
#   - its own network namespace rs-tbI (veth eth0 -> bridge rsbr0, IP 10.77.0.(10+I); runner 10.77.0.1)
#   - its own root filesystem: overlayfs (lower = cached debootstrap rootfs, upper = per host)
#   - its own mount/pid/uts/ipc namespaces, /proc, filtered /sys/block, minimal /dev
#   - K sparse loop disks (disk 1 rotational=1 "HDD", disk 2 rotational=0 "SSD", alternating),
#     visible only inside that host
#   - sshd on port 22 (root login with the generated key .testbed/id_ed25519)
#   - the shared directory .testbed/shared at /srv/shared
# A previous bed (crash leftovers included) is torn down first, so up always gives fresh hosts.
# Usage: up.sh [--hosts N] [--disks K] [--slurm]   (also: up.sh N [K]; N <= 200, default 3 hosts, 1 disk)
#   --slurm: a Slurm cluster on all hosts (tb1 the controller; sh/slurm.sh)
# Output: .testbed/inventory.yaml, inventory.ini, hosts.json, known_hosts, ssh_config, id_ed25519
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
N=3
K=$TB_DISKS_PER_HOST
SLURM=0
pos=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) N=${2:?}; shift 2 ;;
    --hosts=*) N=${1#*=}; shift ;;
    --disks) K=${2:?}; shift 2 ;;
    --disks=*) K=${1#*=}; shift ;;
    --slurm) SLURM=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) pos+=("$1"); shift ;;
  esac
done
[ ${#pos[@]} -ge 1 ] && N=${pos[0]}
[ ${#pos[@]} -ge 2 ] && K=${pos[1]}
TB_DISKS_PER_HOST=$K

[ "$(id -u)" = 0 ] || { echo "testbed: must run as root" >&2; exit 1; }
[[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] && [ "$N" -le 200 ] || { echo "testbed: --hosts must be 1..200" >&2; exit 1; }
[[ "$K" =~ ^[0-9]+$ ]] && [ "$K" -le 16 ] || { echo "testbed: --disks must be 0..16" >&2; exit 1; }
for t in ip unshare nsenter losetup blkdiscard truncate ssh ssh-keygen setsid flock timeout awk; do
  command -v "$t" >/dev/null || { echo "testbed: missing tool: $t" >&2; exit 1; }
done
exec 9>"$TB_LOCK"; flock 9; export TB_LOCK_HELD=1

T0=$EPOCHREALTIME
# 0. leftovers of a previous bed (ours after a crash, or another checkout's): clean them first
if [ -e "$TB_HOSTS" ] || [ -e "$TB_OWNER_FILE" ] || ip link show "$TB_BRIDGE" >/dev/null 2>&1 ||
   ip netns list 2>/dev/null | grep -qE "^${TB_NS_PREFIX}[0-9]+( |$)"; then
  tb_log "a previous bed is still (partly) there: tearing it down first"
  TB_DOWN_FOREIGN=1 bash "$TB_SH/down.sh"
fi
T0a=$EPOCHREALTIME

mkdir -p "$TB_STATE" "$TB_HOSTS"
echo "$TB_OWNER_ID" > "$TB_OWNER_FILE"   # which bed (checkout, or state dir of a second bed) holds the global names
# loop devices that existed before us (down.sh removes the extra, unbound ones it caused)
ls /sys/block | grep '^loop' > "$TB_STATE/loops-before" || true
# the effective settings, for reboot.sh / reset.sh / down.sh
{
  echo "N=$N"
  for v in TB_DISKS_PER_HOST TB_DISK_SIZE TB_BOOT_EMULATION TB_SHARED_FS TB_SHARED_MOUNT TB_SHARED_SIZE \
           TB_KUBECTL TB_FAKE_SYSCTLS TB_FAKE_SYSCTL_DIRS TB_PROC_SYS_RO TB_SYS_RO TB_ROOTFS TB_SLURM_LAYER; do
    printf '%s=%q\n' "$v" "${!v}"
  done
} > "$TB_STATE/config.env"

# 1. shared lower rootfs (cached across beds in .cache/testbed-rootfs)
bash "$TB_LIB/build-rootfs.sh"
bash "$TB_LIB/build-slurm-layer.sh"    # nothing without the runner's slurm packages
T0b=$EPOCHREALTIME

# 2. client key
ssh-keygen -q -t ed25519 -N '' -C racksmith-testbed -f "$TB_STATE/id_ed25519"

# 3. bridge in the root netns (the runner reaches hosts through it); fixed MAC so it never changes
ip link add "$TB_BRIDGE" address "$TB_MAC_PREFIX:01:00:01" type bridge
ip addr add "$TB_NET.1/24" dev "$TB_BRIDGE"
ip link set "$TB_BRIDGE" up

# 4. shared storage, seen by every host at $TB_SHARED_MOUNT (stands in for the NFS/virtiofs export;
#    the kernel has no NFS/9p/CIFS). dir: a plain directory, bind-mounted by each host.
case "$TB_SHARED_FS" in
  none) ;;
  dir)   mkdir -p "$TB_SHARED" ;;
  ramfs) mkdir -p "$TB_SHARED"; mount -t ramfs "${TB_NS_PREFIX}-shared" "$TB_SHARED" ;;     # no user xattrs: negative tests
  xfs)   mkdir -p "$TB_SHARED"; truncate -s "$TB_SHARED_SIZE" "$TB_STATE/shared.img"
         dev=$(flock "$TB_LOOP_LOCK" losetup -f --show "$TB_STATE/shared.img")
         mkfs.xfs -q "$dev"; mount "$dev" "$TB_SHARED" ;;
  *) echo "testbed: bad TB_SHARED_FS=$TB_SHARED_FS" >&2; exit 1 ;;
esac

. "$TB_LIB/hostctl.sh"

tb_log "starting $N hosts with $K disk(s) each"
for ((i = 1; i <= N; i++)); do start_host "$i"; done
write_known_hosts
T1=$EPOCHREALTIME

# 5. wait until every sshd accepts a real login (host key checked against known_hosts)
wait_hosts $(seq 1 "$N") || { echo "testbed: some hosts failed; see $TB_HOSTS/tb*/console.log, then run down" >&2; exit 1; }
T2=$EPOCHREALTIME

# 6. inventories and hosts.json
write_state

tb_log "$N hosts up: cleanup=$(tb_secs "$T0" "$T0a")s rootfs=$(tb_secs "$T0a" "$T0b")s create=$(tb_secs "$T0b" "$T1")s ssh-ready=$(tb_secs "$T1" "$T2")s total=$(tb_secs "$T0" "$T2")s"
if [ "$SLURM" = 1 ]; then
  flock -u 9    # slurm.sh takes the bed lock itself
  bash "$TB_SH/slurm.sh" $(seq 1 "$N")
fi
echo "inventory: $TB_STATE/inventory.yaml   ssh: ssh -F $TB_STATE/ssh_config tb1" >&2
