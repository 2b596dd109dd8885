#!/bin/bash
# Reset test hosts to the state right after up: stop, wipe the upper layer (every file the host
# wrote), zero the disks (same loop devices, sparse again), start again. Host keys, IPs and disk
# names are unchanged, so inventory and known_hosts stay valid.
# Usage: reset.sh tb2 tb3   (or: reset.sh 2 3)
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
exec 9>"$TB_LOCK"; flock 9      # first: a concurrent down must not pull the bed away under us
[ -f "$TB_STATE/config.env" ] || { echo "testbed: no bed is up" >&2; exit 1; }
. "$TB_STATE/config.env"
. "$TB_LIB/hostctl.sh"
idx=(); for h in "$@"; do x=$(tb_index "$h"); [ "$x" -ge 1 ] && [ "$x" -le "$N" ] || { echo "testbed: no host $h" >&2; exit 1; }; idx+=("$x"); done
[ ${#idx[@]} -gt 0 ] || { echo "usage: reset.sh tbI..." >&2; exit 2; }
T0=$EPOCHREALTIME
pids=(); for i in "${idx[@]}"; do { stop_host "$i"; wipe_host "$i"; } & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
for i in "${idx[@]}"; do start_host "$i"; done
wait_hosts "${idx[@]}"
write_state
tb_log "reset ${*} in $(tb_secs "$T0" "$EPOCHREALTIME")s"
