import { shq } from '../shell/quote.ts';

/** The first line of the gatherer's output; its last is `@ end` (an output without it was cut short). */
export const FACTS_HEADER = '@ racksmith-facts 1';

/**
 * The host facts gatherer: one POSIX sh script, one exec, that only reads. It prints a framed
 * text: a frame line `@ SECTION` (after a newline, so it always starts a line) and the section's
 * lines each prefixed with `|`, so no file content can pass for a frame. Deciding what the values
 * mean (which disks count, the OS family, the virtualization) is parse.ts's, on the controller.
 *
 * `root` prefixes every file path: the unit tests run this same script over captured /proc and
 * /sys trees (with stand-ins for uname and systemd-detect-virt first in PATH).
 */
export function gatherScript(root = ''): string {
  return `R=${shq(root)}
rs_sec() { printf '\\n@ %s\\n' "$*"; }
rs_lines() { sed 's/^/|/'; }
# (read, a builtin: a host with hundreds of devices costs no process per value)
rs_val() { [ -r "$1" ] || return 0; v=''; IFS= read -r v 2>/dev/null < "$1"; printf '|%s=%s\\n' "$2" "$v"; }
rs_link() { [ -L "$1" ] || return 0; l=$(readlink "$1"); printf '|%s=%s\\n' "$2" "\${l##*/}"; }
echo ${shq(FACTS_HEADER)}
rs_sec uname
printf '|kernel=%s\\n|machine=%s\\n' "$(uname -r)" "$(uname -m)"
rs_sec meminfo
grep '^MemTotal:' "$R/proc/meminfo" | rs_lines
rs_sec cpuinfo
grep -E '^(processor|physical id|core id)[[:space:]]*:' "$R/proc/cpuinfo" | rs_lines
if grep -qE '^flags[[:space:]]*:(.* )?hypervisor( |$)' "$R/proc/cpuinfo"; then echo '|hypervisor=yes'; fi
rs_sec os-release
if [ -r "$R/etc/os-release" ]; then rs_lines < "$R/etc/os-release"; elif [ -r "$R/usr/lib/os-release" ]; then rs_lines < "$R/usr/lib/os-release"; fi
rs_sec virt
if command -v systemd-detect-virt >/dev/null 2>&1; then printf '|detect=%s\\n' "$(systemd-detect-virt 2>/dev/null)"; fi
rs_val "$R/sys/class/dmi/id/product_name" product
rs_val "$R/sys/class/dmi/id/sys_vendor" vendor
# (PID 1's environment: readable by root only, and not always then: another PID namespace's init)
if [ -r "$R/proc/1/environ" ]; then printf '|container=%s\\n' "$({ tr '\\0' '\\n' < "$R/proc/1/environ"; } 2>/dev/null | sed -n 's/^container=//p' | head -n 1)"; fi
if [ -e "$R/run/.containerenv" ]; then echo '|containerenv=yes'; fi
if [ -e "$R/.dockerenv" ]; then echo '|dockerenv=yes'; fi
for d in "$R"/sys/class/net/*; do
  [ -e "$d" ] || continue
  rs_sec "nic \${d##*/}"
  rs_val "$d/address" mac
  rs_val "$d/mtu" mtu
  rs_val "$d/speed" speed
  rs_link "$d/device/driver" driver
done
for d in "$R"/sys/block/*; do
  [ -e "$d" ] || continue
  rs_sec "disk \${d##*/}"
  rs_val "$d/size" size
  rs_val "$d/ro" ro
  rs_val "$d/queue/rotational" rotational
  rs_val "$d/device/model" model
  rs_val "$d/device/serial" serial
  rs_val "$d/serial" serial
  rs_val "$d/wwid" wwid
  rs_val "$d/device/wwid" wwid
  if [ -e "$d/loop/backing_file" ]; then echo '|loop=attached'; fi
done
for d in "$R"/sys/bus/pci/devices/*; do
  [ -r "$d/class" ] || continue
  c=''; IFS= read -r c < "$d/class"
  case $c in 0x030000 | 0x030200) ;; *) continue ;; esac
  rs_sec "gpu \${d##*/}"
  rs_val "$d/vendor" vendor
  rs_val "$d/device" device
  rs_link "$d/driver" driver
  i="$R/proc/driver/nvidia/gpus/\${d##*/}/information"
  if [ -r "$i" ]; then grep '^Model:' "$i" | rs_lines; fi
done
rs_sec nvidia
rs_val "$R/sys/module/nvidia/version" module
if [ -r "$R/proc/driver/nvidia/version" ]; then grep '^NVRM version:' "$R/proc/driver/nvidia/version" | rs_lines; fi
rs_sec end
`;
}
