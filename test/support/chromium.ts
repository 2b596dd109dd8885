// Headless Chromium for the report pages' e2e tests: a page opened from a file, in an empty
// network namespace (no network at all, not even loopback's services), its DOM after load and
// every console message (script errors and Content-Security-Policy violations are logged there).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
/** Why the browser tests cannot run here, or undefined. */
export const chromiumMissing = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is not installed (Debian's chromium package; .ci/run installs it)`;

export interface RenderedPage {
  dom: string;
  /** Console lines: `"message", source: file:///... (line)`. */
  console: string[];
  ms: number;
  code: number;
}

export function renderPage(file: string, timeoutMs = 60_000): Promise<RenderedPage> {
  const profile = mkdtempSync(join(tmpdir(), 'rs-chromium-'));
  const args = [
    '-n',
    CHROMIUM,
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    `--user-data-dir=${profile}`,
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--enable-logging=stderr',
    '--v=0',
    '--dump-dom',
    `file://${file}`,
  ];
  const started = performance.now();
  return new Promise((res, rej) => {
    const child = spawn('unshare', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let dom = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (dom += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
      const consoleLines = err
        .split('\n')
        .filter((l) => l.includes(':CONSOLE'))
        .map((l) => l.replace(/^.*?:CONSOLE[^\]]*\]\s*/, ''))
        // the browser's own pages log too ("Slow network is detected", source: chrome://resources/...), not the page's
        .filter((l) => !/, source: chrome:\/\//.test(l));
      res({ dom, console: consoleLines, ms: performance.now() - started, code: code ?? -1 });
    });
  });
}
