// Shared helpers for e2e tests: run the real CLI against test-bed hosts, build inventories.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Parsed NDJSON events (only with --json). */
  events: Array<Record<string, any>>;
}

/** Run `provision ARGS` as a user would (node bin/provision.js), never throwing on exit codes. */
export function provision(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<CliRun> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      const events = args.includes('--json')
        ? stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : [];
      res({ code: code ?? -1, stdout, stderr, events });
    });
  });
}

export interface InventorySpec {
  hosts: string[];
  /** vars for every host (merged over the test bed's connection vars) */
  vars?: Record<string, unknown>;
  /** extra groups: name -> { hosts, vars } */
  groups?: Record<string, { hosts: string[]; vars?: Record<string, unknown> }>;
  hostVars?: Record<string, Record<string, unknown>>;
}

/** Write an Ansible YAML inventory for some test-bed hosts into a fresh temp dir; returns its path. */
export function writeInventory(spec: InventorySpec): string {
  const bed = new Map(tb.hosts().map((h) => [h.name, h]));
  const hosts: Record<string, unknown> = {};
  for (const name of spec.hosts) {
    const h = bed.get(name);
    if (!h) throw new Error(`no test-bed host ${name}`);
    hosts[name] = { ansible_host: h.ip, ansible_port: h.port, testbed_disks: h.disks.map((d) => d.dev), ...spec.hostVars?.[name] };
  }
  const children: Record<string, unknown> = {};
  for (const [g, def] of Object.entries(spec.groups ?? {})) {
    children[g] = { hosts: Object.fromEntries(def.hosts.map((h) => [h, null])), ...(def.vars ? { vars: def.vars } : {}) };
  }
  const doc = {
    all: {
      vars: { ansible_user: 'root', ansible_ssh_private_key_file: tb.keyPath, racksmith_known_hosts: tb.knownHostsPath, ...spec.vars },
      hosts,
      ...(Object.keys(children).length ? { children } : {}),
    },
  };
  const dir = mkdtempSync(join(tmpdir(), 'rs-inv-'));
  const file = join(dir, 'inventory.yaml');
  writeFileSync(file, stringify(doc));
  return file;
}

/** Per-host recap events of a --json run, by host. */
export function recaps(run: CliRun): Record<string, Record<string, any>> {
  return Object.fromEntries(run.events.filter((e) => e.type === 'host_recap').map((e) => [e.host, e]));
}

/** Resource events of a --json run whose status is `changed`. */
export function changedResources(run: CliRun): Array<{ host: string; id: string }> {
  return run.events.filter((e) => e.type === 'resource' && e.status === 'changed').map((e) => ({ host: e.host, id: e.id }));
}
