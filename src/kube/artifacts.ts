/**
 * Artifacts (manifests, tarballs) read on the controller, the machine where `provision` runs.
 *
 * Design: the controller gets every byte that will reach a cluster or a node, checks it against
 * its pinned sha256 BEFORE anything is applied, then renders and validates; the rendered YAML
 * travels inside the apply script (the nodes need no internet and no mirror). Sources, in order:
 *   1. a local mirror directory (`kube_manifest_dir`): `<dir>/<component>-<version>/<file>`;
 *   2. an HTTP mirror (`kube_manifest_base_url`): `<base>/<component>-<version>/<file>`;
 *   3. the upstream URL of the pin.
 * Downloads land in a content-addressed cache (`$XDG_CACHE_HOME/racksmith/artifacts/<sha256>`,
 * written only after the hash matched), so a second run needs no network.
 *
 * Loading happens while the playbook builds its resources, which is synchronous: a download runs
 * in a child `node` process (spawnSync). A problem (missing file, download error, hash mismatch)
 * is not thrown here; it is returned, and the playbook turns it into a refusal that stops every
 * host before anything is applied (exit 1), see `artifactsGuard` in src/resources/kube/kube.ts.
 */
import { spawnSync } from 'node:child_process';
import { sha256 } from '../util/sha256.ts';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

export interface ArtifactRequest {
  /** Shown in messages: "calico v3.32.1 operator-crds.yaml". */
  label: string;
  sha256: string;
  /** Where to get it: candidates tried in order (local paths or http(s)/file URLs). */
  sources: string[];
}

export interface LoadedArtifact {
  label: string;
  sha256: string;
  /** The verified bytes; absent when `problem` is set. */
  bytes?: Buffer;
  /** Where the bytes came from. */
  source?: string;
  /** Why the artifact cannot be used (checksum mismatch, not found, download failed). */
  problem?: string;
}

export { sha256 as sha256Hex };

export function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'racksmith', 'artifacts');
}

const memo = new Map<string, LoadedArtifact>();

/** Forget loaded artifacts (tests). */
export function clearArtifactMemo(): void {
  memo.clear();
}

/**
 * Load and verify an artifact. The first source that yields bytes decides: a mirror that has
 * the file with wrong bytes is a problem, not a reason to try upstream (a tampered mirror must
 * stop the run). Results are memoised per process.
 */
export function loadArtifact(req: ArtifactRequest): LoadedArtifact {
  const key = `${req.sha256}\n${req.sources.join('\n')}`;
  const hit = memo.get(key);
  if (hit) return hit;
  const out = load(req);
  memo.set(key, out);
  return out;
}

function load(req: ArtifactRequest): LoadedArtifact {
  const base = { label: req.label, sha256: req.sha256 };
  const errors: string[] = [];
  for (const src of req.sources) {
    const remote = /^https?:\/\//.test(src);
    let bytes: Buffer | undefined;
    if (remote) {
      const cached = readCache(req.sha256);
      if (cached) return { ...base, bytes: cached, source: `${src} (cached)` };
      const r = download(src);
      if ('error' in r) {
        errors.push(`${src}: ${r.error}`);
        continue;
      }
      bytes = r.bytes;
    } else {
      const path = src.startsWith('file://') ? decodeURIComponent(new URL(src).pathname) : src;
      if (!existsSync(path)) {
        errors.push(`${path}: not found`);
        continue;
      }
      try {
        if (!statSync(path).isFile()) throw new Error('not a regular file');
        bytes = readFileSync(path);
      } catch (e) {
        errors.push(`${path}: ${(e as Error).message}`);
        continue;
      }
    }
    const got = sha256(bytes);
    if (got !== req.sha256) {
      return {
        ...base,
        source: src,
        problem: `${req.label}: sha256 mismatch for ${src}: got ${got}, pinned ${req.sha256} (the file was modified or is not the pinned release); nothing was applied`,
      };
    }
    if (remote) writeCache(req.sha256, bytes);
    return { ...base, bytes, source: src };
  }
  return { ...base, problem: `${req.label}: not available: ${errors.join('; ') || 'no source configured'}` };
}

function readCache(sha: string): Buffer | undefined {
  const p = join(cacheDir(), sha);
  if (!existsSync(p)) return undefined;
  const b = readFileSync(p);
  return sha256(b) === sha ? b : undefined; // a corrupt cache entry is ignored (and overwritten)
}

function writeCache(sha: string, bytes: Buffer): void {
  try {
    const dir = cacheDir();
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `.${sha}.${process.pid}.tmp`);
    writeFileSync(tmp, bytes);
    renameSync(tmp, join(dir, sha));
  } catch {
    // the cache is an optimisation only
  }
}

const FETCH_SCRIPT = `
const url = process.argv[1];
const ctl = AbortSignal.timeout(Number(process.argv[2]));
fetch(url, { signal: ctl, redirect: 'follow' })
  .then(async (r) => {
    if (!r.ok) { process.stderr.write('HTTP ' + r.status + ' ' + r.statusText); process.exit(2); }
    process.stdout.write(Buffer.from(await r.arrayBuffer()));
  })
  .catch((e) => { process.stderr.write(String(e && e.cause ? e.message + ': ' + e.cause.message : e)); process.exit(3); });
`;

/** Download synchronously (the playbook builds resources synchronously). */
export function download(url: string, timeoutMs = 120_000): { bytes: Buffer } | { error: string } {
  const r = spawnSync(process.execPath, ['-e', FETCH_SCRIPT, url, String(timeoutMs)], {
    maxBuffer: 512 * 1024 * 1024,
    timeout: timeoutMs + 5000,
  });
  if (r.error) return { error: r.error.message };
  if (r.status !== 0) return { error: r.stderr.toString().trim() || `exit ${r.status}` };
  return { bytes: r.stdout };
}

/** A path from the inventory on the controller: absolute, or relative to the current directory. */
export function controllerPath(p: string): string {
  return isAbsolute(p) ? p : resolve(p);
}
