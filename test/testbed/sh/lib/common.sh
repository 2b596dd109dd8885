# shellcheck shell=bash
# Shared settings of the racksmith test bed (sourced by up.sh, down.sh, reboot.sh, reset.sh,
# host-init.sh). Ported from the verified prototype (shared/reference/testbed-prototype).
#
# Layout (all under the repository, git-ignored):
#   .testbed/ ($TB_STATE)     state: id_ed25519, known_hosts, inventory.yaml, inventory.ini,
#                             hosts.json, ssh_config, config.env, loops-before, losetup.lock
#   .testbed/hosts/tbI/       per host: upper/ work/ merged/ (overlay), diskD.img, disks (table),
#                             ssh_host_ed25519_key (stable for the life of the bed), init.pid,
#                             unshare.pid, sysctl/ (fake global sysctls), console.log
#   .testbed/shared/          shared storage, bind-mounted at $TB_SHARED_MOUNT in every host
#   .cache/testbed-rootfs/    debootstrap rootfs (lower layer), survives down; down --purge drops it
TB_SH=${TB_SH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}   # test/testbed/sh
TB_LIB=$TB_SH/lib
TB_REPO=${TB_REPO:-$(cd "$TB_SH/../../.." && pwd)}
# A second, independent bed on the same machine (e.g. the benchmark's) sets its own state dir AND
# its own global names, e.g.:
#   TB_STATE=$PWD/.testbed-bench TB_BRIDGE=rsbb0 TB_NET=10.78.0 TB_NS_PREFIX=rs-bb TB_VETH_PREFIX=rsbbv
# Its owner and lock files then follow the bridge (/run/racksmith-testbed-rsbb0.{owner,lock}); the
# default bed (rsbr0, .testbed) keeps /run/racksmith-testbed.{owner,lock}.
TB_STATE_DEFAULT=$TB_REPO/.testbed
TB_STATE=${TB_STATE:-$TB_STATE_DEFAULT}
TB_HOSTS=$TB_STATE/hosts
TB_SHARED=$TB_STATE/shared
TB_ROOTFS=${TB_ROOTFS:-$TB_REPO/.cache/testbed-rootfs}      # read-only lower layer
TB_SLURM_LAYER=${TB_SLURM_LAYER:-$TB_REPO/.cache/testbed-slurm}   # runner's munge + Slurm, a layer above the rootfs (build-slurm-layer.sh)
TB_ROOTFS_TARBALL=${TB_ROOTFS_TARBALL:-}      # optional cache: unpacked if present, written after a debootstrap
TB_BRIDGE=${TB_BRIDGE:-rsbr0}
TB_NET=${TB_NET:-10.77.0}                     # /24; runner .1, host tbI = .(10+I)
TB_NS_PREFIX=${TB_NS_PREFIX:-rs-tb}           # netns name = rs-tbI
TB_VETH_PREFIX=${TB_VETH_PREFIX:-rstbv}       # root-side veth = rstbvI (<= 15 chars)
TB_MAC_PREFIX=${TB_MAC_PREFIX:-02:7b:00}      # bridge 02:7b:00:01:00:01, host tbI eth0 02:7b:00:00:II:II
if [ "$TB_BRIDGE" = rsbr0 ]; then _tb_run=/run/racksmith-testbed; else _tb_run=/run/racksmith-testbed-$TB_BRIDGE; fi
TB_OWNER_FILE=${TB_OWNER_FILE:-$_tb_run.owner}   # which bed (checkout or state dir) owns the global names above
TB_LOCK=${TB_LOCK:-$_tb_run.lock}               # serialises up/down/reset/reboot of this bed (global names)
TB_LOOP_LOCK=${TB_LOOP_LOCK:-/run/racksmith-testbed-loop.lock}   # loop device allocation/removal, all beds
unset _tb_run
# The owner file names the checkout for a default-state bed (as it always did), else the state dir.
if [ "$TB_STATE" = "$TB_STATE_DEFAULT" ]; then TB_OWNER_ID=$TB_REPO; else TB_OWNER_ID=$TB_STATE; fi
# A second bed must not share any global name with the default one, or up/down would take it over.
if [ "$TB_STATE" != "$TB_STATE_DEFAULT" ] || [ "$TB_BRIDGE" != rsbr0 ]; then
  if [ "$TB_BRIDGE" = rsbr0 ] || [ "$TB_NET" = 10.77.0 ] || [ "$TB_NS_PREFIX" = rs-tb ] || [ "$TB_VETH_PREFIX" = rstbv ]; then
    echo "testbed: a bed with TB_STATE=$TB_STATE / TB_BRIDGE=$TB_BRIDGE needs its own TB_BRIDGE, TB_NET, TB_NS_PREFIX and TB_VETH_PREFIX (not rsbr0, 10.77.0, rs-tb, rstbv)" >&2
    exit 1
  fi
fi
TB_DISK_SIZE=${TB_DISK_SIZE:-1G}              # sparse; mkfs.xfs needs >= 300 MB
TB_DISKS_PER_HOST=${TB_DISKS_PER_HOST:-1}     # disk 1 rotational=1 (HDD), disk 2 rotational=0 (SSD), alternating
TB_BOOT_EMULATION=${TB_BOOT_EMULATION:-1}     # at host start: modules-load.d, sysctl --system, mount -a, udev coldplug
TB_SHARED_FS=${TB_SHARED_FS:-dir}             # dir (plain directory) | xfs (loop image) | ramfs (no xattrs) | none
TB_SHARED_MOUNT=${TB_SHARED_MOUNT:-/srv/shared}   # where hosts see the shared storage
TB_SHARED_SIZE=${TB_SHARED_SIZE:-2G}          # for TB_SHARED_FS=xfs (sparse)
TB_KUBECTL=${TB_KUBECTL-/usr/bin/kubectl}     # bind-mounted read-only at /usr/local/bin/kubectl in hosts if present
TB_SUITE=${TB_SUITE:-bookworm}
TB_MIRROR=${TB_MIRROR:-http://deb.debian.org/debian}
TB_INCLUDE=${TB_INCLUDE:-openssh-server,util-linux,xfsprogs,attr,kmod,procps,iproute2,e2fsprogs,udev,python3,sudo}
# /proc/sys policy inside hosts (see host-init.sh); keeps the runner's sysctls untouched:
#  - net.* is per network namespace: real and writable
#  - TB_FAKE_SYSCTL_DIRS: whole /proc/sys/<dir> replaced by a per-host writable snapshot
#  - TB_FAKE_SYSCTLS: single keys replaced by a per-host writable file (global kernel.* keys,
#    and net.core.[rw]mem_* / nf_conntrack_max which are read-only in a child netns)
#  - everything else read-only (TB_PROC_SYS_RO=1): writes fail with EROFS instead of leaking
TB_FAKE_SYSCTL_DIRS=${TB_FAKE_SYSCTL_DIRS-fs vm}
TB_FAKE_SYSCTLS=${TB_FAKE_SYSCTLS-kernel.pid_max kernel.threads-max kernel.core_pattern kernel.core_uses_pid kernel.panic kernel.panic_on_oops kernel.kptr_restrict kernel.dmesg_restrict kernel.perf_event_paranoid kernel.randomize_va_space kernel.numa_balancing kernel.printk kernel.hung_task_timeout_secs kernel.keys.maxkeys kernel.keys.maxbytes kernel.unprivileged_bpf_disabled net.core.rmem_max net.core.wmem_max net.core.rmem_default net.core.wmem_default net.core.optmem_max net.netfilter.nf_conntrack_max}
TB_PROC_SYS_RO=${TB_PROC_SYS_RO:-1}
TB_SYS_RO=${TB_SYS_RO:-1}                     # /sys read-only except the host's own block devices
TB_FAKE_SYSFS_MARKER=/var/lib/tb/fake-sysfs    # in a host: its fake kernel-wide sysfs knobs are on (api.ts fakeSysfs)
TB_TRACE=${TB_TRACE:-}                        # 1: host-init.sh traces (timestamps) into hosts/tbI/console.log

tb_ip()     { echo "$TB_NET.$((10 + $1))"; }
tb_ns()     { echo "$TB_NS_PREFIX$1"; }
tb_name()   { echo "tb$1"; }
tb_veth()   { echo "$TB_VETH_PREFIX$1"; }
tb_serial() { echo "RSTB$1D$2"; }              # recorded only: loop devices have no serial
tb_rot()    { echo $(($2 % 2)); }              # tb_rot I D: disk 1 -> 1 (HDD), disk 2 -> 0 (SSD), ...
tb_log()    { printf '[testbed %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
tb_index()  {  # "tb3" | "3" -> 3
  local x=${1#tb}
  [[ "$x" =~ ^[0-9]+$ ]] || { echo "bad host name: $1 (expected tbN)" >&2; return 1; }
  echo "$x"
}
tb_secs()   { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }

# exported so that host-init.sh (run via ip netns exec + unshare) sees the same settings
export TB_SH TB_LIB TB_REPO TB_STATE TB_HOSTS TB_SHARED TB_ROOTFS TB_SLURM_LAYER TB_BRIDGE TB_NET TB_NS_PREFIX TB_VETH_PREFIX TB_MAC_PREFIX \
       TB_DISK_SIZE TB_DISKS_PER_HOST TB_BOOT_EMULATION TB_SHARED_FS TB_SHARED_MOUNT TB_SHARED_SIZE \
       TB_KUBECTL TB_SUITE TB_MIRROR TB_INCLUDE TB_FAKE_SYSCTLS TB_FAKE_SYSCTL_DIRS TB_PROC_SYS_RO TB_SYS_RO TB_TRACE
