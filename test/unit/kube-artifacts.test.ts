// Pinned artifacts on the controller: mirror directory, HTTP download with a content-addressed
// cache, and every way an artifact can be unusable (a problem, never an exception).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cacheDir, clearArtifactMemo, loadArtifact, sha256Hex } from '../../src/kube/artifacts.ts';

const dir = mkdtempSync(join(tmpdir(), 'rs-kube-artifacts-'));
const body = Buffer.from('apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n');
const sha = sha256Hex(body);
// The download runs synchronously (spawnSync), so the server lives in another process.
let server: ChildProcess;
let base: string;
const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const dir = process.argv[1];
let hits = 0;
const srv = http.createServer((req, res) => {
  if (req.url === '/hits') return res.end(String(hits));
  hits++;
  const f = dir + '/' + req.url.replace(/^\\/m\\//, '');
  if (req.url.startsWith('/m/') && fs.existsSync(f)) res.end(fs.readFileSync(f));
  else { res.statusCode = 404; res.end('not here'); }
});
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
`;
const hits = async () => Number(await (await fetch(`${base}/hits`)).text());
const savedCache = process.env.XDG_CACHE_HOME;

beforeAll(async () => {
  process.env.XDG_CACHE_HOME = join(dir, 'cache');
  writeFileSync(join(dir, 'good.yaml'), body);
  writeFileSync(join(dir, 'bad.yaml'), Buffer.concat([body.subarray(0, 10), Buffer.from('X'), body.subarray(11)]));
  server = spawn(process.execPath, ['-e', SERVER, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((r) => server.stdout!.once('data', (b: Buffer) => r(b.toString().trim())));
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  process.env.XDG_CACHE_HOME = savedCache;
  server.kill();
});

beforeEach(() => clearArtifactMemo());

describe('artifacts', () => {
  it('a mirror file with the pinned bytes is loaded', () => {
    const a = loadArtifact({ label: 'x', sha256: sha, sources: [join(dir, 'good.yaml')] });
    expect(a.problem).toBeUndefined();
    expect(a.bytes).toEqual(body);
  });

  it('one changed byte is a checksum problem naming both hashes; a tampered mirror does not fall back to other sources', () => {
    const a = loadArtifact({
      label: 'flannel v0.28.9 kube-flannel.yml',
      sha256: sha,
      sources: [join(dir, 'bad.yaml'), join(dir, 'good.yaml')],
    });
    expect(a.bytes).toBeUndefined();
    expect(a.problem).toMatch(
      new RegExp(
        `^flannel v0\\.28\\.9 kube-flannel\\.yml: sha256 mismatch for .*bad\\.yaml: got [0-9a-f]{64}, pinned ${sha} .*nothing was applied$`,
      ),
    );
  });

  it('a missing file is a problem', () => {
    expect(loadArtifact({ label: 'x', sha256: sha, sources: [join(dir, 'nope.yaml')] }).problem).toMatch(
      /x: not available: .*nope\.yaml: not found/,
    );
    expect(loadArtifact({ label: 'x', sha256: sha, sources: [] }).problem).toMatch(/no source configured/);
  });

  it('downloads over HTTP once, then serves from the content-addressed cache', async () => {
    const before = await hits();
    const a = loadArtifact({ label: 'x', sha256: sha, sources: [`${base}/m/good.yaml`] });
    expect(a.problem).toBeUndefined();
    expect(a.bytes).toEqual(body);
    expect(await hits()).toBe(before + 1);
    expect(existsSync(join(cacheDir(), sha))).toBe(true);
    clearArtifactMemo();
    const b = loadArtifact({ label: 'x', sha256: sha, sources: [`${base}/m/good.yaml`] });
    expect(b.bytes).toEqual(body);
    expect(b.source).toMatch(/\(cached\)$/);
    expect(await hits()).toBe(before + 1);
  });

  it('a corrupt cache entry is ignored and replaced by a verified download', () => {
    const other = Buffer.from('kind: Other\n');
    const osha = sha256Hex(other);
    writeFileSync(join(dir, 'other.yaml'), other);
    mkdirSync(cacheDir(), { recursive: true });
    writeFileSync(join(cacheDir(), osha), 'corrupt');
    const a = loadArtifact({ label: 'x', sha256: osha, sources: [`${base}/m/other.yaml`] });
    expect(a.problem).toBeUndefined();
    expect(a.source).not.toMatch(/cached/);
    expect(readFileSync(join(cacheDir(), osha))).toEqual(other);
  });

  it('an HTTP error is a problem', () => {
    expect(loadArtifact({ label: 'x', sha256: 'e'.repeat(64), sources: [`${base}/m/missing.yaml`] }).problem).toMatch(
      /missing\.yaml: HTTP 404/,
    );
  });

  it('a download with other bytes is a checksum problem and is not cached', () => {
    const bad = readFileSync(join(dir, 'bad.yaml'));
    const want = sha256Hex(Buffer.from('something else'));
    const a = loadArtifact({ label: 'x', sha256: want, sources: [`${base}/m/bad.yaml`] });
    expect(a.problem).toMatch(/sha256 mismatch/);
    expect(existsSync(join(cacheDir(), sha256Hex(bad)))).toBe(false);
  });

  it('an unreachable server is a problem with the reason', () => {
    const a = loadArtifact({ label: 'x', sha256: 'f'.repeat(64), sources: ['http://127.0.0.1:1/x.yaml'] });
    expect(a.problem).toMatch(/x: not available: http:\/\/127\.0\.0\.1:1\/x\.yaml: .*(ECONNREFUSED|fetch failed)/);
  });
});
