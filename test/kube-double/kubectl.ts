/** Runs the real kubectl against a kube double, with its own kubeconfig and discovery cache. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Kubectl {
  /** kubectl --kubeconfig <tmp> --cache-dir <tmp> ...args; never throws on a non-zero exit. */
  run(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<KubectlResult>;
  kubeconfigPath: string;
  /** Removes the temporary kubeconfig and cache. */
  cleanup(): void;
}

export function kubectlFor(kubeconfig: string): Kubectl {
  const dir = mkdtempSync(join(tmpdir(), 'kube-double-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigPath, kubeconfig, { mode: 0o600 });
  const base = ['--kubeconfig', kubeconfigPath, '--cache-dir', join(dir, 'cache')];
  return {
    kubeconfigPath,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
    run: (args, opts = {}) =>
      new Promise((resolve, reject) => {
        const child = spawn(KUBECTL, [...base, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, HOME: dir } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
        child.on('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
        child.stdin.end(opts.input ?? '');
      }),
  };
}
