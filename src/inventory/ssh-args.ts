import { printable } from '../util/printable.ts';
import { InputError, type SourcePos } from '../util/errors.ts';

/**
 * What racksmith honours of OpenSSH command-line options given in ansible_ssh_common_args,
 * ansible_ssh_extra_args or --ssh-common-args. racksmith speaks SSH itself (no `ssh` binary), so
 * every other option is bad input at its place: dropping one in silence would connect somewhere,
 * or somehow, other than the operator said.
 */
export interface SshArgs {
  /** ProxyJump / -J / `ProxyCommand ssh -W %h:%p HOST`: `[user@]host[:port]`, with where it was given. */
  jump?: { spec: string; pos?: SourcePos };
  /** ProxyJump=none: no jump host, whatever else says so. */
  noJump?: boolean;
  knownHostsFile?: string;
  /** StrictHostKeyChecking: yes/ask refuse unknown keys; accept-new/no record them (a changed key is always refused). */
  acceptNewHostKeys?: boolean;
  connectTimeoutSeconds?: number;
  identityFile?: string;
  identitiesOnly?: boolean;
  port?: number;
  user?: string;
}

const HONOURED =
  '-o ProxyJump=, -J, -o ProxyCommand=ssh -W %h:%p HOST, -o UserKnownHostsFile=, -o StrictHostKeyChecking=, -o ConnectTimeout=, -o IdentitiesOnly=, -o IdentityFile=, -o User=, -o Port=, -i, -p, -l';

/** Split like a POSIX shell does (quotes and backslashes; no expansion: ssh gets the words as Ansible passes them). */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  let cur: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      cur = (cur ?? '') + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      let s = '';
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length && '"\\$`'.includes(text[j + 1])) j++;
        s += text[j];
      }
      if (j >= text.length) throw new Error('unterminated double quote');
      cur = (cur ?? '') + s;
      i = j;
    } else if (c === '\\' && i + 1 < text.length) {
      cur = (cur ?? '') + text[++i];
    } else if (/\s/.test(c)) {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
    } else {
      cur = (cur ?? '') + c;
    }
  }
  if (cur !== undefined) words.push(cur);
  return words;
}

export function parseSshArgs(text: string, variable: string, pos: SourcePos | undefined): SshArgs {
  const bad = (why: string) => new InputError(`${variable}: ${why} (racksmith honours ${HONOURED})`, pos);
  let words: string[];
  try {
    words = shellWords(text);
  } catch (e) {
    throw bad((e as Error).message);
  }
  const out: SshArgs = {};
  const set = <K extends keyof SshArgs>(k: K, v: SshArgs[K]) => {
    if (!(k in out)) out[k] = v; // ssh: the first value given for an option wins
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const m = /^-([oJipl])(.*)$/.exec(w);
    if (!m) throw bad(`'${w}' is not supported`);
    const value = m[2] !== '' ? m[2] : words[++i];
    if (value === undefined) throw bad(`${w} needs a value`);
    if (m[1] === 'o') option(value, set, bad, pos);
    else if (m[1] === 'J') jumpOption(value, set, bad, pos);
    else if (m[1] === 'i') set('identityFile', value);
    else if (m[1] === 'p') set('port', port(value, bad));
    else set('user', value);
  }
  return out;
}

type Setter = <K extends keyof SshArgs>(k: K, v: SshArgs[K]) => void;

function option(text: string, set: Setter, bad: (why: string) => InputError, pos: SourcePos | undefined): void {
  const m = /^([A-Za-z]+)\s*(?:=\s*|\s+)(.*)$/s.exec(text.trim());
  if (!m) throw bad(`-o ${text}: expected Key=Value`);
  const key = m[1].toLowerCase();
  const value = m[2].trim();
  switch (key) {
    case 'proxyjump':
      return jumpOption(value, set, bad, pos);
    case 'proxycommand':
      return set('jump', { spec: proxyCommandJump(value, bad), pos });
    case 'userknownhostsfile': {
      const files = value.split(/\s+/);
      return set('knownHostsFile', files[0]);
    }
    case 'stricthostkeychecking': {
      const v = value.toLowerCase();
      if (['yes', 'ask'].includes(v)) return set('acceptNewHostKeys', false);
      if (['accept-new', 'no', 'off'].includes(v)) return set('acceptNewHostKeys', true);
      throw bad(`-o StrictHostKeyChecking=${value}: expected yes, ask, accept-new, no or off`);
    }
    case 'connecttimeout': {
      if (!/^[0-9]+$/.test(value) || Number(value) < 1) throw bad(`-o ConnectTimeout=${value}: expected whole seconds`);
      return set('connectTimeoutSeconds', Number(value));
    }
    case 'identitiesonly': {
      const v = value.toLowerCase();
      if (v !== 'yes' && v !== 'no') throw bad(`-o IdentitiesOnly=${value}: expected yes or no`);
      return set('identitiesOnly', v === 'yes');
    }
    case 'identityfile':
      return set('identityFile', value);
    case 'user':
      return set('user', value);
    case 'port':
      return set('port', port(value, bad));
    default:
      throw bad(`-o ${m[1]} is not supported`);
  }
}

function jumpOption(value: string, set: Setter, bad: (why: string) => InputError, pos: SourcePos | undefined): void {
  if (value.toLowerCase() === 'none') return set('noJump', true);
  if (value.includes(',')) throw bad(`ProxyJump ${value}: more than one jump host is not supported`);
  set('jump', { spec: value.replace(/^ssh:\/\//, ''), pos });
}

function port(value: string, bad: (why: string) => InputError): number {
  if (!/^[0-9]{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) throw bad(`port '${value}' is not 1..65535`);
  return Number(value);
}

/** `ssh [-q] [-l USER] [-p PORT] -W %h:%p [USER@]HOST`: the same as ProxyJump; any other command is not. */
function proxyCommandJump(command: string, bad: (why: string) => InputError): string {
  let words: string[];
  try {
    words = shellWords(command);
  } catch (e) {
    throw bad(`ProxyCommand: ${(e as Error).message}`);
  }
  // (the command is not quoted back: one that is refused may hold a password, `sshpass -p ...`)
  const refuse = () =>
    bad(
      `-o ProxyCommand=${printable(words[0] ?? '')} ...: only 'ssh [-q] [-l USER] [-p PORT] -W %h:%p [USER@]HOST' is supported (a jump host)`,
    );
  if (words[0] !== 'ssh' && !/\/ssh$/.test(words[0] ?? '')) throw refuse();
  let user: string | undefined;
  let p: string | undefined;
  let forward = false;
  let dest: string | undefined;
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (w === '-q') continue;
    if (w === '-W' && words[i + 1] === '%h:%p') {
      forward = true;
      i++;
    } else if (w === '-l' && words[i + 1]) user = words[++i];
    else if (w === '-p' && words[i + 1]) p = words[++i];
    else if (!w.startsWith('-') && dest === undefined) dest = w;
    else throw refuse();
  }
  if (!forward || !dest) throw refuse();
  const host = dest.includes('@') || user === undefined ? dest : `${user}@${dest}`;
  return p === undefined ? host : `${host}:${p}`;
}
