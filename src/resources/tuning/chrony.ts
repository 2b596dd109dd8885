/**
 * chronySources: the NTP servers chronyd uses (ais-k8s ais_ntp, Kubespray), in a sources file of
 * its own (Debian's chrony.conf reads /etc/chrony/sources.d/*.sources). chrony.conf must read that
 * directory, else the resource is refused (racksmith does not rewrite the distribution's config).
 * chronyd reads sources at start: notify its restart handler.
 */
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';
import { InputError } from '../../util/errors.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';

export interface ChronyOptions extends CommonOptions {
  servers: string[];
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

export const renderSources = (servers: string[]) =>
  `# Managed by racksmith: NTP servers (ntp_servers).\n${servers.map((s) => `server ${s} iburst`).join('\n')}\n`;

export function chronySources(o: ChronyOptions): Resource<ChronyFacts, FileWrite> {
  if (!o.servers.length) throw new InputError('chrony: no servers');
  for (const s of o.servers) if (!SERVER.test(s)) throw new InputError(`chrony: invalid server ${JSON.stringify(s)}`);
  const conf = checkAbsolutePath(o.conf ?? '/etc/chrony/chrony.conf', 'chrony conf');
  const dir = checkAbsolutePath(o.sourcesDir ?? '/etc/chrony/sources.d', 'chrony sources dir');
  const path = `${dir}/racksmith.sources`;
  const confFile = managedFile<ChronyFacts>({ path: conf, get: (f) => f.conf, set: (f, c) => ({ ...f, conf: c }) });
  const mf = managedFile<ChronyFacts>({ path, get: (f) => f.sources, set: (f, sources) => ({ ...f, sources }), mode: '644' });
  return {
    ...common('chrony', `chrony:${path}`, o),
    verifiable: true,
    files: [mf],
    probe: () => [confFile.probe(), mf.probe()],
    parse: (out) => ({ conf: fileFacts(out.parts[0]), sources: fileFacts(out.parts[1]) }),
    diff(f): Change<FileWrite>[] {
      if (f.conf.type !== 'file') throw new Refusal(`${conf} does not exist: is chrony installed?`);
      const reads = contentText(f.conf)
        .split('\n')
        .some((l) => new RegExp(`^\\s*sourcedir\\s+${dir.replace(/[.]/g, '\\.')}\\s*$`).test(l));
      if (!reads) throw new Refusal(`${conf} does not read ${dir} (no 'sourcedir ${dir}' line)`);
      return mf.changes(f, renderSources(o.servers));
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
