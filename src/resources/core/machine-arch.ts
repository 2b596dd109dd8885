/**
 * Shell that sets $a to the machine's architecture as `uname -m` names it (the multiarch
 * directory's prefix): the kernel's own answer in /proc/sys/kernel/arch read with a builtin
 * (Linux 6.1+), `uname -m` only where that file is missing. A process per probe adds up on a fleet.
 */
export const MACHINE_ARCH = 'a=; [ -r /proc/sys/kernel/arch ] && IFS= read -r a < /proc/sys/kernel/arch; [ -n "$a" ] || a=$(uname -m)';
