/**
 * Python 3.11's fnmatch.translate, as Ansible matches a host pattern against host and group
 * names (case-sensitive, whole name): `*`, `?`, `[seq]`, `[!seq]` with ranges (`[a-c]`); a `[`
 * with no closing `]` is itself; an empty class matches nothing, `[!]` any one character.
 */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  let i = 0;
  const chars = [...glob];
  while (i < chars.length) {
    const c = chars[i++];
    if (c === '*') {
      if (!re.endsWith('.*')) re += '.*';
    } else if (c === '?') re += '.';
    else if (c === '[') {
      let j = i;
      if (j < chars.length && chars[j] === '!') j++;
      if (j < chars.length && chars[j] === ']') j++;
      while (j < chars.length && chars[j] !== ']') j++;
      if (j >= chars.length) re += '\\[';
      else {
        re += charClass(chars.slice(i, j));
        i = j + 1;
      }
    } else re += lit(c);
  }
  return new RegExp(`^(?:${re})$`, 'su');
}

/** The body of `[...]` (between the brackets), as fnmatch.translate turns it into a class. */
function charClass(body: string[]): string {
  // Chunks separated by range hyphens: fnmatch looks for a '-' from the second character on
  // (the third after '!'), and each range hyphen skips the character after it.
  const chunks: string[][] = [];
  let start = 0;
  let k = body[0] === '!' ? 2 : 1;
  for (;;) {
    let at = -1;
    for (let x = k; x < body.length; x++)
      if (body[x] === '-') {
        at = x;
        break;
      }
    if (at < 0) break;
    chunks.push(body.slice(start, at));
    start = at + 1;
    k = at + 3;
  }
  const last = body.slice(start);
  if (last.length) chunks.push(last);
  else if (chunks.length) chunks[chunks.length - 1].push('-');
  // Remove empty ranges (`z-a`): the two chunks join without their ends.
  for (let x = chunks.length - 1; x > 0; x--) {
    const before = chunks[x - 1];
    if (before.length && chunks[x].length && before[before.length - 1] > chunks[x][0]) {
      chunks[x - 1] = [...before.slice(0, -1), ...chunks[x].slice(1)];
      chunks.splice(x, 1);
    }
  }
  const flat = chunks.flat();
  if (flat.length === 0) return '(?!)';
  if (flat.length === 1 && flat[0] === '!' && chunks.length === 1) return '.';
  let negate = false;
  if (chunks[0][0] === '!') {
    negate = true;
    chunks[0] = chunks[0].slice(1);
  }
  const parts = chunks.map((ch) => ch.map(lit).join(''));
  return `[${negate ? '^' : ''}${parts.join('-')}]`;
}

/** One character, literally, in or out of a class (`\u{..}` is valid in both under the u flag). */
function lit(c: string): string {
  return /^[A-Za-z0-9_]$/.test(c) ? c : `\\u{${c.codePointAt(0)!.toString(16)}}`;
}
