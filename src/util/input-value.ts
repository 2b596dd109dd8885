import { InputError } from './errors.ts';
import { printable } from './printable.ts';
import { refuseSecrets } from './secret.ts';

/**
 * Checks of the values a playbook passes to resources, made when the resources are built (before
 * any host is contacted): what a shell or the kernel would mangle or choke on is bad input there,
 * never an "internal error" in the middle of an apply.
 */
export const VALUE_LIMITS = {
  /** PATH_MAX, in bytes; each component NAME_MAX. */
  path: 4096,
  component: 255,
  /** A resource's name, a file system type, a mount source. */
  name: 4096,
  /** One argv word (MAX_ARG_STRLEN). */
  word: 128 * 1024,
  /** A command's shell script (it travels on stdin, but the host's dash is slow on huge words). */
  script: 1024 * 1024,
} as const;

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;
// A shell word or script may span lines and hold tabs; no other control character.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const WORD_CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/;

/** A short, printable view of a bad value for a message (a 1 MB value is not quoted whole). */
export function shown(value: string): string {
  const s = value.length > 80 ? `${value.slice(0, 60)}… (${value.length} characters)` : value;
  return `'${printable(s)}'`;
}

/** The problem in a value, and the predicate that finds inventory strings with the same problem. */
export class BadValue extends InputError {
  constructor(
    detail: string,
    /** Does a string (an inventory variable's) have this problem? (to point at where it was set) */
    readonly culprit: (s: string) => boolean,
  ) {
    super(detail);
    this.name = 'InputError';
  }
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

function checkLength(value: string, what: string, max: number, unit = 'bytes'): void {
  if (value.length > max || bytes(value) > max)
    throw new BadValue(`${what} is ${bytes(value)} ${unit} long, over the limit of ${max}: ${shown(value)}`, (s) => bytes(s) > max / 2);
}

/** A value that should be a string: a secret there is refused as such (with where it was set). */
function notAString(value: unknown, what: string): InputError {
  refuseSecrets(value, what);
  return new InputError(`${what} must be a string, got ${typeof value}`);
}

/** A path, name or other single token: no control character at all (NUL, newline, ESC, DEL, C1). */
export function checkToken(value: unknown, what: string, max: number = VALUE_LIMITS.name): string {
  if (typeof value !== 'string') throw notAString(value, what);
  checkLength(value, what, max);
  const m = CONTROL.exec(value);
  if (m) throw new BadValue(`${what} must not contain control characters (${shown(m[0])}): ${shown(value)}`, (s) => CONTROL.test(s));
  return value;
}

/** A path's length limits: PATH_MAX for the whole, NAME_MAX per component. */
export function checkPathLength(path: string, what: string): void {
  checkLength(path, what, VALUE_LIMITS.path);
  for (const c of path.split('/'))
    if (bytes(c) > VALUE_LIMITS.component)
      throw new BadValue(`${what} has a component of ${bytes(c)} bytes, over the limit of ${VALUE_LIMITS.component}: ${shown(path)}`, (s) =>
        s.split('/').some((x) => bytes(x) > VALUE_LIMITS.component),
      );
}

/** An argv word or a shell script: tabs and newlines allowed, no NUL or other control character. */
export function checkShellText(value: unknown, what: string, max: number = VALUE_LIMITS.word): string {
  if (typeof value !== 'string') throw notAString(value, what);
  checkLength(value, what, max);
  const m = WORD_CONTROL.exec(value);
  if (m)
    throw new BadValue(`${what} must not contain NUL or control characters (${shown(m[0])}): ${shown(value)}`, (s) => WORD_CONTROL.test(s));
  return value;
}

/** A command as argv (every word checked) or as one script. */
export function checkCommand(cmd: unknown, what: string): string[] | string {
  if (typeof cmd === 'string') return checkShellText(cmd, what, VALUE_LIMITS.script);
  if (!Array.isArray(cmd)) throw new InputError(`${what} must be a list of words or a script`);
  cmd.forEach((w, i) => checkShellText(w, `${what}[${i}]`));
  return cmd as string[];
}
