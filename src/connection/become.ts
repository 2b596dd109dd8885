import { randomBytes } from 'node:crypto';
import { shq } from '../shell/quote.ts';
import type { Secret } from '../util/secret.ts';
import { withoutExecTags } from './kill-groups.ts';
import { scriptAsStdin } from './transport.ts';
import type { ExecResult } from './types.ts';

/** Privilege escalation for a host's execs: the whole script runs in one escalated shell. */
export interface Become {
  method: 'sudo' | 'su';
  user: string;
  /** ansible_become_password or -K: fed on stdin, never in argv. */
  password?: Secret;
}

/** The wrapper's exit status when it could not escalate (its stderr starts with BECOME_MARK). */
export const BECOME_FAILED = 125;
const BECOME_MARK = 'racksmith-become:';

/** Why escalation failed, as the host's error names it (not retried: a password does not get better). */
export class BecomeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BecomeError';
  }
}

/** What the escalated shell writes on stderr, as a line, before anything else: escalation worked. */
const startedMark = (nonce: string) => `${nonce}-started`;

/**
 * An exec's result under become: a BecomeError when escalation failed (the escalated shell never
 * started: no started line), else its stderr without what came before the started line (sudo's
 * own warnings) and the line itself, as the script wrote it without become.
 */
export function becomeOutcome(b: Become, nonce: string, code: number | null, stderr: string): { failure?: BecomeError; stderr: string } {
  const line = `${startedMark(nonce)}\n`;
  const at = stderr.indexOf(line);
  if (at >= 0) return { stderr: stderr.slice(at + line.length) };
  // no exit status (killed by abort before the shell started) or success: not a refusal
  if (code === null || code === 0) return { stderr };
  const mark = stderr.indexOf(BECOME_MARK);
  const said = withoutExecTags(mark >= 0 && code === BECOME_FAILED ? stderr.slice(mark + BECOME_MARK.length) : stderr);
  const why = said.trim().replace(/\s*\n\s*/g, '; ');
  return { failure: new BecomeError(`become (${b.method} to ${b.user}) failed: ${why || `exit ${code}, no message`}`), stderr };
}

/**
 * A connection's escalation across its execs. Its first refusal (a wrong password, sudo refusing
 * for any reason) is final: every later exec of the connection, and the kill of an abort, fails
 * with it at once, without asking sudo again. A password does not get better, and pam_faillock
 * counts every try: 3 plays retrying a wrong -K would lock the account on every host at once.
 */
export class Escalation {
  private refusal?: BecomeError;
  constructor(
    readonly become: Become,
    readonly nonce: string,
  ) {}

  /** Whether escalation was refused on this connection. */
  get refused(): boolean {
    return this.refusal !== undefined;
  }

  /** Before an exec: throws the refusal met before, if any. */
  refuseAgain(): void {
    if (this.refusal) throw this.refusal;
  }

  /** An exec's result under become (becomeOutcome): the script's own, or the BecomeError thrown (and kept). */
  result<R extends ExecResult>(r: R): R {
    const { failure, stderr } = becomeOutcome(this.become, this.nonce, r.code, r.stderr);
    if (failure) throw (this.refusal = failure);
    return { ...r, stderr };
  }
}

/** A line that cannot be a password racksmith sends: marks where the script starts on stdin. */
export function newNonce(): string {
  return `rs-become-${randomBytes(12).toString('hex')}`;
}

/**
 * The command the login shell runs, and what goes on stdin before the script. The target shell
 * gets the session's process (the login shell's parent, sshd's for this connection) as
 * RS_SESSION_PID: the apply lock's holder lives as long as the session, not as long as sudo.
 *
 * The escalated shell first writes the started line on stderr: without it, a failed exec is a
 * failed escalation (sudo's own message, e.g. a password is required), with no separate `sudo
 * true` to ask first: that second sudo per exec made a converged run under become 1.25x its root
 * run at 20 hosts (bench/README, 2026-12-03).
 * With a password, sudo is first asked to validate it alone (`sudo -S -v` given one line, stopped
 * before a second try: validateOnce; sudo never reads the script as more tries); the real sudo then
 * either reads the password line again or finds the credential cached, so the target shell
 * skips lines up to the nonce either way.
 * inline: the script is the target shell's `-c` argument instead of its stdin (caller-supplied stdin).
 * tag: the last argument of every process on the way (sudo/su and the target shell), as of the
 * login shell without become: abort() finds the escalated shell by it, and the script sees the
 * same positional parameters as without become.
 */
export function becomeCommand(b: Become, nonce: string, inline?: string, tag?: string): { command: string; stdinPrefix: string } {
  const pw = b.password?.reveal();
  if (pw !== undefined && /[\n\r\0]/.test(pw))
    throw new BecomeError('the become password holds a line break or NUL: it cannot be fed on stdin');
  const skip = pw !== undefined ? `IFS= read -r l; [ "$l" = ${nonce} ] || IFS= read -r l; ` : '';
  // after the shift "$@" is [SCRIPT] [TAG]: `sh -c SCRIPT TAG` or `sh -s TAG`, as without become
  const target = `${skip}printf '%s\\n' ${shq(startedMark(nonce))} >&2; RS_SESSION_PID=$1; export RS_SESSION_PID; shift; exec /bin/sh ${inline !== undefined ? '-c' : '-s'} "$@"`;
  const args = ['sh', '"$PPID"', ...(inline !== undefined ? [shq(inline)] : []), ...(tag !== undefined ? [shq(tag)] : [])].join(' ');
  const fail = `{ printf '${BECOME_MARK} %s\\n' "$rs_e" >&2; exit ${BECOME_FAILED}; }`;
  const user = shq(b.user);
  let command: string;
  if (b.method === 'su') {
    // su reads a password from a terminal only, and racksmith feeds scripts through a pipe.
    command = `if [ "$(id -u)" != 0 ]; then rs_e='su asks for its password on a terminal, and racksmith runs without one: use --become-method sudo (or log in as root)'; ${fail}; fi
exec su -s /bin/sh -c ${shq(target)} ${user} ${args}`;
  } else if (pw === undefined) {
    command = `exec sudo -n -H -u ${user} -- /bin/sh -c ${shq(target)} ${args}`;
  } else {
    command = `IFS= read -r rs_pw || { rs_e='no password on stdin'; ${fail}; }
${validateOnce(nonce, fail)}
{ printf '%s\\n' "$rs_pw"; exec cat; } | sudo -S -p '' -H -u ${user} -- /bin/sh -c ${shq(target)} ${args}`;
  }
  return { command, stdinPrefix: pw !== undefined ? `${pw}\n${nonce}\n` : '' };
}

/** How long `sudo -v` may take to validate a password (a PAM stack asking for more than it is given). */
export const VALIDATE_TIMEOUT_S = 60;

/**
 * Shell that validates $rs_pw with one `sudo -S -v`, making one authentication: sudo runs in the
 * background, its stdin (a FIFO) given the password and then held open, its stderr (a FIFO) read
 * here. After a refusal sudo asks again (passwd_tries); given the end of its input it would try
 * once more and fail it (a second failure for pam_faillock). Its prompt is a marker line: at the
 * second one sudo is waiting for input, and is killed there, with that try not failed. The FIFOs
 * live in a private directory (mktemp -d): the password is in a pipe only, never in a file.
 * A PAM stack that asks something else without a marker (a one-time code) waits for input it
 * never gets: VALIDATE_TIMEOUT_S ends it.
 */
function validateOnce(nonce: string, fail: string): string {
  const ask = `${nonce}-ask`;
  return `{ rs_d=$(mktemp -d) && mkfifo "$rs_d/in" "$rs_d/err"; } || { rs_e='sudo -v: cannot make a private directory with two FIFOs (mktemp -d, mkfifo)'; ${fail}; }
# shellcheck disable=SC2024 # the FIFOs are the login user's: this shell opens them, sudo reads the descriptors
sudo -S -p ${shq(`${ask}
`)} -v <"$rs_d/in" 2>"$rs_d/err" >/dev/null &
rs_p=$!
(trap 'kill "$rs_s"; exit 0' TERM; sleep ${VALIDATE_TIMEOUT_S} & rs_s=$!; wait "$rs_s" && kill -9 "$rs_p") </dev/null >/dev/null 2>&1 &
rs_t=$!
exec 5>"$rs_d/in"
printf '%s\\n' "$rs_pw" >&5
rs_e=; rs_n=0
while IFS= read -r rs_l; do
  if [ "$rs_l" = ${shq(ask)} ]; then
    rs_n=$((rs_n + 1)); [ "$rs_n" -lt 2 ] && continue
    kill -9 "$rs_p" 2>/dev/null; rs_e="\${rs_e}sudo: the password was refused (not tried again)"; break
  fi
  rs_e="$rs_e$rs_l
"
done <"$rs_d/err"
exec 5>&-
wait "$rs_p"; rs_c=$?
kill "$rs_t" 2>/dev/null
rm -rf "$rs_d"
[ "$rs_c" = 0 ] || { [ "$rs_c" = 137 ] && [ "$rs_n" -lt 2 ] && rs_e="\${rs_e}sudo -v did not finish within ${VALIDATE_TIMEOUT_S} s (a PAM prompt racksmith cannot answer?)"; [ -n "$rs_e" ] || rs_e="sudo -v exited $rs_c"; ${fail}; }`;
}

/**
 * What the login shell is given for one exec: its arguments (after `/bin/sh`) and its stdin.
 * Without become, the script is the stdin of `sh -s` (or with caller-supplied stdin, `sh -c
 * SCRIPT`). tag, if given, is the last argument of the login shell and of the escalated one.
 */
export function execPlan(
  b: Become | undefined,
  nonce: string,
  script: string,
  stdin: string | undefined,
  inline: (script: string) => string,
  tag?: string,
): { args: string[]; stdin: string } {
  const t = tag !== undefined ? [tag] : [];
  if (!b) return stdin === undefined ? { args: ['-s', ...t], stdin: scriptAsStdin(script) } : { args: ['-c', inline(script), ...t], stdin };
  const { command, stdinPrefix } = becomeCommand(b, nonce, stdin === undefined ? undefined : inline(script), tag);
  return { args: ['-c', command, ...t], stdin: stdinPrefix + (stdin === undefined ? scriptAsStdin(script) : stdin) };
}

/** Become as one level gives it (host variables, a play's keywords, the command line). */
export interface BecomeSetting {
  enabled?: boolean;
  user?: string;
  method?: 'sudo' | 'su';
}

/**
 * Whom a host's execs run as for one play, in Ansible's precedence: the host's ansible_become*
 * variables, then the play's keywords, then -b/--become-user/--become-method. Undefined: the
 * login user, no escalation.
 */
export function resolveBecome(
  host: BecomeSetting | undefined,
  play: BecomeSetting,
  cli: BecomeSetting,
): { user: string; method: 'sudo' | 'su' } | undefined {
  const enabled = host?.enabled ?? play.enabled ?? cli.enabled ?? false;
  if (!enabled) return undefined;
  return { user: host?.user ?? play.user ?? cli.user ?? 'root', method: host?.method ?? play.method ?? cli.method ?? 'sudo' };
}
