#!/bin/bash
# "Reboot" test hosts: kill everything in the host, fresh netns (per-netns sysctls reset),
# fresh fake global sysctls, disk scheduler reset to none and rotational to its initial value;
# the upper layer (/etc, ...) and the disk contents persist. With TB_BOOT_EMULATION=1 (default) the
# host then applies modules-load.d, sysctl.d, fstab (mount -a) and udev rules (udevadm test).
# Usage: reboot.sh tb1 tb3   (or: reboot.sh 1 3)
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
exec 9>"$TB_LOCK"; flock 9      # first: a concurrent down must not pull the bed away under us
[ -f "$TB_STATE/config.env" ] || { echo "testbed: no bed is up" >&2; exit 1; }
. "$TB_STATE/config.env"
. "$TB_LIB/hostctl.sh"
idx=(); for h in "$@"; do x=$(tb_index "$h"); [ "$x" -ge 1 ] && [ "$x" -le "$N" ] || { echo "testbed: no host $h" >&2; exit 1; }; idx+=("$x"); done
[ ${#idx[@]} -gt 0 ] || { echo "usage: reboot.sh tbI..." >&2; exit 2; }
T0=$EPOCHREALTIME
pids=(); for i in "${idx[@]}"; do stop_host "$i" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
for i in "${idx[@]}"; do start_host "$i"; done
wait_hosts "${idx[@]}"
write_state
tb_log "rebooted ${*} in $(tb_secs "$T0" "$EPOCHREALTIME")s"
