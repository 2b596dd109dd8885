#!/bin/bash
# Build (once) the shared read-only lower layer for all hosts in $TB_ROOTFS (.cache/testbed-rootfs).
#   TB_ROOTFS_TARBALL=/path/rootfs.tar[.zst]: unpacked instead of debootstrapping when it exists;
#   written after a fresh debootstrap when it does not (a cache that survives fresh clones).
# Must not run while hosts use the rootfs (up.sh tears the old bed down first).
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/common.sh"
R=$TB_ROOTFS
K=$(uname -r)

CUSTOMIZE_VERSION=rs2     # bump when the customisation below changes
BASE="$TB_SUITE $TB_MIRROR $TB_INCLUDE"   # a rootfs (or tarball) built from anything else is rebuilt
if [ "$(cat "$R/.tb-ready" 2>/dev/null)" = "$CUSTOMIZE_VERSION" ] && [ -f "$R/lib/modules/$K/modules.builtin" ] &&
   [ "$(cat "$R/.tb-debootstrap-ok" 2>/dev/null)" = "$BASE" ]; then
  exit 0
fi
tarflags() { case "$1" in *.zst) echo --zstd ;; *.gz) echo --gzip ;; *) echo ;; esac; }
t0=$EPOCHREALTIME
fresh=0
mkdir -p "$(dirname "$R")"
if [ "$(cat "$R/.tb-debootstrap-ok" 2>/dev/null)" = "$BASE" ]; then
  tb_log "re-customising existing rootfs $R"
elif [ -n "$TB_ROOTFS_TARBALL" ] && [ -f "$TB_ROOTFS_TARBALL" ] &&
     [ "$(tar -C / $(tarflags "$TB_ROOTFS_TARBALL") -xOf "$TB_ROOTFS_TARBALL" ./.tb-debootstrap-ok 2>/dev/null)" = "$BASE" ]; then
  tb_log "unpacking $TB_ROOTFS_TARBALL"
  rm -rf "$R"; mkdir -p "$R"
  tar -C "$R" $(tarflags "$TB_ROOTFS_TARBALL") -xf "$TB_ROOTFS_TARBALL"
else
  command -v debootstrap >/dev/null || { echo "need debootstrap (apt-get install -y debootstrap) or TB_ROOTFS_TARBALL" >&2; exit 1; }
  rm -rf "$R"; mkdir -p "$R"
  tb_log "debootstrap $TB_SUITE (minbase + $TB_INCLUDE) into $R (once, ~60 s) ..."
  debootstrap --variant=minbase --include="$TB_INCLUDE" "$TB_SUITE" "$R" "$TB_MIRROR" \
    > "$R.debootstrap.log" 2>&1 || { tail -20 "$R.debootstrap.log" >&2; exit 1; }
  fresh=1
fi
echo "$BASE" > "$R/.tb-debootstrap-ok"

# never start services from maintainer scripts inside the rootfs
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"; chmod +x "$R/usr/sbin/policy-rc.d"
# host keys are generated per host by start_host (kept outside the upper layer, copied in at start)
rm -f "$R"/etc/ssh/ssh_host_*
cat > "$R/etc/ssh/sshd_config.d/10-testbed.conf" <<'EOC'
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxStartups 200:30:400
MaxSessions 100
PrintMotd no
EOC
# pam_loginuid cannot work without audit/systemd-logind in a container: make it optional
sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' "$R/etc/pam.d/sshd"
mkdir -p "$R/root/.ssh" && chmod 700 "$R/root/.ssh"
# the operator account: hosts are also reached as `ops` with sudo (become). Its key is installed per
# host by start_host; no password until a test gives it one ('*': key login works, password does not).
chroot "$R" id ops >/dev/null 2>&1 || chroot "$R" useradd -m -u 1000 -U -s /bin/bash ops
chroot "$R" usermod -p '*' ops
mkdir -p "$R/home/ops/.ssh" && chmod 700 "$R/home/ops/.ssh" && chroot "$R" chown -R ops:ops /home/ops
# default sudo policy of the bed: ops may become anyone without a password (tb.setBecome changes it per host)
echo 'ops ALL=(ALL:ALL) NOPASSWD: ALL' > "$R/etc/sudoers.d/10-ops" && chmod 440 "$R/etc/sudoers.d/10-ops"
install -m 755 "$TB_LIB/tb-init" "$R/usr/sbin/tb-init"     # mount point: host-init binds the latest copy on it
mkdir -p "$R/.tb-oldroot" "$R/etc/modules-load.d" "$R/etc/sysctl.d" "$R/etc/udev/rules.d" \
         "$R/etc/security/limits.d" "$R/usr/local/bin" "$R$TB_SHARED_MOUNT"

# Kernel has CONFIG_MODULES=n: everything needed is built in. Teach kmod about the
# built-ins so that `modprobe br_netfilter` etc. exits 0 (lsmod still fails: no /proc/modules).
# Per kernel release: redone when the rootfs (or a cached tarball) meets a new kernel.
mkdir -p "$R/lib/modules/$K"
for m in kernel/net/bridge/br_netfilter kernel/net/bridge/bridge kernel/drivers/net/veth \
         kernel/drivers/net/vxlan/vxlan kernel/drivers/net/macvlan kernel/fs/overlayfs/overlay \
         kernel/fs/xfs/xfs kernel/drivers/block/loop kernel/net/netfilter/nf_conntrack \
         kernel/net/netfilter/nf_nat kernel/net/netfilter/nf_tables kernel/net/ipv4/netfilter/ip_tables \
         kernel/net/ipv4/netfilter/iptable_nat kernel/net/ipv4/netfilter/iptable_filter \
         kernel/net/ipv4/netfilter/iptable_mangle kernel/net/netfilter/xt_conntrack \
         kernel/net/netfilter/xt_MASQUERADE kernel/net/netfilter/xt_mark kernel/net/netfilter/xt_comment \
         kernel/net/netfilter/xt_multiport kernel/net/netfilter/ipset/ip_set kernel/net/sched/sch_htb \
         kernel/fs/fuse/fuse kernel/net/ipv6/ipv6; do
  echo "$m.ko"
done > "$R/lib/modules/$K/modules.builtin"
chroot "$R" depmod "$K" 2>/dev/null

echo "127.0.0.1 localhost" > "$R/etc/hosts"
chroot "$R" apt-get clean
echo "$CUSTOMIZE_VERSION" > "$R/.tb-ready"
tb_log "rootfs ready in $(tb_secs "$t0" "$EPOCHREALTIME") s: $(du -sh "$R" | cut -f1)"

if [ "$fresh" = 1 ] && [ -n "$TB_ROOTFS_TARBALL" ]; then
  mkdir -p "$(dirname "$TB_ROOTFS_TARBALL")"
  tar -C "$R" $(tarflags "$TB_ROOTFS_TARBALL") -cf "$TB_ROOTFS_TARBALL.tmp" . && mv "$TB_ROOTFS_TARBALL.tmp" "$TB_ROOTFS_TARBALL"
  tb_log "rootfs cached in $TB_ROOTFS_TARBALL ($(du -h "$TB_ROOTFS_TARBALL" | cut -f1))"
fi
