import { shellWords } from '../connection/ssh-args.ts';
import { shJoin } from '../shell/quote.ts';
import { InputError, type SourcePos } from '../util/errors.ts';

/**
 * OpenSSH options about connection sharing and compression: Ansible's own default `ssh_args`
 * (`-C -o ControlMaster=auto -o ControlPersist=60s`) and what operators add to it. racksmith keeps
 * one connection per host for the whole run, so they have nothing left to do and are dropped.
 */
const SHARING = /^(ControlMaster|ControlPersist|ControlPath|Compression)=/i;

/**
 * ansible.cfg's `[ssh_connection] ssh_args` as the default of --ssh-common-args: the sharing and
 * compression options dropped, the rest checked later as --ssh-common-args is (the same allowed
 * options as ansible_ssh_common_args, anything else exit 3 at the setting's line).
 */
export function sshArgsOfConfig(text: string, origin: SourcePos): string {
  let words: string[];
  try {
    words = shellWords(text);
  } catch (e) {
    throw new InputError(`ssh_args: ${(e as Error).message}`, origin);
  }
  const kept: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === '-C') continue;
    if (w === '-o' && i + 1 < words.length && SHARING.test(words[i + 1])) {
      i++;
      continue;
    }
    if (w.startsWith('-o') && SHARING.test(w.slice(2))) continue;
    kept.push(w);
  }
  return shJoin(kept);
}
