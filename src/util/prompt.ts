import { InputError } from './errors.ts';

/**
 * Ask for a password on the terminal without echo (stderr shows the prompt). Without a terminal
 * (a pipe), the first line of stdin is the password, as Ansible's getpass falls back to.
 */
export function promptPassword(
  prompt: string,
  stdin: NodeJS.ReadStream = process.stdin,
  stderr: NodeJS.WriteStream = process.stderr,
): Promise<Buffer> {
  // what the messages below call it: the prompt's own words ("BECOME password", "Vault password")
  const what = prompt.replace(/[:\s]+$/, '') || 'password';
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const tty = stdin.isTTY === true;
    // echo off before the prompt shows: what is typed the moment it appears must not be echoed
    if (tty) stdin.setRawMode(true);
    stderr.write(prompt);
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.off('error', onError);
      if (tty) stdin.setRawMode(false);
      stdin.pause();
      if (tty) stderr.write('\n');
      if (err) reject(err);
      else resolve(Buffer.concat(chunks));
    };
    const onData = (d: Buffer) => {
      for (let i = 0; i < d.length; i++) {
        const c = d[i];
        if (c === 0x0a || c === 0x0d) {
          chunks.push(d.subarray(0, i));
          return finish();
        }
        if (tty && c === 0x03) return finish(new InputError(`${what}: prompt interrupted`));
        if (tty && (c === 0x7f || c === 0x08)) {
          const all = Buffer.concat([...chunks, d.subarray(0, i)]);
          chunks.length = 0;
          chunks.push(all.subarray(0, Math.max(0, all.length - 1)));
          d = d.subarray(i + 1);
          i = -1;
          continue;
        }
      }
      chunks.push(d);
      if (Buffer.concat(chunks).length > 64 * 1024) finish(new InputError(`${what} is too long`));
    };
    const onEnd = () => finish(chunks.length ? undefined : new InputError(`no ${what} given: stdin is closed`));
    const onError = (e: Error) => finish(new InputError(`cannot read the ${what}: ${e.message}`));
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.on('error', onError);
    stdin.resume();
  });
}
