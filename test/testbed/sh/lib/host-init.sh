#!/bin/bash
# Runs as PID 1 of a fresh pid+mount+uts+ipc namespace, already inside netns rs-tb<i>
# (started by start_host via: ip netns exec rs-tbI unshare --mount --uts --ipc --pid --fork
#  --propagation private host-init.sh I).
# Builds the host's root (overlay), /proc, /sys, /dev, /run, fake sysctls, then
# pivot_roots into it and execs /usr/sbin/tb-init (reaper, boot emulation, sshd).
set -euo pipefail
i=$1
. "$(dirname "$(readlink -f "$0")")/common.sh"
[ "${TB_TRACE:-}" = 1 ] && { PS4='+ $EPOCHREALTIME '; set -x; }     # trace into tbI/console.log
H=$TB_HOSTS/tb$i
M=$H/merged
DEVS=$(awk '{print $1}' "$H/disks")

# Our PID as seen from the root pid namespace (/proc is still the runner's here).
read -r outer_pid _ < /proc/self/stat
echo "$outer_pid" > "$H/init.pid"

hostname "tb$i"

# the Slurm layer (when the runner has Slurm) sits above the rootfs: binaries present, nothing started
lower=$TB_ROOTFS
[ -f "$TB_SLURM_LAYER/.tb-slurm-ready" ] && lower=$TB_SLURM_LAYER:$TB_ROOTFS
# the previous incarnation's overlay may still be going away (kill is asynchronous): retry on EBUSY
for ((k = 0; ; k++)); do
  mount -t overlay "$TB_NS_PREFIX$i" -o "lowerdir=$lower,upperdir=$H/upper,workdir=$H/work" "$M" && break
  [ "$k" -lt 100 ] || exit 1
  sleep 0.05
done

# the latest PID-1 script, read-only (no rootfs rebuild needed when it changes)
mount --bind "$TB_LIB/tb-init" "$M/usr/sbin/tb-init"
mount -o remount,bind,ro "$M/usr/sbin/tb-init"

# kubectl of the runner (a static binary) for cluster steps run on the hosts
if [ -n "$TB_KUBECTL" ] && [ -x "$TB_KUBECTL" ]; then
  mkdir -p "$M/usr/local/bin"
  [ -e "$M/usr/local/bin/kubectl" ] || : > "$M/usr/local/bin/kubectl"
  mount --bind "$(readlink -f "$TB_KUBECTL")" "$M/usr/local/bin/kubectl"
  mount -o remount,bind,ro "$M/usr/local/bin/kubectl"
fi

# /proc: new instance for the new pid namespace
mount -t proc -o nosuid,nodev,noexec proc "$M/proc"
PS=$M/proc/sys
# never let a test reboot/crash the whole VM (same idea as Docker's masked paths)
[ -e "$M/proc/sysrq-trigger" ] && mount --bind /dev/null "$M/proc/sysrq-trigger"   # absent on this kernel

# /proc/sys policy: per-netns net.* stays real and writable; kernel-global knobs must never
# leak into the VM or other hosts, so they are either per-host fake copies (writable,
# survive until "reboot") or read-only (writes fail loudly with EROFS).
mount --bind "$PS/net" "$PS/net"                       # keeps net.* writable below
snapshot() {  # copy /proc/sys/<dir> into $H/sysctl/<dir> as plain files (once per boot)
  local d=$1 f v
  [ -d "$H/sysctl/$d" ] && return 0
  mkdir -p "$H/sysctl"
  (cd /proc/sys && find "$d" -type d) | (cd "$H/sysctl" && xargs mkdir -p)
  (cd /proc/sys && find "$d" -type f) | while read -r f; do
    v=; { IFS= read -r -d '' v < "/proc/sys/$f" || true; } 2>/dev/null
    printf '%s' "$v" > "$H/sysctl/$f"
  done
}
for d in $TB_FAKE_SYSCTL_DIRS; do                      # default: fs vm (all global)
  [ -d "$PS/$d" ] || continue
  snapshot "$d"
  mount --bind "$H/sysctl/$d" "$PS/$d"
done
mkdir -p "$H/sysctl/key"
for k in $TB_FAKE_SYSCTLS; do                          # single global (or netns read-only) keys
  p="$PS/${k//.//}"
  [ -f "$p" ] || continue
  f="$H/sysctl/key/$k"
  if [ ! -f "$f" ]; then v=; { IFS= read -r -d '' v < "$p" || true; } 2>/dev/null; printf '%s' "$v" > "$f"; fi
  mount --bind "$f" "$p"
done
if [ "$TB_PROC_SYS_RO" = 1 ]; then
  mount --rbind "$PS" "$PS"                            # new top mount carrying the binds above
  mount -o remount,bind,ro "$PS"                       # everything else: read-only
fi

# /sys: new sysfs instance shows this netns' net devices; block devices are global,
# so hide all but our own loop devices under /sys/block.
mount -t sysfs -o nosuid,nodev,noexec sysfs "$M/sys"
for dev in $DEVS; do                                   # own disks stay writable (scheduler, ...)
  n=${dev#/dev/}
  mount --bind "$M/sys/devices/virtual/block/$n" "$M/sys/devices/virtual/block/$n"
done
[ "$TB_SYS_RO" = 1 ] && mount -o remount,bind,ro "$M/sys"   # e.g. THP knobs: EROFS, no leak
mount -t tmpfs -o mode=755,size=64k tb-sysblock "$M/sys/block"
for dev in $DEVS; do
  n=${dev#/dev/}
  ln -s "../devices/virtual/block/$n" "$M/sys/block/$n"
done

# Kernel-wide knobs (transparent hugepages, KSM, cpufreq): a writable per-host fake served over
# FUSE by fake-sysfs.py, for hosts that opted in (tb.fakeSysfs: a marker in the upper layer, so it
# holds across reboots and a reset drops it). Each reboot starts a new server from the kernel's
# values: what a family persisted must bring its setting back.
if [ -e "$H/upper$TB_FAKE_SYSFS_MARKER" ]; then
  fs=$H/fake-sysfs; mkdir -p "$fs"
  thp=/sys/kernel/mm/transparent_hugepage
  en=$(cat "$thp/enabled" 2>/dev/null || echo 'always [madvise] never')
  df=$(cat "$thp/defrag" 2>/dev/null || echo 'always defer defer+madvise [madvise] never')
  cpus=(/sys/devices/system/cpu/cpu[0-9]*)
  exec {fsr}< <(exec python3 "$TB_LIB/fake-sysfs.py" "$fs" "${#cpus[@]}" "$en" "$df")
  ready=; read -r ready <&"$fsr" || :
  [ "$ready" = ready ] || { echo "fake sysfs: the server did not start" >&2; exit 1; }
  exec {fsr}<&-
  over() {  # bind $1 over $2, made first (as $1's kind) where it is missing
    if [ ! -e "$2" ]; then if [ -d "$1" ]; then mkdir "$2"; else : > "$2"; fi; fi
    mount --bind "$1" "$2"
  }
  for k in transparent_hugepage/enabled transparent_hugepage/defrag ksm/run; do
    [ -e "$M/sys/kernel/mm/$k" ] && over "$fs/$k" "$M/sys/kernel/mm/$k"   # a kernel without it keeps none
  done
  for c in "${cpus[@]}"; do
    n=${c##*/}; t=$M/sys/devices/system/cpu/$n
    if [ -d "$t/cpufreq" ]; then
      for k in scaling_governor scaling_available_governors; do over "$fs/$n/$k" "$t/cpufreq/$k"; done
    else
      # no cpufreq here (a VM): a tmpfs in place of cpuN carries its real entries (read-only) and ours
      mount -t tmpfs -o mode=755,size=64k tb-cpu "$t"
      for e in "$c"/*; do
        if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$t/${e##*/}"
        else over "$e" "$t/${e##*/}"; mount -o remount,bind,ro "$t/${e##*/}"; fi
      done
      over "$fs/$n" "$t/cpufreq"
    fi
  done
fi

# /dev: minimal tmpfs with only this host's loop devices
D=$M/dev
mount -t tmpfs -o mode=755,size=1m,nosuid tb-dev "$D"
mknod -m 666 "$D/null" c 1 3
mknod -m 666 "$D/zero" c 1 5
mknod -m 666 "$D/full" c 1 7
mknod -m 666 "$D/random" c 1 8
mknod -m 666 "$D/urandom" c 1 9
mknod -m 666 "$D/tty" c 5 0
mkdir -p "$D/pts" "$D/shm" "$D/mqueue"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$D/pts"
ln -s pts/ptmx "$D/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tb-shm "$D/shm"
mount -t mqueue mqueue "$D/mqueue"
ln -s /proc/self/fd "$D/fd"
ln -s /proc/self/fd/0 "$D/stdin"
ln -s /proc/self/fd/1 "$D/stdout"
ln -s /proc/self/fd/2 "$D/stderr"
for dev in $DEVS; do
  mm=$(cat "/sys/block/${dev#/dev/}/dev")     # e.g. 7:3 (read from the real sysfs)
  mknod -m 660 "$D${dev#/dev}" b "${mm%%:*}" "${mm##*:}"
  chgrp 6 "$D${dev#/dev}"                     # disk group
done
mknod -m 666 "$D/fuse" c 10 229

# shared storage (same files in every host; stands in for the NFS/virtiofs jail export)
if [ "$TB_SHARED_FS" != none ] && [ -d "$TB_SHARED" ]; then
  mkdir -p "$M$TB_SHARED_MOUNT"
  mount --bind "$TB_SHARED" "$M$TB_SHARED_MOUNT"
fi

# /run: tmpfs (sshd privsep dir lives here)
mount -t tmpfs -o mode=755,nosuid,nodev,size=16m tb-run "$M/run"
mkdir -p "$M/run/sshd" "$M/run/lock"
[ "$TB_BOOT_EMULATION" = 1 ] && touch "$M/run/tb-boot"

cd "$M"
mkdir -p .tb-oldroot
pivot_root . .tb-oldroot
exec /usr/sbin/chroot . /usr/sbin/tb-init
