/**
 * The host-side apply lock: one run at a time changes a host. The first exec of a run that
 * applies steps on a host takes `flock` on /run/racksmith/apply.lock, and a holder process keeps
 * it (it inherits the lock's file descriptor) for as long as the run's session to that host lasts:
 * every later apply wave and play of the run finds it held by its own run id and goes on. Another
 * run waits up to the timeout; if it had to wait, it changes nothing in that exec and re-reads the
 * host first (its facts were read before the other run's changes). A run that only reads (check
 * mode, a converged host) never takes it, so it costs a converged host nothing.
 *
 * The holder is `tail --pid=SESSION -s 0.2 -f /dev/null` (GNU coreutils): it ends within 0.2 s of
 * the session, which over SSH is sshd's process for the run's connection (it closes at the end
 * of the run, or drops), and on a local connection a child of the controller that the connection
 * ends (Connection.sessionPid); under become, the login shell's parent the become wrapper passes on
 * as RS_SESSION_PID (sudo, the escalated shell's parent, lasts one exec only); /run is emptied at boot. /run/racksmith/apply.holder says who
 * holds it: `RUN_ID HOLDER_PID SESSION_PID`. A user who cannot write /run/racksmith (not root)
 * takes a lock of its own in $TMPDIR/racksmith-UID: it can only change what that user may.
 */
import { shq } from '../shell/quote.ts';

export const APPLY_LOCK = '/run/racksmith/apply.lock';
export const APPLY_LOCK_HOLDER = '/run/racksmith/apply.holder';

/** The lock section's exit codes: held now (0), given up after the timeout, taken after a wait. */
export const LOCK_TIMED_OUT = 75;
export const LOCK_WAITED = 76;

export interface ApplyLockOptions {
  /** Who this run is, as another run's message names it: controller host, pid and start time. */
  runId: string;
  /** How long to wait for another run's lock (seconds); 0: fail at once. */
  timeoutSec: number;
}

/** The session the lock lives with: a process of the host (Connection.sessionPid), else the shell's parent. */
export interface LockSession {
  sessionPid?: number;
}

/**
 * Shell (a step section that ends the script when it fails) that takes the lock or finds it held
 * by this run. Exit 0: held, go on; LOCK_WAITED: taken after another run let it go (change
 * nothing, re-probe); LOCK_TIMED_OUT (or anything else): not held, stderr names the holder.
 */
export function applyLockScript(o: ApplyLockOptions, session: LockSession = {}): string {
  const me = shq(o.runId);
  const timeout = Math.max(0, Math.floor(o.timeoutSec));
  // Under become the shell's parent is sudo (gone after this exec): the wrapper names the session (connection/become.ts).
  const sess = session.sessionPid !== undefined ? shq(session.sessionPid) : '"${RS_SESSION_PID:-$PPID}"';
  return `l=${shq(APPLY_LOCK)}; h=${shq(APPLY_LOCK_HOLDER)}; me=${me}; sess=${sess}
rs_holder() { rs_h=; IFS= read -r rs_h < "$h" || :; } 2>/dev/null
# (mkdir only when missing: every apply exec runs this, and the directory outlives the first)
if ! { { [ -d "\${l%/*}" ] || mkdir -p "\${l%/*}"; } && [ -w "\${l%/*}" ]; } 2>/dev/null; then
  # Not root: this user changes only what it may, so the lock is this user's own.
  l="\${TMPDIR:-/tmp}/racksmith-$(id -u)/apply.lock"; h="\${l%/*}/apply.holder"
  # shellcheck disable=SC2174 # only racksmith-UID is ours to make private; $TMPDIR is the system's
  mkdir -p -m 700 "\${l%/*}"
  [ -O "\${l%/*}" ] || { echo "\${l%/*} belongs to another user: no apply lock" >&2; exit 1; }
fi
exec 9>>"$l"
rs_holder
# Held by this session since an earlier exec: its holder still has the lock file open (fd 9).
set -f
# shellcheck disable=SC2086 # the holder line split into its fields (set -f: no globbing)
set -- $rs_h; set +f
if [ $# = 3 ] && [ "$3" = "$sess" ] && [ "/proc/$2/fd/9" -ef "$l" ]; then
  [ "$1" = "$me" ] || { printf '%s %s %s\\n' "$me" "$2" "$3" > "$h.$$" && mv -f "$h.$$" "$h"; }
  exit 0
fi
waited=
if ! flock -n 9; then
  # Whoever holds it may change the host after this run read it: wait, then read it again. A second
  # at a time, reading the holder each time: the holder may be this very run through another
  # session (two hosts of the inventory are one machine), its name written just after it took it.
  rs_w=0
  while :; do
    rs_holder
    if [ "\${rs_h%% *}" = "$me" ]; then
      echo "the apply lock $l is held by this same run through another host's connection: two hosts of the inventory are this one machine, and a run applies to a machine through one of them" >&2
      exit ${LOCK_TIMED_OUT}
    fi
    if [ "$rs_w" -ge ${timeout} ]; then
      echo "the apply lock $l is held by run \${rs_h%% *}; gave up after ${timeout} s (--lock-timeout)" >&2
      exit ${LOCK_TIMED_OUT}
    fi
    rs_w=$((rs_w + 1))
    flock -w 1 9 && break
  done
  # (the run that held it last wrote its name there right after taking it)
  rs_holder; other=\${rs_h%% *}; waited=1
fi
# Ours: keep it past this exec, for as long as this session lasts.
tail --pid="$sess" -s 0.2 -f /dev/null </dev/null >/dev/null 2>&1 &
printf '%s %s %s\\n' "$me" "$!" "$sess" > "$h.$$" && mv -f "$h.$$" "$h"
if [ -n "$waited" ]; then printf 'waited for run %s\\n' "\${other:-(unknown)}"; exit ${LOCK_WAITED}; fi
exit 0`;
}

/** The run id this controller gives its runs: host, pid and start time. */
export function newRunId(host: string, pid: number, startedAt: Date): string {
  return `${host.replace(/[^A-Za-z0-9._-]/g, '_')}:${pid}:${startedAt.toISOString()}`;
}
