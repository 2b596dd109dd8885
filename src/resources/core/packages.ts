/**
 * packages: the host programs a playbook needs (xfsprogs, attr, ethtool, chrony, nfs-common ...),
 * installed where missing through the host's own package manager (apt or dnf) in ONE transaction
 * per resource, from the operator's mirror when one is given (used for this transaction only:
 * the host's own package sources are not changed). A host with neither manager is refused.
 */
import { inline } from '../../contract/probe.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';
import { shJoin, shq } from '../../shell/quote.ts';
import { PACKAGES } from '../../contract/state-topics.ts';
import { InputError } from '../../util/errors.ts';

/** A package by name, or by name per package manager where they differ (nfs-common / nfs-utils). */
export type PackageName = string | { apt: string; dnf: string };

export interface PackageMirror {
  /** apt: a one-line source, e.g. `deb [trusted=yes] http://mirror/debian bookworm main` or `deb [trusted=yes] file:/srv/repo ./`. */
  apt?: string;
  /** dnf: a repository base URL. */
  dnf?: string;
}

export interface PackagesOptions extends CommonOptions {
  /** Id suffix (`packages:storage`). */
  name: string;
  packages: PackageName[];
  mirror?: PackageMirror;
}

export interface PackagesFacts {
  manager: 'apt' | 'dnf' | 'none';
  /** Installed packages among those asked for. */
  installed: string[];
}

const NAME = /^[a-z0-9][a-z0-9+.-]*$/;

const pick = (p: PackageName, m: 'apt' | 'dnf') => (typeof p === 'string' ? p : p[m]);

export function parsePackages(stdout: string): PackagesFacts {
  const m = /^pm=(apt|dnf|none)$/m.exec(stdout);
  const manager = (m?.[1] ?? 'none') as PackagesFacts['manager'];
  const installed: string[] = [];
  for (const l of stdout.split('\n')) {
    // dpkg-query: "NAME ii " (wanted install, installed); rpm: "NAME ii"
    const [name, status] = l.trim().split(/\s+/);
    if (name && status === 'ii') installed.push(name.replace(/:.*$/, ''));
  }
  return { manager, installed };
}

/** The apt transaction: only the mirror as source when given (its own list file, not the host's). */
export function aptInstall(pkgs: string[], mirror?: string): string {
  const env = 'DEBIAN_FRONTEND=noninteractive';
  const conf = `-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold`;
  if (!mirror) return `${env} apt-get install -y -q --no-install-recommends ${conf} ${shJoin(pkgs)}`;
  const src = `-o Dir::Etc::SourceList="$rs_src" -o Dir::Etc::SourceParts=-`;
  return `rs_src=$(mktemp /tmp/racksmith-apt.XXXXXX)
trap 'rm -f "$rs_src"' EXIT
printf '%s\\n' ${shq(mirror)} > "$rs_src"
apt-get update -q ${src} -o APT::Get::List-Cleanup=0
${env} apt-get install -y -q --no-install-recommends ${src} ${conf} ${shJoin(pkgs)}`;
}

export function dnfInstall(pkgs: string[], mirror?: string): string {
  const repo = mirror ? ` --repofrompath=racksmith-mirror,${shq(mirror)} --repo=racksmith-mirror` : '';
  return `dnf install -y -q${repo} ${shJoin(pkgs)}`;
}

export function packages(o: PackagesOptions): Resource<PackagesFacts, string[]> {
  if (!/^[a-z0-9-]+$/.test(o.name)) throw new InputError(`packages: invalid name ${JSON.stringify(o.name)}`);
  if (!o.packages.length) throw new InputError(`packages ${o.name}: no packages`);
  for (const p of o.packages)
    for (const n of typeof p === 'string' ? [p] : [p.apt, p.dnf])
      if (!NAME.test(n)) throw new InputError(`packages ${o.name}: invalid package name ${JSON.stringify(n)}`);
  if (o.mirror?.apt !== undefined && !/^deb (\[[^\]\n]*\] )?(https?|file):[^\s]+ [^\s]+( [^\s]+)*$/.test(o.mirror.apt))
    throw new InputError(`packages ${o.name}: the apt mirror must be one 'deb [options] URL SUITE [COMPONENTS]' line`);
  if (o.mirror?.dnf !== undefined && !/^(https?|file):\/\/[^\s]+$/.test(o.mirror.dnf))
    throw new InputError(`packages ${o.name}: the dnf mirror must be a repository URL`);
  const names = (m: 'apt' | 'dnf') => [...new Set(o.packages.map((p) => pick(p, m)))];
  const apt = names('apt');
  const dnf = names('dnf');
  return {
    ...common('packages', `packages:${o.name}`, o),
    verifiable: true,
    reads: [PACKAGES],
    // one process (in the script's shared subshell): the package database's answer for exactly these names
    probe: () => [
      inline(`if command -v dpkg-query >/dev/null 2>&1; then
  echo pm=apt
  dpkg-query -W -f='\${Package} \${db:Status-Abbrev}\\n' ${shJoin(apt)} 2>/dev/null
elif command -v rpm >/dev/null 2>&1; then
  echo pm=dnf
  rpm -q --qf '%{NAME} ii\\n' ${shJoin(dnf)} 2>/dev/null | grep -v 'is not installed'
else
  echo pm=none
fi
:`),
    ],
    parse: (out) => parsePackages(out.stdout),
    diff(f): Change<string[]>[] {
      if (f.manager === 'none') throw new Refusal(`no apt or dnf on this host: install ${apt.join(', ')} by hand`);
      const missing = (f.manager === 'apt' ? apt : dnf).filter((p) => !f.installed.includes(p));
      if (!missing.length) return [];
      const from = o.mirror?.[f.manager] ? ` from ${o.mirror[f.manager]}` : '';
      return [{ summary: `install ${missing.join(', ')} (${f.manager}${from})`, data: missing }];
    },
    apply(f, changes): Step[] {
      const missing = changes.flatMap((c) => c.data ?? []);
      if (!missing.length) return [];
      const script = f.manager === 'apt' ? aptInstall(missing, o.mirror?.apt) : dnfInstall(missing, o.mirror?.dnf);
      return [{ name: `install ${missing.join(' ')}`, script }];
    },
  };
}
