/**
 * Engine unit tests' hosts: a FakeConnection runs each script in this machine's /bin/sh (the real
 * script builder and splitter, the real resources' shell), where every "host" is a directory of
 * its own. Faults are injected per exec: state changed before it, the connection lost after it ran
 * (its effects happened, its output never arrived), or an exec that never answers.
 * Test double: it stands in for an SSH connection (nothing here opens a socket).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection, ExecResult } from '../../src/connection/types.ts';
import type { ConnectOptions } from '../../src/connection/connect.ts';
import { ConnectError } from '../../src/connection/types.ts';
import type { Group, Host, Inventory, Vars } from '../../src/inventory/model.ts';

export interface Faults {
  /** Runs before exec number `n` (1-based) of this host is sent. */
  before?: (n: number, script: string) => void | Promise<void>;
  /** Exec number `n` runs on the host, then the connection drops: its output is lost. */
  lostAfterExec?: number;
  /** Exec number `n` never answers (a dead link): only closing the connection ends it. */
  hangAtExec?: number;
  /** connect() fails with this error (transient or not). */
  connectError?: ConnectError;
}

export class FakeConnection implements Connection {
  execCount = 0;
  /** Every script sent, in order. */
  readonly scripts: string[] = [];
  closed = false;
  private hung?: () => void;

  constructor(
    readonly host: string,
    private readonly faults: Faults = {},
  ) {}

  async exec(script: string): Promise<ExecResult> {
    const n = ++this.execCount;
    this.scripts.push(script);
    await this.faults.before?.(n, script);
    if (this.faults.hangAtExec === n) {
      return new Promise((_, reject) => (this.hung = () => reject(new Error('connection closed while the exec was running'))));
    }
    const res = await runSh(script);
    if (this.faults.lostAfterExec === n) throw new Error('connection lost (the remote side ran the script)');
    return res;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.hung?.();
  }
}

function runSh(script: string): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-s'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', reject);
    child.once('close', (code) => resolve({ stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), code }));
    child.stdin.end(script);
  });
}

/** Fake hosts: each a fresh directory (its `dir` variable), all in group `all` and in the groups given. */
export class FakeFleet {
  readonly root = mkdtempSync(join(tmpdir(), 'rs-fake-fleet-'));
  readonly conns = new Map<string, FakeConnection>();
  readonly faults = new Map<string, Faults>();

  constructor(
    readonly names: string[],
    private readonly groupsOf: Record<string, string[]> = {},
  ) {}

  dir(host: string): string {
    return join(this.root, host);
  }

  inventory(extraVars: Vars = {}): Inventory {
    const hosts: Host[] = this.names.map((name) => ({
      name,
      vars: { dir: this.dir(name), shared: join(this.root, 'shared'), ...extraVars },
      varSources: {},
      templated: {},
      groups: ['all', ...(this.groupsOf[name] ?? [])],
      connection: { kind: 'ssh' as const, address: name },
      pos: { file: 'fake-inventory', line: 1 },
    }));
    const groups = new Map<string, Group>();
    const group = (g: string) => {
      if (!groups.has(g))
        groups.set(g, {
          name: g,
          hosts: [],
          children: [],
          parents: [],
          vars: {},
          varSources: {},
          depth: g === 'all' ? 0 : 1,
          priority: 1,
          pos: { file: 'fake-inventory' },
        });
      return groups.get(g)!;
    };
    group('all');
    for (const h of hosts) for (const g of h.groups) group(g).hosts.push(h.name);
    return { file: 'fake-inventory', sources: ['fake-inventory'], hosts, groups };
  }

  /** The `connector` for execute(): one FakeConnection per host, with its faults. */
  connector = async (host: Host): Promise<Connection> => {
    const f = this.faults.get(host.name) ?? {};
    if (f.connectError) throw f.connectError;
    const c = new FakeConnection(host.name, f);
    this.conns.set(host.name, c);
    return c;
  };
}

/**
 * A connector whose connection is never made (a host waiting behind other hosts' handshakes)
 * until its attempt is stopped (`o.signal`): then a final ConnectError, the host named in `stopped`.
 */
export function neverConnecting(stopped: string[]): (host: Host, o: ConnectOptions) => Promise<Connection> {
  return (host, o) =>
    new Promise((_, reject) =>
      o.signal?.addEventListener('abort', () => {
        stopped.push(host.name);
        reject(new ConnectError(`${host.name}: interrupted while connecting`, false));
      }),
    );
}
