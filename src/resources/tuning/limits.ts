import { shq } from '../../shell/quote.ts';
import { SERVICE_UNITS } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';
import { inline, probed } from '../../contract/probe.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';
import { common, type CommonOptions, type Resource } from '../../contract/resource.ts';

export interface NofileLimits {
  soft: number;
  hard: number;
}

/** A resource limit for jobs: a number, or unlimited (Soperator sets them unlimited). */
export type JobLimit = number | 'unlimited';

/** Limits of RDMA and GPU jobs (pinned memory, deep stacks, many threads). */
export interface JobLimits {
  memlock?: JobLimit;
  stack?: JobLimit;
  nproc?: JobLimit;
}

export interface LimitsOptions extends CommonOptions {
  nofile: NofileLimits | number;
  /** memlock / stack / nproc at the same three levels as nofile. */
  jobs?: JobLimits;
  /** Handlers to notify when containerd's drop-in changed (its restart: containers inherit its limits). */
  containerdNotify?: string[];
  /** pam_limits drop-in (never limits.conf itself). */
  file?: string;
  /** Domains the limits.d lines apply to. `*` does not cover root in pam_limits, so root is listed too. */
  domains?: string[];
}

const JOB_KEYS = ['memlock', 'stack', 'nproc'] as const;
const jobEntries = (j: JobLimits = {}) => JOB_KEYS.filter((k) => j[k] !== undefined).map((k) => [k, j[k]!] as const);
/** systemd's spelling: infinity for unlimited; its unit keys (LimitMEMLOCK ...). */
const systemdValue = (v: JobLimit) => (v === 'unlimited' ? 'infinity' : String(v));
const systemdKey = (k: (typeof JOB_KEYS)[number]) => `Limit${k.toUpperCase()}`;

export function renderLimitsFile(n: NofileLimits, domains: string[], jobs?: JobLimits): string {
  const lines = ['# Managed by racksmith. Applies to new login sessions (pam_limits).'];
  for (const d of domains) {
    lines.push(`${d} soft nofile ${n.soft}`, `${d} hard nofile ${n.hard}`);
    for (const [k, v] of jobEntries(jobs)) lines.push(`${d} soft ${k} ${v}`, `${d} hard ${k} ${v}`);
  }
  return lines.join('\n') + '\n';
}

export function renderSystemdManager(n: NofileLimits, jobs?: JobLimits): string {
  const extra = jobEntries(jobs).map(([k, v]) => `Default${systemdKey(k)}=${systemdValue(v)}\n`);
  return `# Managed by racksmith: default open-file limit of services started by systemd.\n[Manager]\nDefaultLimitNOFILE=${n.soft}:${n.hard}\n${extra.join('')}`;
}

export function renderContainerdDropin(n: NofileLimits, jobs?: JobLimits): string {
  const extra = jobEntries(jobs).map(([k, v]) => `${systemdKey(k)}=${systemdValue(v)}\n`);
  return `# Managed by racksmith: the open-file limit that containers (and pods) inherit.\n[Service]\nLimitNOFILE=${n.hard}\n${extra.join('')}`;
}

function checkJobs(j: JobLimits | undefined): JobLimits | undefined {
  for (const [k, v] of jobEntries(j))
    if (v !== 'unlimited' && (!Number.isInteger(v) || v < 1))
      throw new InputError(`limits: ${k} must be a positive whole number or unlimited, got ${v}`);
  return j;
}

function checkNofile(v: NofileLimits | number): NofileLimits {
  const n = typeof v === 'number' ? { soft: v, hard: v } : v;
  for (const x of [n.soft, n.hard])
    if (!Number.isInteger(x) || x < 1024 || x > 1073741816)
      throw new InputError(`limits: nofile must be a whole number from 1024 to 1073741816, got ${x}`);
  if (n.soft > n.hard) throw new InputError(`limits: soft nofile ${n.soft} exceeds hard ${n.hard}`);
  return n;
}

interface DropinSpec {
  path: string;
  content: string;
  /** Only where one of these exists (e.g. containerd installed). */
  onlyIf?: string[];
}

export interface DropinFacts {
  file: FileFacts;
  applicable: boolean;
}

/** A config drop-in that only applies where a program is installed. */
function dropin(kind: string, spec: DropinSpec, o: CommonOptions, reload: string, claims: string[] = []): Resource<DropinFacts, FileWrite> {
  const path = checkAbsolutePath(spec.path);
  const cond = spec.onlyIf?.length ? spec.onlyIf.map((p) => `[ -e ${shq(p)} ]`).join(' || ') : 'true';
  const mf = managedFile<DropinFacts>({
    path,
    get: (f) => f.file,
    set: (f, file) => ({ ...f, file }),
    mode: '644',
    then: reload || undefined,
    thenTouches: [SERVICE_UNITS],
  });
  return {
    ...common(kind, `${kind}:${path}`, o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`, ...claims],
    ...probed(
      () => ({ pam: inline(`if ${cond}; then echo applicable=yes; else echo applicable=no; fi`), file: mf.probe() }),
      ({ pam, file }) => ({ applicable: pam.includes('applicable=yes'), file: fileFacts(file) }),
    ),
    diff: (f) => (f.applicable ? mf.changes(f, spec.content) : []),
    apply: (_, changes) => mf.steps(changes),
  };
}

/** Only where systemd is PID 1: elsewhere (containers, test hosts) there is nothing to reload. */
const DAEMON_RELOAD = 'if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi';

/**
 * nofile limits at every level a process can get them from: PAM logins (limits.d), services
 * (systemd DefaultLimitNOFILE) and containers (containerd's LimitNOFILE, where containerd is
 * installed), and memlock / stack / nproc for RDMA and GPU jobs the same way. containerd only
 * picks new limits up when it restarts: `containerdNotify` names its restart handler.
 */
export function limits(o: LimitsOptions): Resource[] {
  const n = checkNofile(o.nofile);
  const jobs = checkJobs(o.jobs);
  const domains = o.domains ?? ['*', 'root'];
  for (const d of domains) if (!/^[*@%A-Za-z0-9_.:-]+$/.test(d)) throw new InputError(`limits: invalid domain ${JSON.stringify(d)}`);
  return [
    dropin(
      'limits',
      { path: o.file ?? '/etc/security/limits.d/90-racksmith.conf', content: renderLimitsFile(n, domains, jobs) },
      o,
      '',
      // pam_limits takes the first line for an item (limits.d files in name order): one owner each.
      domains.flatMap((d) =>
        ['soft', 'hard'].flatMap((t) => ['nofile', ...jobEntries(jobs).map(([k]) => k)].map((k) => `limits:${d}:${t}:${k}`)),
      ),
    ),
    dropin(
      'limits',
      { path: '/etc/systemd/system.conf.d/90-racksmith-nofile.conf', content: renderSystemdManager(n, jobs) },
      o,
      DAEMON_RELOAD,
    ),
    dropin(
      'limits',
      {
        path: '/etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf',
        content: renderContainerdDropin(n, jobs),
        onlyIf: [
          '/usr/bin/containerd',
          '/usr/local/bin/containerd',
          '/lib/systemd/system/containerd.service',
          '/etc/systemd/system/containerd.service',
        ],
      },
      { ...o, notify: o.containerdNotify },
      DAEMON_RELOAD,
    ),
  ];
}
