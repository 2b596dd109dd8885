#!/bin/bash
# Build (once) the Slurm layer of the test bed in $TB_SLURM_LAYER (.cache/testbed-slurm): the
# runner's own Debian munge and Slurm packages (slurmctld, slurmd, slurm-client, basic plugins),
# the libraries they need that the rootfs lacks, and /etc/passwd + /etc/group with the munge and
# slurm users. Every host mounts it as an overlay layer above the rootfs, so `tb.slurm()` can run
# a cluster without rebuilding the rootfs (the bed has no internet for apt). Without those packages
# on the runner it builds nothing and the bed has no Slurm (up --slurm then says so).
# Must not run while hosts use the layer (up.sh tears the old bed down first).
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/common.sh"
L=$TB_SLURM_LAYER
R=$TB_ROOTFS
PKGS="munge libmunge2 slurmd slurmctld slurm-client slurm-wlm-basic-plugins"

if ! versions=$(dpkg-query -W -f '${Package}=${Version} ' $PKGS 2>/dev/null) || [[ "$versions" == *"= "* ]]; then
  rm -rf "$L"
  exit 0
fi
STAMP="v2 $versions $(cat "$R/.tb-ready" "$R/.tb-debootstrap-ok" 2>/dev/null | tr '\n' ' ')"
[ "$(cat "$L/.tb-slurm-ready" 2>/dev/null)" = "$STAMP" ] && exit 0

t0=$EPOCHREALTIME
rm -rf "$L"; mkdir -p "$L"
# copy a file under its canonical directory: bookworm's /lib is a symlink to /usr/lib, and a real
# /lib directory in an upper layer would hide the rootfs's symlink
put() {  # put SRC [follow]: copy SRC (a symlink as a symlink unless follow) into the layer
  local d
  d=$(realpath "$(dirname "$1")")
  mkdir -p "$L$d"
  if [ "${2:-}" = follow ]; then cp -L "$1" "$L$d/"; else cp -a "$1" "$L$d/"; fi
}
for p in $PKGS; do
  dpkg -L "$p" | while read -r f; do
    case "$f" in /usr/share/*|/lib/systemd/*|/etc/init.d/*|/etc/logrotate.d/*) continue ;; esac
    [ -d "$f" ] && continue            # directories, and /lib (a symlink to usr/lib)
    [ -f "$f" ] || [ -L "$f" ] || continue
    put "$f"
  done
done
# Debian names the daemons slurmd-wlm etc. and links slurmd to them through update-alternatives
for f in "$L"/usr/sbin/*-wlm; do [ -e "$f" ] && ln -s "$(basename "$f")" "${f%-wlm}"; done
# shared libraries the rootfs lacks (ldd lists them transitively)
find "$L" -type f \( -perm -u+x -o -name '*.so*' \) -print0 | xargs -0 ldd 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    c=$(realpath "$lib")
    [ -e "$R$c" ] || [ -e "$L$(realpath "$(dirname "$lib")")/$(basename "$lib")" ] || put "$lib" follow
  done
# the packages' system users (their postinst would have added them)
mkdir -p "$L/etc"
cp "$R/etc/passwd" "$L/etc/passwd"; cp "$R/etc/group" "$L/etc/group"
grep -q '^munge:' "$L/etc/passwd" || echo 'munge:x:901:901:munge:/nonexistent:/usr/sbin/nologin' >> "$L/etc/passwd"
grep -q '^slurm:' "$L/etc/passwd" || echo 'slurm:x:902:902:slurm:/nonexistent:/usr/sbin/nologin' >> "$L/etc/passwd"
grep -q '^munge:' "$L/etc/group" || echo 'munge:x:901:' >> "$L/etc/group"
grep -q '^slurm:' "$L/etc/group" || echo 'slurm:x:902:' >> "$L/etc/group"
echo "$STAMP" > "$L/.tb-slurm-ready"
tb_log "slurm layer built in $L ($(du -sh "$L" | cut -f1), $(tb_secs "$t0" "$EPOCHREALTIME")s)"
