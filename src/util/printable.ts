// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text from the input (a host name, a key, a value) as it may be shown in a message: control
 * characters, line separators, bidirectional overrides and the invisible U+FEFF escaped (`\x1b`,
 * `\u202e`, `\ufeff`), so input can neither drive the terminal nor fake or hide parts of the message.
 */
export function printable(s: string): string {
  return s.replace(
    UNPRINTABLE,
    (c) =>
      NAMED[c] ??
      (c.charCodeAt(0) < 0x100
        ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** A message of several lines (racksmith's own line breaks kept): each line made printable. */
export function printableLines(s: string): string {
  return s.split('\n').map(printable).join('\n');
}
