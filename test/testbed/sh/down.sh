#!/bin/bash
# Tear down everything up.sh created, and nothing else. Idempotent; safe to run twice.
#   down.sh          keep the cached rootfs (.cache/testbed-rootfs) for a fast next up
#   down.sh --purge  also delete the cached rootfs
# Kills only the host PIDs recorded by up.sh (after checking their command line) and pid-namespace
# inits (tb-init / host-init.sh) found inside our rs-tbN network namespaces; detaches only loop
# devices backed by files under .testbed/.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
PURGE=0
for a in "$@"; do case "$a" in --purge) PURGE=1 ;; *) echo "usage: down.sh [--purge]" >&2; exit 2 ;; esac; done
[ "$(id -u)" = 0 ] || { echo "testbed: must run as root" >&2; exit 1; }
if [ -z "${TB_LOCK_HELD:-}" ]; then exec 9>"$TB_LOCK"; flock 9; export TB_LOCK_HELD=1; fi
T0=$EPOCHREALTIME

# 0. the global names (bridge, netns) belong to another checkout's bed? up.sh (TB_DOWN_FOREIGN=1)
#    needs them and tears that bed down first; a plain down leaves it alone and cleans only its own
#    processes, loop devices, mounts and files
owner=$(cat "$TB_OWNER_FILE" 2>/dev/null || true)
ours_global=1
if [ -n "$owner" ] && [ "$owner" != "$TB_OWNER_ID" ]; then
  if [ -n "${TB_DOWN_FOREIGN:-}" ]; then
    tb_log "the bed of $owner holds $TB_BRIDGE/${TB_NS_PREFIX}N: tearing it down"
    # the owner is a checkout (its bed in <checkout>/.testbed) or the state dir of a second bed
    if [ -d "$owner/test/testbed/sh" ]; then
      TB_DOWN_FOREIGN= TB_REPO=$owner TB_STATE=$owner/.testbed bash "$TB_SH/down.sh"
    else
      TB_DOWN_FOREIGN= TB_STATE=$owner bash "$TB_SH/down.sh"
    fi
  else
    ours_global=0
    tb_log "$TB_BRIDGE/${TB_NS_PREFIX}N belong to the bed of $owner: left alone"
  fi
fi

N=0
[ -f "$TB_STATE/config.env" ] && . "$TB_STATE/config.env"
. "$TB_LIB/hostctl.sh"

# 1. kill each host's PID 1 (SIGKILL to a pid-namespace init kills the whole namespace;
#    its private mounts - overlay root, XFS data disks, bind mounts - go away with it)
pids=()
for H in "$TB_HOSTS"/tb*; do
  [ -d "$H" ] || continue
  stop_host "${H##*/tb}" nowait & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# ... and any host init left in one of our namespaces whose pid file is gone
[ "$ours_global" = 1 ] && for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${TB_NS_PREFIX}[0-9]+$"); do
  for p in $(ip netns pids "$ns" 2>/dev/null); do
    c=$(cmdline_of "$p")
    [[ "$c" == *tb-init* || "$c" == *host-init.sh* ]] && kill -KILL "$p" 2>/dev/null && wait_gone "$p"
  done
done

# 2. root-namespace mounts under .testbed (shared storage with TB_SHARED_FS=ramfs|xfs)
findmnt -rn -o TARGET | grep -E "^$TB_STATE(/|$)" | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done

# 3. loop devices backed by our images (and nothing else), once the killed hosts' mounts are gone
ours=$(losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v s="$TB_STATE/" 'index($2, s) == 1 {print $1}')
# shellcheck disable=SC2086
wait_devs_free $ours
for dev in $ours; do
  for ((k = 0; k < 50; k++)); do losetup -d "$dev" 2>/dev/null && break; sleep 0.1; done
done
# 3b. remove loop device nodes that only exist because we asked loop-control for more
if [ -f "$TB_STATE/loops-before" ] && command -v python3 >/dev/null; then
  exec 8>"$TB_LOOP_LOCK"; flock 8      # another bed may be between creating a loop node and binding it
  extra=()
  for b in /sys/block/loop*; do
    n=${b##*/}
    grep -qx "$n" "$TB_STATE/loops-before" && continue
    [ "$(cat "$b/size")" = 0 ] || continue                     # still bound: not ours to remove
    extra+=("${n#loop}")
  done
  [ ${#extra[@]} -gt 0 ] && python3 - "${extra[@]}" <<'PY' 2>/dev/null || true
import os, fcntl, sys
fd = os.open("/dev/loop-control", os.O_RDWR)
for n in sys.argv[1:]:
    try: fcntl.ioctl(fd, 0x4C81, int(n))   # LOOP_CTL_REMOVE
    except OSError: pass
PY
  exec 8>&-
fi

# 4. network namespaces (veth peers go with them) and the bridge
if [ "$ours_global" = 1 ]; then
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${TB_NS_PREFIX}[0-9]+$"); do
    ip netns del "$ns"
  done
  ip link show "$TB_BRIDGE" >/dev/null 2>&1 && ip link del "$TB_BRIDGE"
  # /run/netns is (re)created by `ip netns add`; drop it again when no namespace is left in it
  if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    mountpoint -q /run/netns && umount /run/netns
    rmdir /run/netns 2>/dev/null || true
  fi
fi

# 5. files
rm -rf "$TB_HOSTS" "$TB_SHARED"
rm -f "$TB_STATE"/{id_ed25519,id_ed25519.pub,known_hosts,inventory.yaml,inventory-ops.yaml,inventory.ini,hosts.json,ssh_config} \
      "$TB_STATE"/{config.env,loops-before,losetup.lock,shared.img,munge.key} "$TB_STATE"/*.tmp
rmdir "$TB_STATE" 2>/dev/null || true
if [ "$PURGE" = 1 ]; then
  rm -rf "$TB_ROOTFS" "$TB_ROOTFS.debootstrap.log" "$TB_SLURM_LAYER"
  rmdir "$(dirname "$TB_ROOTFS")" 2>/dev/null || true   # .cache, when nothing else is cached there
fi
[ "$(cat "$TB_OWNER_FILE" 2>/dev/null)" = "$TB_OWNER_ID" ] && rm -f "$TB_OWNER_FILE"

tb_log "down in $(tb_secs "$T0" "$EPOCHREALTIME")s: netns left=$(ip netns list 2>/dev/null | grep -cE "^${TB_NS_PREFIX}[0-9]+" || true)" \
       "loops left=$(losetup -l -n -O BACK-FILE 2>/dev/null | grep -c "^$TB_STATE/" || true)$([ "$PURGE" = 1 ] && echo ', rootfs purged')"
exit 0
