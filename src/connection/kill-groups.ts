import { randomBytes } from 'node:crypto';

/**
 * Ending a connection's commands where they run (--host-timeout, Ctrl-C): each exec's shell gets a
 * random tag as its last argument, and a shell finds the processes by it and kills their process
 * groups. Over SSH sshd makes each command a session of its own; locally the shell is spawned as
 * one (local.ts); under become the escalated shell carries the tag too and is killed escalated.
 */

/** How long an abort gives the kill of the process groups before it drops the connection anyway. */
export const KILL_TIMEOUT_MS = 1000;

/** A fresh tag for one exec (the last argument of its shell, and of the escalated one). */
export function execTag(): string {
  return `rs-exec-${randomBytes(6).toString('hex')}`;
}

/**
 * The tag is the shell's $0 too, so the shell's own errors start with it (`rs-exec-…: 1: exec:
 * sudo: not found`): each line's prefix of that kind, removed, for a message people read.
 */
export function withoutExecTags(text: string): string {
  return text.replace(/^rs-exec-[0-9a-f]{12}: (?:line )?\d+: /gm, '');
}

/**
 * Shell that kills (SIGKILL; dash takes `kill -9 -PGID`, not `--`) the process group of every
 * remote process whose argv ends in one of `tags`. The group as /proc/PID/stat gives it (field 5,
 * after the parenthesised comm): sudo without a tty, and su, run the escalated shell in their own
 * group (seen on Debian bookworm), so it is no group leader.
 */
export function killGroupsScript(tags: string[]): string {
  return `for p in /proc/[0-9]*; do
  c=$(tr '\\000' ' ' < "$p/cmdline" 2>/dev/null) || continue
  case "$c" in ${tags.map((t) => `*" ${t} "`).join('|')}) ;; *) continue ;; esac
  s=$(cat "$p/stat" 2>/dev/null) || continue
  # shellcheck disable=SC2086 # split into stat's fields (after the command name: numbers and a state letter)
  set -- \${s##*") "}
  [ "\${3:-0}" -gt 1 ] && kill -9 "-$3" 2>/dev/null
done
exit 0`;
}
