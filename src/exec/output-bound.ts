/**
 * Each host's output is bounded where it is made: the command's stdout and stderr each go through
 * a pipe that passes the first EXEC_OUTPUT_LIMIT bytes and counts the rest, so a `cat` of a huge
 * file on a thousand hosts costs the controller 64 KiB a stream a host, not the file each time.
 * The count travels as a trailer line after what was kept, marked with a nonce the command
 * cannot guess; `cutOutput` takes it off and says how much was cut.
 */
import { randomBytes } from 'node:crypto';

/** Bytes of each stream kept per host. */
export const EXEC_OUTPUT_LIMIT = 64 * 1024;

/** A stream as it came back: what was kept, and how many bytes were cut after it. */
export interface BoundedText {
  text: string;
  cut: number;
}

export function newTrailerMark(): string {
  return `rs-exec-cut-${randomBytes(9).toString('hex')}`;
}

/**
 * The script that runs `command` (a shell command line) on the host: its stdin /dev/null, its
 * stdout and stderr each cut at `limit` bytes with a trailer, its exit status the script's.
 * POSIX sh (no pipefail): the status comes out of the pipeline on a descriptor of its own (5);
 * the command sees none of the wrapper's descriptors (3, 4, 5).
 */
export function boundedScript(command: string, mark: string, limit = EXEC_OUTPUT_LIMIT): string {
  return [
    `rs_cut() { head -c ${limit}; printf '\\n%s %s\\n' ${mark} "$(wc -c)"; }`,
    'exec 3>&1 4>&2',
    // (a subshell: an `exit` in the command ends it, not the wrapper)
    `rs_status=$( { { { (\n${command}\n) </dev/null 3>&- 4>&- 5>&-; echo $? >&5; } | rs_cut >&3; } 2>&1 | rs_cut >&4; } 5>&1 )`,
    'exit "${rs_status:-255}"',
  ].join('\n');
}

/**
 * A stream with its trailer taken off. No trailer (the wrapper was killed, or never ran: a
 * refused sudo) leaves the text as it came, cut here if it is over the limit all the same.
 */
export function cutOutput(raw: string, mark: string, limit = EXEC_OUTPUT_LIMIT): BoundedText {
  const m = new RegExp(`\\n${mark} *(\\d+)\\n$`).exec(raw);
  if (m) return { text: raw.slice(0, m.index), cut: Number(m[1]) };
  const bytes = Buffer.from(raw);
  if (bytes.length <= limit) return { text: raw, cut: 0 };
  return { text: bytes.subarray(0, limit).toString('utf8'), cut: bytes.length - limit };
}

/** `[… 1234567 more bytes cut: output is kept to 65536 bytes a stream]`, or '' when nothing was cut. */
export function cutNote(cut: number, limit = EXEC_OUTPUT_LIMIT): string {
  return cut > 0 ? `[… ${cut} more bytes cut: each stream is kept to its first ${limit} bytes]` : '';
}
