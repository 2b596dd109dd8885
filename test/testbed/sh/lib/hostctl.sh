# shellcheck shell=bash
# Host lifecycle for the test bed: start_host / stop_host / wipe_host / wait_hosts / write_state.
# Sourced by up.sh, down.sh, reboot.sh, reset.sh after lib/common.sh; needs $N (number of hosts).

# alive PID: exists and is not a zombie (our exited unshare parents are reaped by the machine's
# PID 1, which can take a second: a zombie counts as gone)
alive()      { local st; [ -n "${1:-}" ] && st=$(cat "/proc/$1/stat" 2>/dev/null) && st=${st##*) } && [ "${st%% *}" != Z ]; }
# (empty when the process is gone meanwhile: under set -e a failed read would end a reset of
# hundreds of hosts whose processes die while it looks)
cmdline_of() { { tr '\0' ' ' < "/proc/$1/cmdline"; } 2>/dev/null || true; }
wait_gone()  { local k; for ((k = 0; k < 200; k++)); do alive "$1" || return 0; sleep 0.02; done; return 1; }
host_dir()   { echo "$TB_HOSTS/tb$1"; }
# "dev rotational serial image" per line, one line per disk
host_devs()  { awk '{print $1}' "$(host_dir "$1")/disks" 2>/dev/null; }

# every host's /etc/hosts: written once per bed (N lines; per host it was N subshells, N^2 in all)
hosts_file() {
  local f=$TB_STATE/etc-hosts j
  if [ ! -s "$f" ] || [ "$(sed -n '$=' "$f")" != $((N + 2)) ]; then
    {
      echo "127.0.0.1 localhost"
      echo "$TB_RUNNER_IP testrunner"
      for ((j = 1; j <= N; j++)); do echo "$(tb_num_ip4 $((TB_NET_BASE + 10 + j))) tb$j"; done
    } > "$f.tmp"
    mv "$f.tmp" "$f"
  fi
  cat "$f"
}

# host_mac I: eth0's MAC inside host I (deterministic: a "rebooted" host keeps it)
host_mac()   { printf '%s:00:%02x:%02x' "$TB_MAC_PREFIX" $(($1 / 256)) $(($1 % 256)); }
bridge_mac() { echo "$TB_MAC_PREFIX:01:00:01"; }

# wait_devs_free DEV...: mounts of a killed host (its XFS data disks) go away asynchronously;
# a device is free once it can be opened O_EXCL, as mount and mkfs do (max ~10 s for all)
wait_devs_free() {
  [ $# -gt 0 ] || return 0
  if command -v python3 >/dev/null; then
    python3 - "$@" <<'PY' || true
import os, sys, time
end = time.time() + 10
for dev in sys.argv[1:]:
    while True:
        try:
            os.close(os.open(dev, os.O_RDONLY | os.O_EXCL)); break
        except FileNotFoundError:
            break
        except OSError:
            if time.time() > end: sys.exit(1)
            time.sleep(0.02)
PY
  else sleep 0.5; fi
}

# attach_disks I: sparse images on loop devices (once per bed; losetup -f is racy: serialised)
attach_disks() {
  local i=$1 H d img dev
  H=$(host_dir "$i")
  [ -s "$H/disks" ] && return 0
  : > "$H/disks.tmp"
  for ((d = 1; d <= TB_DISKS_PER_HOST; d++)); do
    img=$H/disk$d.img
    [ -f "$img" ] || truncate -s "$TB_DISK_SIZE" "$img"
    dev=$(flock "$TB_LOOP_LOCK" losetup -f --show "$img")
    echo "$dev $(tb_rot "$i" "$d") $(tb_serial "$i" "$d") $img" >> "$H/disks.tmp"
  done
  mv "$H/disks.tmp" "$H/disks"
}

# start_host I: create (or re-create after stop_host) host I. Upper layer and disks persist.
start_host() {
  local i=$1 H ns ip veth dev rot
  H=$(host_dir "$i"); ns=$(tb_ns "$i"); ip=$(tb_ip "$i"); veth=$(tb_veth "$i")
  if [ -f "$H/init.pid" ] && alive "$(cat "$H/init.pid")"; then return 0; fi   # already up
  mkdir -p "$H/upper/etc/ssh" "$H/upper/root/.ssh" "$H/work" "$H/merged"
  chmod 700 "$H/upper/root/.ssh"
  echo "tb$i" > "$H/upper/etc/hostname"
  hosts_file > "$H/upper/etc/hosts"
  install -m 600 "$TB_STATE/id_ed25519.pub" "$H/upper/root/.ssh/authorized_keys"
  # the operator account (uid 1000 in the rootfs) logs in with the same key; become via sudo
  mkdir -p -m 755 "$H/upper/home"
  install -d -m 700 -o 1000 -g 1000 "$H/upper/home/ops" "$H/upper/home/ops/.ssh"
  install -m 600 -o 1000 -g 1000 "$TB_STATE/id_ed25519.pub" "$H/upper/home/ops/.ssh/authorized_keys"
  # host key: generated once per bed and kept outside the upper layer, so that reset keeps known_hosts valid
  [ -f "$H/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "tb$i" -f "$H/ssh_host_ed25519_key"
  install -m 600 "$H/ssh_host_ed25519_key" "$H/upper/etc/ssh/ssh_host_ed25519_key"
  install -m 644 "$H/ssh_host_ed25519_key.pub" "$H/upper/etc/ssh/ssh_host_ed25519_key.pub"
  rm -rf "$H/sysctl"; mkdir -p "$H/sysctl"   # "reboot": fake global sysctls back to kernel values

  attach_disks "$i"
  # fresh "hardware" state of the disks (each sysfs queue write costs ~30 ms: only when it differs)
  local q
  while read -r dev rot _; do
    q=/sys/block/${dev#/dev/}/queue
    [ "$(cat "$q/rotational")" = "$rot" ] || echo "$rot" > "$q/rotational"
    grep -q '\[none\]' "$q/scheduler" || echo none > "$q/scheduler"
  done < "$H/disks"

  # network namespace + veth to the bridge (fresh on every boot: per-netns sysctls reset)
  ip link del "$veth" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  # deterministic MAC: a "rebooted" host keeps its MAC, so nobody's ARP cache goes stale
  ip link add "$veth" type veth peer name eth0 netns "$ns" address "$(host_mac "$i")"
  ip link set "$veth" master "$TB_BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip/$TB_NET_BITS" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$TB_RUNNER_IP"   # the runner; it does not forward (ip_forward=0, no NAT)
  # runner <-> host without ARP: permanent neighbour entries (both MACs are fixed). The kernel's
  # neighbour table is one for all namespaces and gc_thresh3 (1024) caps its learned entries, which
  # a bed of 500+ hosts (an entry on each side) overflows; permanent entries do not count.
  ip -n "$ns" neigh replace "$TB_RUNNER_IP" lladdr "$(bridge_mac)" dev eth0 nud permanent
  ip neigh replace "$ip" lladdr "$(host_mac "$i")" dev "$TB_BRIDGE" nud permanent

  # the host itself: new mount/uts/ipc/pid namespaces inside the netns. No fd of ours is inherited
  # (stdio go to console.log), so the host never keeps a caller's pipe (CI job, vitest) open.
  rm -f "$H/init.pid"
  setsid ip netns exec "$ns" unshare --mount --uts --ipc --pid --fork --propagation private \
    /bin/bash "$TB_LIB/host-init.sh" "$i" \
    </dev/null >>"$H/console.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$H/unshare.pid"
}

# stop_host I [nowait]: kill the host's pid namespace (SIGKILL to its PID 1), keep disks and upper
# layer; then wait until its disks are no longer mounted (unless nowait).
# Only PIDs recorded by start_host are killed, and only after checking their command line.
stop_host() {
  local i=$1 H p u c
  H=$(host_dir "$i")
  p=$(cat "$H/init.pid" 2>/dev/null || true)
  u=$(cat "$H/unshare.pid" 2>/dev/null || true)
  local mounted=1 dev
  if alive "$p" && [ -r "/proc/$p/mountinfo" ]; then   # does the host have one of its disks mounted?
    mounted=0
    for dev in $(host_devs "$i"); do
      grep -q " $(cat "/sys/block/${dev#/dev/}/dev" 2>/dev/null) " "/proc/$p/mountinfo" && mounted=1
    done
  fi
  if alive "$p"; then
    c=$(cmdline_of "$p")
    if [[ "$c" == *tb-init* || "$c" == *host-init.sh* ]]; then kill -KILL "$p" 2>/dev/null || true; fi
  fi
  if alive "$u"; then
    c=$(cmdline_of "$u")
    # the unshare parent exits by itself once its child died; kill it only if it is ours
    if [[ "$c" == *unshare* && "$c" == *host-init.sh* ]]; then
      # host-init may not have written init.pid yet: kill the unshare's child (the pid-ns init) too
      if [ -z "$p" ] || ! alive "$p"; then
        for c in $(cat "/proc/$u/task/$u/children" 2>/dev/null); do
          [[ "$(cmdline_of "$c")" == *host-init.sh* || "$(cmdline_of "$c")" == *tb-init* ]] && kill -KILL "$c" 2>/dev/null || true
        done
      fi
      wait_gone "$u" || kill -KILL "$u" 2>/dev/null || true
    fi
  fi
  wait_gone "$p" || true
  wait_gone "$u" || true
  rm -f "$H/init.pid" "$H/unshare.pid"
  # shellcheck disable=SC2046
  [ "${2:-}" = nowait ] || [ "$mounted" = 0 ] || wait_devs_free $(host_devs "$i")
  return 0
}

# wipe_host I: (host stopped) back to the state right after up: empty upper layer, zeroed disks
wipe_host() {
  local i=$1 H dev img k
  H=$(host_dir "$i")
  rm -rf "$H/upper" "$H/work" "$H/sysctl" "$H/console.log"
  [ -s "$H/disks" ] || return 0
  while read -r dev _ _ img; do
    # blkdiscard opens O_EXCL (fails while a dying host still has it mounted), punches holes in the
    # image (sparse again) and drops the loop device's page cache; truncate as a fallback
    for ((k = 0; k < 100; k++)); do blkdiscard "$dev" >/dev/null 2>&1 && continue 2; sleep 0.05; done
    truncate -s 0 "$img"; truncate -s "$TB_DISK_SIZE" "$img"; blockdev --flushbufs "$dev" || true
  done < "$H/disks"
}

SSHOPTS=(-i "$TB_STATE/id_ed25519" -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes
         -o UserKnownHostsFile="$TB_STATE/known_hosts" -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR
         -o BatchMode=yes -o ConnectTimeout=2 -o KexAlgorithms=curve25519-sha256)

# wait_host I: until sshd accepts a real login with the recorded host key (max ~30 s)
wait_host() {
  local i=$1 ip end=$((SECONDS + 30))
  ip=$(tb_ip "$i")
  while [ "$SECONDS" -lt "$end" ]; do
    if timeout 1 bash -c "exec 3<>/dev/tcp/$ip/22" 2>/dev/null &&
       ssh "${SSHOPTS[@]}" "root@$ip" true </dev/null 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "host tb$i ($ip) did not come up; console:" >&2
  tail -20 "$(host_dir "$i")/console.log" >&2 || true
  return 1
}

# wait_hosts I...: wait_host for each, TB_WAIT_PARALLEL at a time (1,000 ssh clients at once
# would hold ~5 GiB and time each other out on 2 cores)
TB_WAIT_PARALLEL=${TB_WAIT_PARALLEL:-64}
wait_hosts() {
  local running=0 fail=0 i
  for i in "$@"; do
    if [ "$running" -ge "$TB_WAIT_PARALLEL" ]; then wait -n || fail=1; running=$((running - 1)); fi
    wait_host "$i" & running=$((running + 1))
  done
  while [ "$running" -gt 0 ]; do wait -n || fail=1; running=$((running - 1)); done
  return $fail
}

# write_known_hosts: "10.77.0.11 ssh-ed25519 AAAA..." and "tb1 ssh-ed25519 AAAA..." per host
write_known_hosts() {
  local i key
  for ((i = 1; i <= N; i++)); do
    key=$(awk '{print $1" "$2}' "$(host_dir "$i")/ssh_host_ed25519_key.pub")
    echo "$(tb_ip "$i") $key"
    echo "tb$i $key"
  done > "$TB_STATE/known_hosts.tmp"
  mv "$TB_STATE/known_hosts.tmp" "$TB_STATE/known_hosts"
}

# ssh_ip_patterns: the bed's addresses as ssh_config patterns, one A.B.C.* per /24 of TB_NET
ssh_ip_patterns() {
  local k pats=()
  for ((k = 0; k < 1 << (24 - TB_NET_BITS); k++)); do
    pats+=("$(tb_num_ip4 $((TB_NET_BASE + k * 256)) | sed 's/\.0$/.*/')")
  done
  echo "${pats[*]}"
}

# write_state: inventory.yaml (Ansible YAML), inventory.ini (ansible baseline), ssh_config, hosts.json
write_state() {
  local i H dev rot serial img sep devs infos all
  local key=$TB_STATE/id_ed25519 kh=$TB_STATE/known_hosts
  local common_args="-o UserKnownHostsFile=$kh -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
  # --- YAML inventory
  {
    echo "# generated by test/testbed (racksmith test bed); rewritten by up/reset/reboot"
    echo "all:"
    echo "  vars:"
    echo "    ansible_user: root"
    echo "    ansible_ssh_private_key_file: \"$key\""
    echo "    ansible_ssh_common_args: \"$common_args\""
    echo "    ansible_python_interpreter: /usr/bin/python3"
    echo "    racksmith_known_hosts: \"$kh\""
    echo "    testbed_shared_mount: \"$TB_SHARED_MOUNT\""
    echo "  children:"
    echo "    testbed:"
    echo "      hosts:"
    for ((i = 1; i <= N; i++)); do
      H=$(host_dir "$i"); devs=(); infos=()
      while read -r dev rot serial img; do
        devs+=("$dev")
        infos+=("{ dev: $dev, rotational: $([ "$rot" = 1 ] && echo true || echo false), serial: $serial }")
      done < "$H/disks"
      printf '        tb%d: { ansible_host: %s, ansible_port: 22, testbed_disks: [%s], testbed_disk_info: [%s] }\n' \
        "$i" "$(tb_ip "$i")" "$(IFS=,; echo "${devs[*]}" | sed 's/,/, /g')" "$(printf '%s, ' "${infos[@]}" | sed 's/, $//')"
    done
    all=$(for ((i = 1; i <= N; i++)); do printf 'tb%d: {}, ' "$i"; done | sed 's/, $//')
    echo "    storage: { hosts: { $all } }"
    echo "    jail: { hosts: { $all } }"
    echo "    kube_control_plane: { hosts: { tb1: {} } }"
  } > "$TB_STATE/inventory.yaml.tmp"
  mv "$TB_STATE/inventory.yaml.tmp" "$TB_STATE/inventory.yaml"
  # the same hosts reached as the operator account with sudo (become), as operators' inventories do
  sed -e 's/^    ansible_user: root$/    ansible_user: ops\n    ansible_become: true/' \
      -e '1s/.*/# generated by test\/testbed: the bed reached as ops with sudo; rewritten by up\/reset\/reboot/' \
      "$TB_STATE/inventory.yaml" > "$TB_STATE/inventory-ops.yaml.tmp"
  mv "$TB_STATE/inventory-ops.yaml.tmp" "$TB_STATE/inventory-ops.yaml"
  # --- INI inventory (ansible-core baseline)
  {
    echo "[testbed]"
    for ((i = 1; i <= N; i++)); do
      echo "tb$i ansible_host=$(tb_ip "$i") ansible_port=22 testbed_disks=$(host_devs "$i" | paste -sd,)"
    done
    echo
    for g in nodes storage jail; do printf '[%s:children]\ntestbed\n\n' "$g"; done
    printf '[kube_control_plane]\ntb1\n\n'
    echo "[all:vars]"
    echo "ansible_user=root"
    echo "ansible_ssh_private_key_file=$key"
    echo "ansible_ssh_common_args='$common_args'"
    echo "ansible_python_interpreter=/usr/bin/python3"
    echo "racksmith_known_hosts=$kh"
  } > "$TB_STATE/inventory.ini"
  # --- ssh_config: ssh -F .testbed/ssh_config tb1
  {
    for ((i = 1; i <= N; i++)); do printf 'Host tb%d\n  HostName %s\n' "$i" "$(tb_ip "$i")"; done
    echo "Host tb* $(ssh_ip_patterns)"
    echo "  User root"
    echo "  IdentityFile $key"
    echo "  IdentitiesOnly yes"
    echo "  StrictHostKeyChecking yes"
    echo "  UserKnownHostsFile $kh"
    echo "  GlobalKnownHostsFile /dev/null"
    echo "  KexAlgorithms curve25519-sha256"
    echo "  BatchMode yes"
    echo "  LogLevel ERROR"
  } > "$TB_STATE/ssh_config"
  # --- hosts.json (read by test/testbed/api.ts)
  {
    echo "["
    for ((i = 1; i <= N; i++)); do
      H=$(host_dir "$i"); infos=()
      while read -r dev rot serial img; do
        infos+=("{\"dev\":\"$dev\",\"rotational\":$([ "$rot" = 1 ] && echo true || echo false),\"serial\":\"$serial\",\"image\":\"$img\"}")
      done < "$H/disks"
      sep=,; [ "$i" = "$N" ] && sep=
      printf '  {"name":"tb%d","ip":"%s","port":22,"user":"root","netns":"%s","disks":[%s],"upper":"%s","dir":"%s","initPid":%s}%s\n' \
        "$i" "$(tb_ip "$i")" "$(tb_ns "$i")" "$(IFS=,; echo "${infos[*]}")" "$H/upper" "$H" \
        "$(cat "$H/init.pid" 2>/dev/null || echo 0)" "$sep"
    done
    echo "]"
  } > "$TB_STATE/hosts.json.tmp"
  mv "$TB_STATE/hosts.json.tmp" "$TB_STATE/hosts.json"
}
