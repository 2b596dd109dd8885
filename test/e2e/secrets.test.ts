// Issue 19, secrets: a secret is masked in every rendering of every text that holds it, in every
// sink (stdout, stderr, --json, journal, plan); masks are keyed; a secret where secrets are not
// taken, an unknown tag or a YAML error on a secret's line is exit 3 with no host contacted.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, repoRoot, writeInventory, type CliRun } from './helpers.ts';

const PB = 'test/fixtures/playbooks/secrets.ts';
const HOST = 'tb9';
const tmp = () => mkdtempSync(join(tmpdir(), 'rs-secrets-'));
const newSecret = () => 'S3cr3t-' + Math.random().toString(36).slice(2, 12);

/** An inventory for HOST with extra host vars written as YAML text (a `!secret` tag needs the text). */
function inventoryWith(lines: string[]): string {
  const inv = join(tmp(), 'inv.yaml');
  const base = readFileSync(writeInventory({ hosts: [HOST], format: 'yaml' }), 'utf8');
  const at = base.indexOf(`    ${HOST}:\n`) + `    ${HOST}:\n`.length;
  writeFileSync(inv, base.slice(0, at) + lines.map((l) => `      ${l}\n`).join('') + base.slice(at));
  return inv;
}

/** The sshd log's length on a host: it grows with every connection. */
async function sshdLog(host: string): Promise<number> {
  return Number((await tb.hostExec(host, 'wc -l < /var/log/sshd.log 2>/dev/null || echo 0')).stdout.trim());
}

/** provision with text on stdin (the secret a plan asks for again). */
function provisionStdin(args: string[], input: string, env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', rej);
    child.on('close', (code) => res({ code: code ?? -1, stdout, stderr, events: [] }));
    child.stdin.end(input);
  });
}

const leaks = (secret: string, texts: Record<string, string>) =>
  Object.entries(texts)
    .filter(([, t]) => t.includes(secret))
    .map(([k]) => k);

describe('secrets in every sink', () => {
  it('a line and a block stacked on a file that holds a secret: masked in --diff, --json, journal and plan, in check and apply', async () => {
    await tb.reset([HOST]);
    const secret = newSecret();
    const inv = inventoryWith([`fx_secret: !secret "password = ${secret}\\n"`]);
    const dir = tmp();
    // the file holds the secret, written by someone else (a file racksmith writes from a secret is sensitive: no diff at all)
    const seed = await tb.hostExec(HOST, `mkdir -p /srv/rs-secrets && printf 'password = %s\\n' '${secret}' > /srv/rs-secrets/app.conf`);
    expect(seed.code, seed.stderr).toBe(0);
    const plan = join(dir, 'edit.plan');
    const journal = join(dir, 'edit.ndjson');
    const check = await provision([PB, '-i', inv, '--check', '--diff', '-v', '-v', '--json', '--plan-out', plan, '--journal', journal]);
    expect(check.code, check.stderr).toBe(2);
    // the diff is there, with the secret's line as its mask
    const mask = /<secret hmac:[0-9a-f]{16}…>/.exec(check.stderr)?.[0];
    expect(mask, check.stderr).toBeDefined();
    expect(check.stderr).toContain(` ${mask}\n`);
    expect(check.stderr).toMatch(/\+mode = on\n/);
    expect(check.stdout).toContain(mask);
    const apply = await provision(['apply', plan, '--diff', '--json', '--journal', journal]);
    expect(apply.code, apply.stderr).toBe(0);
    // the host's file changed under the edits: the next diff shows the secret from the host's copy
    const again = await provision([PB, '-i', inv, '-e', 'fx_mode=off', '--check', '--diff', '--json', '--journal', journal]);
    expect(again.code, again.stderr).toBe(2);
    expect(again.stderr).toContain(` ${mask}\n`);
    expect(
      leaks(secret, {
        'check stdout': check.stdout,
        'check stderr': check.stderr,
        'apply stdout': apply.stdout,
        'apply stderr': apply.stderr,
        'again stdout': again.stdout,
        'again stderr': again.stderr,
        plan: readFileSync(plan, 'utf8'),
        journal: readFileSync(journal, 'utf8'),
      }),
    ).toEqual([]);
    expect(statSync(journal).mode & 0o777).toBe(0o600);
    expect(statSync(plan).mode & 0o777).toBe(0o600);
    // the host has the real value
    expect((await tb.hostExec(HOST, 'cat /srv/rs-secrets/app.conf')).stdout).toBe(
      `password = ${secret}\nmode = on\n# BEGIN RACKSMITH MANAGED BLOCK\nlevel = on\n# END RACKSMITH MANAGED BLOCK\n`,
    );
  });

  it('an -e secret: the plan stores its mask; apply asks for it again (stdin or -e) and refuses a different one', async () => {
    await tb.reset([HOST]);
    const secret = newSecret();
    const inv = writeInventory({ hosts: [HOST] });
    const dir = tmp();
    const plan = join(dir, 'p.plan');
    const e = JSON.stringify({ fx_secret: { secret } });
    const check = await provision([
      PB,
      '-i',
      inv,
      '-e',
      e,
      '-e',
      'fx_stage=seed',
      '--check',
      '--plan-out',
      plan,
      '--journal',
      join(dir, 'c'),
    ]);
    expect(check.code, check.stderr).toBe(2);
    const text = readFileSync(plan, 'utf8');
    expect(text).not.toContain(secret);
    expect(JSON.parse(text).argv.join(' ')).toMatch(/racksmith_secret_mask.*<secret hmac:[0-9a-f]{16}…>/);
    const before = await sshdLog(HOST);
    const wrong = await provisionStdin(['apply', plan, '--journal', join(dir, 'w')], 'not-the-secret\n');
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/-e fx_secret: the secret given is not the one the plan was made with/);
    const wrongE = await provision(['apply', plan, '-e', JSON.stringify({ fx_secret: { secret: 'nope' } })]);
    expect(wrongE.code).toBe(3);
    const plainE = await provision(['apply', plan, '-e', 'fx_mode=off']);
    expect(plainE.code).toBe(3);
    expect(plainE.stderr).toContain(
      `fx_mode is a plain value: apply's -e gives again only the plan's -e secrets, as secrets (-e '{"fx_mode": {"secret": "..."}}'); every other variable is as the plan recorded it`,
    );
    expect(await sshdLog(HOST)).toBe(before); // nothing contacted the host
    const right = await provisionStdin(['apply', plan, '--json', '--journal', join(dir, 'a')], secret + '\n');
    expect(right.code, right.stderr).toBe(0);
    expect(leaks(secret, { stdout: right.stdout, stderr: right.stderr, journal: readFileSync(join(dir, 'a'), 'utf8') })).toEqual([]);
    expect((await tb.hostExec(HOST, 'cat /srv/rs-secrets/app.conf')).stdout).toBe(secret);
    // and again with -e (no terminal needed); the host is converged: nothing to do
    const viaE = await provision(['apply', plan, '-e', e, '--journal', join(dir, 'b')]);
    expect(viaE.code, viaE.stderr).toBe(1); // the plan's changes are done already: drift refused
    expect(viaE.stderr).not.toContain(secret);
  });
});

describe('a file written from a secret stays sensitive on its host', () => {
  it('check, apply, converged, then --check --diff with the secret missing or empty: its old content is in no sink; a sensitive: true file neither', async () => {
    await tb.reset([HOST]);
    const secret = newSecret();
    const plain = (n: number) => `token = Pl41n-${n}-${secret.slice(7)}\n`;
    const inv = (lines: string[]) => inventoryWith(['fx_stage: sensitive', ...lines]);
    const withSecret = inv([`fx_s3: !secret "${secret}"`, `fx_plain: "${plain(1).trimEnd()}\\n"`]);
    const dir = tmp();
    const sinks: Record<string, string> = {};
    const run = async (name: string, args: string[], code: number) => {
      const journal = join(dir, `${name}.ndjson`);
      const r = await provision([PB, ...args, '--diff', '--json', '--journal', journal]);
      expect(r.code, r.stderr).toBe(code);
      Object.assign(sinks, {
        [`${name} stdout`]: r.stdout,
        [`${name} stderr`]: r.stderr,
        [`${name} journal`]: readFileSync(journal, 'utf8'),
      });
      return r;
    };
    const hostFiles = async () =>
      (await tb.hostExec(HOST, 'cat /srv/rs-secrets/s3.conf /srv/rs-secrets/plain.conf; cat /var/lib/racksmith/sensitive-files')).stdout;
    // a dry run on a fresh host changes nothing
    const dry = await run('dry', ['-i', withSecret, '--check'], 2);
    expect(dry.stderr).toMatch(/s3\.conf \(sensitive: content not shown\): absent → \d+ bytes, hmac:[0-9a-f]{16}/);
    expect((await tb.hostExec(HOST, 'ls /srv/rs-secrets /var/lib/racksmith/sensitive-files 2>&1')).stdout).toMatch(
      /No such file[\s\S]*No such file/,
    );
    // apply, then converged
    const apply = await run('apply', ['-i', withSecret], 0);
    expect(recaps(apply)[HOST]).toMatchObject({ failed: 0 });
    expect(await hostFiles()).toBe(`[default]\nsecret_key = ${secret}\n${plain(1)}/srv/rs-secrets/s3.conf\n/srv/rs-secrets/plain.conf\n`);
    const again = await run('again', ['-i', withSecret], 0);
    expect(recaps(again)[HOST]).toMatchObject({ changed: 0, failed: 0, execs: 1 });
    // later runs that do not have the secret (missing, empty) and change the plain text: no content shown
    const missing = inv([`fx_plain: "${plain(2).trimEnd()}\\n"`]);
    const empty = inv([`fx_s3: ""`, `fx_plain: "${plain(2).trimEnd()}\\n"`]);
    for (const [name, i] of [
      ['missing', missing],
      ['empty', empty],
    ] as const) {
      const plan = join(dir, `${name}.plan`);
      const r = await run(name, ['-i', i, '--check', '-v', '-v', '--plan-out', plan], 2);
      sinks[`${name} plan`] = readFileSync(plan, 'utf8');
      expect(r.stderr).toMatch(/s3\.conf \(sensitive: content not shown\): \d+ bytes, hmac:[0-9a-f]{16} → 0 bytes/);
      expect(r.stderr).toMatch(/plain\.conf \(sensitive: content not shown\): \d+ bytes, hmac:[0-9a-f]{16} → \d+ bytes, hmac:[0-9a-f]{16}/);
      const diffs = r.events
        .filter((e) => e.type === 'resource')
        .flatMap((e) => (e.changes ?? []).map((c: { diff?: string }) => c.diff ?? ''));
      expect(diffs.join('\n')).toMatch(/sensitive: content not shown/);
    }
    // the dry runs changed nothing
    expect(await hostFiles()).toBe(`[default]\nsecret_key = ${secret}\n${plain(1)}/srv/rs-secrets/s3.conf\n/srv/rs-secrets/plain.conf\n`);
    // removed with state: absent, it is no longer listed; the other stays
    const absent = inv([`fx_s3_absent: true`, `fx_plain: "${plain(1).trimEnd()}\\n"`]);
    expect((await run('absent', ['-i', absent], 0)).stderr).toMatch(/remove \/srv\/rs-secrets\/s3\.conf/);
    expect((await tb.hostExec(HOST, 'ls /srv/rs-secrets; cat /var/lib/racksmith/sensitive-files')).stdout).toBe(
      'plain.conf\n/srv/rs-secrets/plain.conf\n',
    );
    expect(recaps(await run('absent-again', ['-i', absent], 0))[HOST]).toMatchObject({ changed: 0, failed: 0 });
    expect(leaks(secret, sinks)).toEqual([]);
    expect(leaks(plain(1).trim(), sinks)).toEqual([]);
    expect(leaks(plain(2).trim(), sinks)).toEqual([]);
    expect(leaks('secret_key', sinks)).toEqual([]);
  });
});

describe('a sensitive file written without become', () => {
  it("is listed in the login user's own list, which its later probes read: no content shown when the secret is missing", async () => {
    await tb.reset([HOST]);
    const secret = newSecret();
    const inv = (lines: string[]) => inventoryWith(['fx_stage: home', 'ansible_user: ops', ...lines]);
    const dir = tmp();
    const apply = await provision([PB, '-i', inv([`fx_s3: !secret "${secret}"`]), '--journal', join(dir, 'a')]);
    expect(apply.code, apply.stderr).toBe(0);
    const lists = await tb.hostExec(
      HOST,
      'cat /home/ops/.local/state/racksmith/sensitive-files; ls /var/lib/racksmith 2>&1; cat /home/ops/rs-secret.conf',
    );
    expect(lists.stdout).toMatch(new RegExp(`^/home/ops/rs-secret\\.conf\n.*No such file.*\nkey = ${secret}\n$`));
    const check = await provision([PB, '-i', inv([]), '--check', '--diff', '--json', '--journal', join(dir, 'c')]);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toMatch(/rs-secret\.conf \(sensitive: content not shown\): \d+ bytes, hmac:[0-9a-f]{16} → 0 bytes/);
    expect(leaks(secret, { stdout: check.stdout, stderr: check.stderr, journal: readFileSync(join(dir, 'c'), 'utf8') })).toEqual([]);
  });
});

describe('a secret where secrets are not taken', () => {
  it.each([
    ['argv', 'a command argv word'],
    ['built', 'a string built from it (command argv)'],
    ['line', 'a string built from it (a line)'],
  ])('%s (%s): exit 3 at the secret’s file:line; nothing sent to the host', async (leak) => {
    await tb.reset([HOST]);
    const secret = newSecret();
    const inv = inventoryWith([`fx_leak: ${leak}`, `fx_secret: !secret ${secret}`]);
    const line =
      readFileSync(inv, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('fx_secret:')) + 1;
    const before = await sshdLog(HOST);
    for (const args of [['--check'], []]) {
      const r = await provision([PB, '-i', inv, ...args, '--json', '--journal', join(tmp(), 'j')]);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(new RegExp(`${inv.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${line}:\\d+: a secret cannot be used in `));
      expect(r.stdout + r.stderr).not.toContain(secret);
    }
    expect(await sshdLog(HOST)).toBe(before);
    expect((await tb.hostExec(HOST, 'ls /srv/rs-secrets 2>&1')).stdout).toMatch(/No such file/);
  });
});

describe('inventory text around a secret', () => {
  it.each([
    ['a misspelled tag', (s: string) => [`fx_secret: !Secret ${s}`], /Unresolved tag: !Secret/],
    ['a plural tag', (s: string) => [`fx_secret: !secrets ${s}`], /Unresolved tag: !secrets/],
    ['a python object tag', (s: string) => [`fx_secret: !!python/object ${s}`], /Unresolved tag/],
    ['an exec tag', (s: string) => [`fx_secret: !exec ${s}`], /Unresolved tag: !exec/],
    ['a YAML error on the secret’s line', (s: string) => [`fx_secret: !secret ${s}: [x`], /YAML: /],
    ['an unterminated quoted secret', (s: string) => [`fx_secret: !secret "${s}`], /YAML: /],
  ])('%s: exit 3 at its line, the value never quoted', async (_, lines, why) => {
    const secret = newSecret();
    const inv = inventoryWith(lines(secret));
    const before = await sshdLog(HOST);
    const r = await provision([PB, '-i', inv, '--check', '--journal', join(tmp(), 'j')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(why);
    expect(r.stderr).toMatch(/inv\.yaml:\d+:\d+: /);
    expect(r.stdout + r.stderr).not.toContain(secret);
    expect(await sshdLog(HOST)).toBe(before);
  });
});

describe('masks', () => {
  it('are keyed per installation (0600 key in the state dir): the same across runs, another in another installation', async () => {
    const secret = newSecret();
    const inv = inventoryWith([`fx_secret: !secret "${secret}"`]);
    const state = tmp();
    const maskIn = async (dir: string) => {
      const r = await provision(['inventory', '-i', inv, '--host', HOST], { env: { XDG_STATE_HOME: dir } });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain(secret);
      return JSON.parse(r.stdout).fx_secret as string;
    };
    const a = await maskIn(state);
    expect(a).toMatch(/^<secret hmac:[0-9a-f]{16}…>$/);
    expect(await maskIn(state)).toBe(a);
    const key = join(state, 'racksmith', 'installation.key');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    const other = tmp();
    mkdirSync(join(other, 'racksmith'));
    expect(await maskIn(other)).not.toBe(a);
  });
});
