// The jail e2e tests' doubles (see jail.test.ts's header): fake NVIDIA driver files that are real
// ELF shared objects with the driver's sonames, installed on a bed host, and shared jail exports
// (hard-linked copies of the bed's rootfs with the populated marker) under the bed's shared directory.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import * as tb from '../testbed/api.ts';
import { repoRoot } from './helpers.ts';

export const LIB = '/usr/lib/x86_64-linux-gnu';
export const DRIVER = '550.54.15';
export const OLD_DRIVER = '535.104.05';
export const ROOTFS = join(repoRoot, '.cache/testbed-rootfs');

export const exportDir = (name: string) => join(tb.sharedDir, name);

/** How many mounts a host's mount table has at each of these mountpoints (stacked ones count). */
export async function mountsAt(host: string, targets: readonly string[]): Promise<number[]> {
  const r = await tb.hostExec(host, 'cat /proc/self/mountinfo');
  expect(r.code, r.stderr).toBe(0);
  const points = r.stdout.split('\n').map((l) => l.split(' ')[4]);
  return targets.map((t) => points.filter((p) => p === t).length);
}

const elfCache = new Map<string, string>();
/** A real ELF shared object with this soname, base64 (built once per soname). */
export function elf(soname: string): string {
  const known = elfCache.get(soname);
  if (known) return known;
  const dir = mkdtempSync(join(tmpdir(), 'rs-gpu-'));
  writeFileSync(join(dir, 'x.c'), 'int racksmith_fake_driver(void) { return 42; }\n');
  execFileSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', join(dir, 'x.so'), join(dir, 'x.c')]);
  const b64 = readFileSync(join(dir, 'x.so')).toString('base64');
  rmSync(dir, { recursive: true, force: true });
  elfCache.set(soname, b64);
  return b64;
}
export const smi = () => Buffer.from('#!/bin/sh\necho "fake nvidia-smi on $(hostname)"\n').toString('base64');
/** Driver files of one version, libraries in `libDir`. */
export const driverFiles = (version: string, libDir = LIB): Record<string, string> => ({
  [`${libDir}/libnvidia-ml.so.${version}`]: elf('libnvidia-ml.so.1'),
  [`${libDir}/libcuda.so.${version}`]: elf('libcuda.so.1'),
  '/usr/bin/nvidia-smi': smi(),
});

/** The kernel module's version file, as a loaded driver shows it (a tmpfs over /proc/driver). */
export async function fakeProcVersion(host: string, version: string) {
  const line = `NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${version}  Tue Mar  5 22:23:56 UTC 2024`;
  const r = await tb.hostExec(
    host,
    `mount -t tmpfs rs-fake-nvidia /proc/driver && mkdir /proc/driver/nvidia && echo '${line}' > /proc/driver/nvidia/version`,
  );
  expect(r.code, r.stderr).toBe(0);
}

export async function installFiles(host: string, files: Record<string, string>) {
  for (const [path, b64] of Object.entries(files)) {
    const r = await tb.hostExec(host, `mkdir -p "$(dirname '${path}')" && base64 -d > '${path}' && chmod 755 '${path}'`, { input: b64 });
    expect(r.code, r.stderr).toBe(0);
  }
}

export function populateExport(name: string, setup?: (dir: string) => void) {
  const dir = exportDir(name);
  rmSync(dir, { recursive: true, force: true });
  // Hard links: instant, and nothing here writes into an existing file (ldconfig renames).
  execFileSync('cp', ['-al', ROOTFS, dir]);
  execFileSync('cp', ['--remove-destination', join(ROOTFS, 'etc/ld.so.cache'), join(dir, 'etc/ld.so.cache')]);
  writeFileSync(join(dir, 'etc/soperator-jail-populated'), 'populated by the jail e2e test\n');
  setup?.(dir);
}
