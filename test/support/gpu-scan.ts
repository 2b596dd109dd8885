// Hand-made GPU driver scans (gpu-files.ts's DriverScan) for table tests.
import type { DriverScan, ScannedFile } from '../../src/resources/jail/gpu-files.ts';

export const LIB = '/usr/lib/x86_64-linux-gnu';

/** A driver file found on the host, bound at `target` (by default its name in LIB), nothing there yet. */
export const scannedFile = (
  host: string,
  target = `${LIB}/${host.slice(host.lastIndexOf('/') + 1)}`,
  more: Partial<ScannedFile> = {},
): ScannedFile => ({
  host,
  target,
  dir: false,
  devIno: '254:1',
  mode: '755',
  targetKind: 'absent',
  targetSame: false,
  targetEmpty: false,
  ...more,
});

/** An x86_64 host's scan by the globs, of these files. */
export const driverScan = (files: ScannedFile[], more: Partial<DriverScan> = {}): DriverScan => ({
  arch: 'x86_64',
  libDir: LIB,
  source: 'globs',
  files,
  realDirs: new Map(),
  links: new Map(),
  cached: new Set(),
  ...more,
});
