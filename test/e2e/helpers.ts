// Shared helpers for e2e tests: run the real CLI against test-bed hosts, build inventories.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import * as tb from '../testbed/api.ts';
import { loadInventory } from '../../src/inventory/load.ts';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Parsed NDJSON events (only with --json). */
  events: Array<Record<string, any>>;
}

/** Run `provision ARGS` as a user would (node bin/provision.js), never throwing on exit codes. */
export function provision(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliRun> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/provision.js'), ...args], {
      cwd: opts.cwd ?? repoRoot,
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
  /** inventory names that are other names of bed hosts: name -> bed host (its address, port and disks) */
  aliases?: Record<string, string>;
}

/**
 * The inventory format e2e tests write: YAML, or INI when RS_E2E_INVENTORY=ini (the e2e-ini
 * project of vitest.config.ts runs the whole suite so: both formats must give the same results).
 */
export const INVENTORY_FORMAT: 'yaml' | 'ini' = process.env.RS_E2E_INVENTORY === 'ini' ? 'ini' : 'yaml';

/**
 * Write an Ansible inventory for some test-bed hosts into a fresh temp dir; returns its path. In
 * INI (see INVENTORY_FORMAT) every value is written as the Python literal Ansible's ini plugin
 * reads back (host lines shlex-quoted, [g:vars] as they are), and the INI file is checked to load
 * to exactly what the YAML one loads to before any test uses it. A test that edits the file's
 * text asks for `format: 'yaml'`.
 */
export function writeInventory(spec: InventorySpec & { format?: 'yaml' | 'ini' }): string {
  const bed = new Map(tb.hosts().map((h) => [h.name, h]));
  const hosts: Record<string, unknown> = {};
  for (const name of spec.hosts) {
    const h = bed.get(spec.aliases?.[name] ?? name);
    if (!h) throw new Error(`no test-bed host ${spec.aliases?.[name] ?? name}`);
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
  if ((spec.format ?? INVENTORY_FORMAT) === 'yaml') return file;
  const ini = join(dir, 'inventory.ini');
  writeFileSync(ini, iniOf(doc.all));
  const same = (f: string) => loadInventory(f).hosts.map((h) => ({ name: h.name, vars: h.vars, groups: h.groups }));
  const want = JSON.stringify(same(file));
  const got = JSON.stringify(same(ini));
  if (got !== want) throw new Error(`writeInventory: the INI inventory loads differently from the YAML one:\n${got}\n${want}`);
  rmSync(file);
  return ini;
}

/** The same inventory in INI: hosts before any section are ungrouped, as all.hosts is in YAML. */
function iniOf(all: { vars: Record<string, unknown>; hosts: Record<string, unknown>; children?: Record<string, unknown> }): string {
  const lines: string[] = [];
  const hostLine = (name: string, vars: Record<string, unknown>) =>
    [name, ...Object.entries(vars).map(([k, v]) => `${k}="${pyLiteral(v).replace(/["\\]/g, '\\$&')}"`)].join(' ');
  for (const [h, vars] of Object.entries(all.hosts)) lines.push(hostLine(h, (vars ?? {}) as Record<string, unknown>));
  for (const [g, def] of Object.entries(all.children ?? {})) {
    const { hosts, vars } = def as { hosts: Record<string, unknown>; vars?: Record<string, unknown> };
    lines.push('', `[${g}]`, ...Object.keys(hosts));
    if (vars) lines.push('', `[${g}:vars]`, ...Object.entries(vars).map(([k, v]) => `${k}=${pyLiteral(v)}`));
  }
  lines.push('', '[all:vars]', ...Object.entries(all.vars).map(([k, v]) => `${k}=${pyLiteral(v)}`));
  return lines.join('\n') + '\n';
}

/** A value as a Python literal (what ast.literal_eval reads back as that value). */
function pyLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string')
    // eslint-disable-next-line no-control-regex -- every character Python's splitlines() or a terminal would act on
    return `'${v.replace(/[\\']/g, '\\$&').replace(/[\x00-\x1f\x7f\x85\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}'`;
  if (Array.isArray(v)) return `[${v.map(pyLiteral).join(', ')}]`;
  return `{${Object.entries(v as Record<string, unknown>)
    .map(([k, x]) => `${pyLiteral(k)}: ${pyLiteral(x)}`)
    .join(', ')}}`;
}

/** Per-host recap events of a --json run, by host. */
export function recaps(run: CliRun): Record<string, Record<string, any>> {
  return Object.fromEntries(run.events.filter((e) => e.type === 'host_recap').map((e) => [e.host, e]));
}

/** Resource events of a --json run whose status is `changed`. */
export function changedResources(run: CliRun): Array<{ host: string; id: string }> {
  return run.events.filter((e) => e.type === 'resource' && e.status === 'changed').map((e) => ({ host: e.host, id: e.id }));
}
