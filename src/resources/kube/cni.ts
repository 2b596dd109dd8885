/**
 * Host-level CNI pieces on every Kubernetes node: the containernetworking plugins in /opt/cni/bin,
 * stale configs of another CNI in /etc/cni/net.d, and NetworkManager told to leave Calico's
 * interfaces alone.
 */
import { posix } from 'node:path';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { inline, probed } from '../../contract/probe.ts';
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';
import { common, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';

// ---------------------------------------------------------------------------------------------
// CNI plugins tarball

export type CniPluginsSource =
  /** Bytes read (and verified) on the controller, sent inside the apply script: works offline. */
  | { kind: 'push'; bytes: Buffer; origin: string }
  /** Downloaded by the host with curl or wget. */
  | { kind: 'url'; url: string }
  /** A path on the host (a shared or pre-staged directory). */
  | { kind: 'file'; path: string };

export interface CniPluginsOptions extends CommonOptions {
  /** Default /opt/cni/bin. */
  dir?: string;
  version: string;
  /** sha256 of the tarball; checked on the host before anything is extracted. */
  sha256: string;
  source: CniPluginsSource;
  /** Plugins that must be in the tarball and on the host. */
  required: string[];
}

export interface CniPluginsFacts {
  marker?: { version: string; sha256: string; files: Record<string, number> };
  /** Size of each file the marker lists plus the required ones; null when missing. */
  live: Record<string, number | null>;
  curl: boolean;
  wget: boolean;
}

export const CNI_MARKER = '.racksmith-cni-plugins';

/** The tarball (~50 MB for the real plugins) is encoded once per run, not once per host. */
const encoded = new WeakMap<Buffer, string>();
function base64Of(b: Buffer): string {
  let s = encoded.get(b);
  if (s === undefined) {
    s = b.toString('base64');
    encoded.set(b, s);
  }
  return s;
}
const PLUGIN_NAME = /^[A-Za-z0-9._-]+$/;

export function parseCniPluginsProbe(out: string): CniPluginsFacts {
  const facts: CniPluginsFacts = { live: {}, curl: false, wget: false };
  let section = '';
  let marker: CniPluginsFacts['marker'];
  for (const line of out.split('\n')) {
    if (line.startsWith('tools ')) {
      facts.curl = line.includes('curl=yes');
      facts.wget = line.includes('wget=yes');
    } else if (line === '== marker') {
      section = 'marker';
      marker = { version: '', sha256: '', files: {} };
    } else if (line === '== live') section = 'live';
    else if (section === 'marker' && marker) {
      const [k, a, b] = line.split(' ');
      if (k === 'version') marker.version = a ?? '';
      else if (k === 'sha256') marker.sha256 = a ?? '';
      else if (k === 'file' && a) marker.files[a] = Number(b);
    } else if (section === 'live' && line.trim()) {
      const sp = line.lastIndexOf(' ');
      const name = line.slice(0, sp);
      const size = line.slice(sp + 1);
      facts.live[name] = size === '-' ? null : Number(size);
    }
  }
  if (marker) facts.marker = marker;
  return facts;
}

export function cniPluginsChanges(
  o: Pick<CniPluginsOptions, 'version' | 'sha256' | 'required' | 'source'>,
  dir: string,
  f: CniPluginsFacts,
): Change[] {
  const from = o.source.kind === 'push' ? o.source.origin : o.source.kind === 'url' ? o.source.url : o.source.path;
  let summary: string | undefined;
  if (!f.marker) summary = `install CNI plugins ${o.version} into ${dir} (from ${from})`;
  else if (f.marker.sha256 !== o.sha256)
    summary = `replace CNI plugins ${f.marker.version || '(unknown)'} → ${o.version} in ${dir} (from ${from})`;
  else {
    const lacking = o.required.filter((r) => !(r in f.marker!.files));
    if (lacking.length)
      throw new Refusal(`the CNI plugins tarball ${o.version} has no ${lacking.join(', ')}; flannel and the container runtime need them`);
    const problems: string[] = [];
    for (const [name, size] of Object.entries(f.marker.files)) {
      const now = f.live[name];
      if (now === null || now === undefined) problems.push(`${name} missing`);
      else if (now !== size) problems.push(`${name} changed (${size} → ${now} bytes)`);
    }
    if (problems.length) summary = `reinstall CNI plugins ${o.version} in ${dir}: ${problems.join(', ')}`;
  }
  if (!summary) return [];
  if (o.source.kind === 'url' && !f.curl && !f.wget) {
    throw new Refusal(
      `neither curl nor wget on this host to download ${o.source.url}; install one, stage the tarball on the host (cni_plugins_src: file:///path), or let the controller push it (cni_plugins_fetch: controller)`,
    );
  }
  return [{ summary }];
}

/**
 * The containernetworking/plugins binaries in /opt/cni/bin, from a checksummed tarball. What was
 * installed is recorded in a marker file (tarball sha256, each file's size): the probe is cheap
 * (stat, no hashing of 50 MB of binaries) and still sees a deleted or replaced plugin. Other files
 * in the directory (the CNI's own binaries, copied by its DaemonSet) are left alone.
 */
export function cniPlugins(o: CniPluginsOptions): Resource<CniPluginsFacts> {
  const dir = checkAbsolutePath(o.dir ?? '/opt/cni/bin', 'cni plugins dir');
  if (!/^[0-9a-f]{64}$/.test(o.sha256)) throw new InputError(`cni plugins: sha256 must be 64 hex digits, got ${JSON.stringify(o.sha256)}`);
  for (const r of o.required) if (!PLUGIN_NAME.test(r)) throw new InputError(`cni plugins: invalid plugin name ${JSON.stringify(r)}`);
  const marker = `${dir}/${CNI_MARKER}`;
  return {
    ...common('cni-plugins', `cni-plugins:${dir}`, o),
    verifiable: true,
    probe: () =>
      [
        `d=${shq(dir)}; m=${shq(marker)}`,
        `echo "tools curl=$(command -v curl >/dev/null 2>&1 && echo yes || echo no) wget=$(command -v wget >/dev/null 2>&1 && echo yes || echo no)"`,
        `if [ -f "$m" ]; then echo '== marker'; cat "$m"; fi`,
        `echo '== live'`,
        `{ [ -f "$m" ] && sed -n 's/^file \\([^ ]*\\) .*$/\\1/p' "$m"; printf '%s\\n' ${o.required.map(shq).join(' ')}; } | sort -u | while IFS= read -r n; do`,
        `  if [ -f "$d/$n" ]; then echo "$n $(stat -c %s -- "$d/$n")"; else echo "$n -"; fi`,
        'done',
      ].join('\n'),
    parse: (out) => parseCniPluginsProbe(out.stdout),
    diff: (f) => cniPluginsChanges(o, dir, f),
    apply(): Step[] {
      const fetch =
        o.source.kind === 'push'
          ? `printf '%s' ${shq(base64Of(o.source.bytes))} | base64 -d > "$t/p.tgz"`
          : o.source.kind === 'file'
            ? `cp -- ${shq(o.source.path)} "$t/p.tgz"`
            : [
                `if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 3 -o "$t/p.tgz" ${shq(o.source.url)}`,
                `elif command -v wget >/dev/null 2>&1; then wget -q -O "$t/p.tgz" ${shq(o.source.url)}`,
                `else echo 'neither curl nor wget on this host' >&2; exit 1; fi`,
              ].join('\n');
      const script = [
        `d=${shq(dir)}`,
        'mkdir -p -- "$d"',
        `t=$(mktemp -d ${shq(posix.dirname(dir) + '/.racksmith-cni.XXXXXX')})`,
        `trap 'rm -rf "$t"' EXIT`,
        fetch,
        `got=$(sha256sum < "$t/p.tgz" | cut -c1-64)`,
        `[ "$got" = ${shq(o.sha256)} ] || { echo "CNI plugins tarball: sha256 $got, pinned ${o.sha256}: refusing to install it (nothing changed)" >&2; exit 1; }`,
        'mkdir "$t/x"',
        'tar -xzf "$t/p.tgz" -C "$t/x" --no-same-owner --no-same-permissions',
        ...o.required.map((r) => `[ -f "$t/x/${r}" ] || { echo ${shq(`the CNI plugins tarball has no ${r}`)} >&2; exit 1; }`),
        // top-level regular files only; each replaced by a rename (a running pod setup sees old or new)
        `: > "$t/marker"`,
        `printf 'version %s\\nsha256 %s\\n' ${shq(o.version)} ${shq(o.sha256)} >> "$t/marker"`,
        `for f in "$t"/x/* "$t"/x/.[!.]*; do`,
        '  { [ -f "$f" ] && [ ! -L "$f" ]; } || continue',
        '  n=${f##*/}',
        '  cp -- "$f" "$d/.$n.racksmith-new"',
        '  chmod 755 "$d/.$n.racksmith-new"',
        '  mv -f -- "$d/.$n.racksmith-new" "$d/$n"',
        `  echo "file $n $(stat -c %s -- "$d/$n")" >> "$t/marker"`,
        'done',
        `cp -- "$t/marker" "$d/.${CNI_MARKER}.new"`,
        `mv -f -- "$d/.${CNI_MARKER}.new" ${shq(marker)}`,
      ].join('\n');
      return [{ name: `install CNI plugins ${o.version} into ${dir}`, script }];
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Stale CNI configs in /etc/cni/net.d

export interface CniConfGuardOptions extends CommonOptions {
  cni: 'flannel' | 'calico';
  /** Default /etc/cni/net.d. */
  dir?: string;
  /** Move foreign configs away (to `<dir>.racksmith-stale/`) instead of refusing. */
  removeStale: boolean;
}

/** Config files each CNI writes itself (its DaemonSet's init container). */
export const OWN_CNI_CONFIGS: Record<'flannel' | 'calico', string[]> = {
  flannel: ['10-flannel.conflist'],
  calico: ['10-calico.conflist'],
};

/** What wrote a config file, as far as its name tells. */
export function cniConfOwner(name: string): string {
  if (/flannel/.test(name)) return 'flannel';
  if (/calico/.test(name)) return 'calico';
  if (/cilium/.test(name)) return 'cilium';
  if (/weave/.test(name)) return 'weave';
  if (/podman/.test(name)) return 'podman';
  if (/containerd/.test(name)) return "containerd's example bridge";
  if (/canal/.test(name)) return 'canal';
  return 'unknown';
}

export function isCniConfig(name: string): boolean {
  return /\.(conf|conflist|json)$/.test(name) && !name.startsWith('.');
}

export interface CniConfFacts {
  files: string[];
}

/** The changes move these config files (each change's data: the file's name). */
export function cniConfChanges(o: CniConfGuardOptions, dir: string, f: CniConfFacts): Change<string>[] {
  const own = new Set(OWN_CNI_CONFIGS[o.cni]);
  const foreign = f.files.filter((n) => isCniConfig(n) && !own.has(n));
  if (!foreign.length) return [];
  const list = foreign.map((n) => `${dir}/${n} (${cniConfOwner(n)})`).join(', ');
  if (!o.removeStale) {
    throw new Refusal(
      `stale CNI config in ${dir}: ${list}. The container runtime uses the lexicographically first config, so pods would be wired by the wrong CNI. Remove it, or set cni_remove_stale_conf: true to move it to ${dir}.racksmith-stale/`,
    );
  }
  return foreign.map((n) => ({ summary: `move stale ${dir}/${n} (${cniConfOwner(n)}) to ${dir}.racksmith-stale/`, data: n }));
}

/** Refuses (or, when allowed, moves away) CNI configs in /etc/cni/net.d that the chosen CNI did not write. */
export function cniConfGuard(o: CniConfGuardOptions): Resource<CniConfFacts, string> {
  const dir = checkAbsolutePath(o.dir ?? '/etc/cni/net.d', 'cni conf dir');
  const stale = `${dir}.racksmith-stale`;
  return {
    ...common('cni-conf', `cni-conf:${dir}`, o),
    verifiable: true,
    probe: () => `for f in ${shq(dir)}/* ${shq(dir)}/.[!.]*; do [ -f "$f" ] && printf '%s\\n' "\${f##*/}"; done; exit 0`,
    parse: (out) => ({ files: out.stdout.split('\n').filter(Boolean) }),
    diff: (f) => cniConfChanges(o, dir, f),
    apply(_, changes): Step[] {
      const moves = changes.map((c) => `mv -f -- ${shq(`${dir}/${c.data!}`)} ${shq(`${stale}/${c.data!}`)}`);
      return [{ name: `move stale CNI configs out of ${dir}`, script: [`mkdir -p -- ${shq(stale)}`, ...moves].join('\n') }];
    },
  };
}

// ---------------------------------------------------------------------------------------------
// NetworkManager: leave Calico's interfaces alone

export const CALICO_NM_CONF = `# Managed by racksmith. Calico manages these interfaces; NetworkManager must not.
[keyfile]
unmanaged-devices=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico;interface-name:vxlan-v6.calico;interface-name:wireguard.cali;interface-name:wg-v6.cali
`;

export interface NmUnmanagedOptions extends CommonOptions {
  /** Default /etc/NetworkManager/conf.d/calico.conf. */
  path?: string;
  content?: string;
}

export interface NmUnmanagedFacts {
  installed: boolean;
  running: boolean;
  file: FileFacts;
}

/** A NetworkManager conf.d drop-in, written only where NetworkManager is installed; NM reloads it. */
export function nmUnmanaged(o: NmUnmanagedOptions = {}): Resource<NmUnmanagedFacts, FileWrite> {
  const path = checkAbsolutePath(o.path ?? '/etc/NetworkManager/conf.d/calico.conf', 'NetworkManager conf');
  const content = o.content ?? CALICO_NM_CONF;
  const mf = managedFile<NmUnmanagedFacts>({ path, get: (f) => f.file, set: (f, file) => ({ ...f, file }), mode: '644' });
  return {
    ...common('nm-unmanaged', `nm-unmanaged:${path}`, o),
    verifiable: true,
    files: [mf],
    claims: [`file:${path}`],
    ...probed(
      () => ({
        nm: inline(
          [
            `if command -v NetworkManager >/dev/null 2>&1 || [ -x /usr/sbin/NetworkManager ]; then echo nm=yes; else echo nm=no; fi`,
            `if pidof NetworkManager >/dev/null 2>&1; then echo running=yes; else echo running=no; fi`,
          ].join('\n'),
        ),
        file: mf.probe(),
      }),
      ({ nm, file }) => ({ installed: nm.includes('nm=yes'), running: nm.includes('running=yes'), file: fileFacts(file) }),
    ),
    diff: (f) => (f.installed ? mf.changes(f, content) : []),
    apply(f, changes): Step[] {
      const steps = mf.steps(changes);
      if (f.running && steps.length) {
        steps.push({
          name: 'reload NetworkManager',
          script:
            '# shellcheck disable=SC2046 # pidof prints one pid per word\n' +
            'nmcli general reload conf 2>/dev/null || systemctl reload NetworkManager 2>/dev/null || kill -HUP $(pidof NetworkManager)',
        });
      }
      return steps;
    },
  };
}
