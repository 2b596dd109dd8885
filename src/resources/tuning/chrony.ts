import { probed } from '../../contract/probe.ts';
/**
 * chronySources: the NTP servers and pools chronyd uses (ais-k8s ais_ntp, Kubespray), in a sources file of
 * its own (Debian's chrony.conf reads /etc/chrony/sources.d/*.sources). chrony.conf must read that
 * directory, else the resource is refused (racksmith does not rewrite the distribution's config).
 * chronyd reads sources at start: notify its restart handler.
 */
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';

export interface ChronyOptions extends CommonOptions {
  /** Single servers: `server NAME iburst`. */
  servers?: string[];
  /** Pool names (each resolves to several servers, e.g. pool.ntp.org): `pool NAME iburst`. */
  pools?: string[];
  /** chrony's config (default Debian's /etc/chrony/chrony.conf). */
  conf?: string;
  /** The directory chrony.conf reads with `sourcedir` (default /etc/chrony/sources.d). */
  sourcesDir?: string;
}

export interface ChronyFacts {
  conf: FileFacts;
  sources: FileFacts;
}

const SERVER = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^[0-9a-fA-F:]+$/;

/** The sources file: servers (ntp_servers), then pools (ntp_pools); the header names only what is set. */
export function renderSources(servers: string[], pools: string[] = []): string {
  const what = [...(servers.length ? ['servers (ntp_servers)'] : []), ...(pools.length ? ['pools (ntp_pools)'] : [])].join(' and ');
  const lines = [...servers.map((s) => `server ${s} iburst`), ...pools.map((p) => `pool ${p} iburst`)];
  return `# Managed by racksmith: NTP ${what}.\n${lines.join('\n')}\n`;
}

export function chronySources(o: ChronyOptions): Resource<ChronyFacts, FileWrite> {
  const servers = o.servers ?? [];
  const pools = o.pools ?? [];
  if (!servers.length && !pools.length) throw new InputError('chrony: no servers or pools');
  for (const s of servers) if (!SERVER.test(s)) throw new InputError(`chrony: invalid server ${JSON.stringify(s)}`);
  for (const p of pools) if (!SERVER.test(p)) throw new InputError(`chrony: invalid pool ${JSON.stringify(p)}`);
  const conf = checkAbsolutePath(o.conf ?? '/etc/chrony/chrony.conf', 'chrony conf');
  const dir = checkAbsolutePath(o.sourcesDir ?? '/etc/chrony/sources.d', 'chrony sources dir');
  const path = `${dir}/racksmith.sources`;
  const confFile = managedFile<ChronyFacts>({ path: conf, get: (f) => f.conf, set: (f, c) => ({ ...f, conf: c }) });
  const mf = managedFile<ChronyFacts>({ path, get: (f) => f.sources, set: (f, sources) => ({ ...f, sources }), mode: '644' });
  return {
    ...common('chrony', `chrony:${path}`, o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    ...probed(
      () => ({ conf: confFile.probe(), sources: mf.probe() }),
      ({ conf, sources }) => ({ conf: fileFacts(conf), sources: fileFacts(sources) }),
    ),
    diff(f): Change<FileWrite>[] {
      if (f.conf.type !== 'file') throw new Refusal(`${conf} does not exist: is chrony installed?`);
      const reads = contentText(f.conf)
        .split('\n')
        .some((l) => new RegExp(`^\\s*sourcedir\\s+${dir.replace(/[.]/g, '\\.')}\\s*$`).test(l));
      if (!reads) throw new Refusal(`${conf} does not read ${dir} (no 'sourcedir ${dir}' line)`);
      return mf.changes(f, renderSources(servers, pools));
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
