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
import { MACHINE_ARCH } from '../core/machine-arch.ts';
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

/** One tarball of the release, for one architecture. */
export interface CniTarball {
  /** Go's name, as upstream names the file (cni-plugins-linux-<arch>-<version>.tgz): amd64, arm64... */
  arch: string;
  /** sha256 of the tarball; checked on the host before anything is extracted. */
  sha256: string;
  /** The source, or how to get it on the controller (called only for a host of this architecture; throws a Refusal when it cannot). */
  source: CniPluginsSource | (() => CniPluginsSource);
}

export interface CniPluginsOptions extends CommonOptions {
  /** Default /opt/cni/bin. */
  dir?: string;
  version: string;
  /** The tarballs this resource may install: each host takes the one of its architecture, and without one is refused. */
  tarballs: CniTarball[];
  /** Plugins that must be in the tarball and on the host. */
  required: string[];
  /**
   * Plugins the CNI's own DaemonSet also copies into the directory, with its own builds, at every
   * start (Calico's install-cni: UPDATE_CNI_BINARIES defaults to true). Present is enough for
   * these, and one already there is kept: otherwise each run would put the tarball's back and the
   * CNI its own at its next start, and the host would never converge.
   */
  sharedWithCni?: { cni: string; plugins: string[] };
}

/** Go's architecture names (upstream's tarballs) by `uname -m`. */
const GO_ARCH: Record<string, string> = {
  x86_64: 'amd64',
  amd64: 'amd64',
  aarch64: 'arm64',
  arm64: 'arm64',
  armv6l: 'arm',
  armv7l: 'arm',
  armv8l: 'arm',
  ppc64le: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

/** The Go architecture name of a machine as `uname -m` names it (undefined: none known). */
export const goArch = (machine: string): string | undefined => (Object.hasOwn(GO_ARCH, machine) ? GO_ARCH[machine] : undefined);

/**
 * The tarball for a host of this machine (`uname -m`), or a Refusal before anything is written:
 * another architecture's plugins in /opt/cni/bin are reported converged and every pod on the
 * host fails with "exec format error".
 */
export function pickCniTarball<T extends Pick<CniTarball, 'arch'>>(version: string, tarballs: readonly T[], machine: string): T {
  const go = goArch(machine);
  const found = go === undefined ? undefined : tarballs.find((t) => t.arch === go);
  if (found) return found;
  const have = tarballs.map((t) => t.arch).join(', ');
  if (go === undefined)
    throw new Refusal(
      machine
        ? `this host is ${machine}, which has no CNI plugins build (the CNI plugins tarball is for ${have}); nothing written`
        : `cannot tell this host's architecture (no answer from /proc/sys/kernel/arch or uname -m); the CNI plugins tarball is for ${have}; nothing written`,
    );
  throw new Refusal(
    `this host is ${machine} (${go}), the CNI plugins tarball ${version} is for ${have}: its plugins would fail every pod here with "exec format error"; nothing written. Set cni_plugins_arch: ${go} for this host's group, with cni_plugins_src and cni_plugins_sha256 of cni-plugins-linux-${go}-${version}.tgz (or leave all three unset for the pinned tarball of each host's architecture)`,
  );
}

/** ELF e_machine of each architecture, as the two bytes at offset 18 read in file order (hex). */
const ELF_MACHINE: Record<string, string> = {
  amd64: '3e00',
  arm64: 'b700',
  arm: '2800',
  ppc64le: '1500',
  riscv64: 'f300',
  s390x: '0016',
};

const resolveSource = (t: CniTarball): CniPluginsSource => (typeof t.source === 'function' ? t.source() : t.source);

export interface CniPluginsFacts {
  /** The host's machine, as `uname -m` names it. */
  arch: string;
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
  const facts: CniPluginsFacts = { arch: '', live: {}, curl: false, wget: false };
  let section = '';
  let marker: CniPluginsFacts['marker'];
  for (const line of out.split('\n')) {
    if (line.startsWith('arch ') && !section) facts.arch = line.slice(5);
    else if (line.startsWith('tools ')) {
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
  o: Pick<CniPluginsOptions, 'version' | 'tarballs' | 'required' | 'sharedWithCni'>,
  dir: string,
  f: CniPluginsFacts,
): Change[] {
  const tarball = pickCniTarball(o.version, o.tarballs, f.arch);
  return cniTarballChanges(
    { version: o.version, required: o.required, shared: o.sharedWithCni, sha256: tarball.sha256, source: resolveSource(tarball) },
    dir,
    f,
  );
}

/** The changes for the tarball of this host's architecture. */
function cniTarballChanges(
  o: { version: string; required: string[]; shared?: CniPluginsOptions['sharedWithCni']; sha256: string; source: CniPluginsSource },
  dir: string,
  f: CniPluginsFacts,
): Change[] {
  const from = o.source.kind === 'push' ? o.source.origin : o.source.kind === 'url' ? o.source.url : o.source.path;
  const shared = new Set(o.shared?.plugins);
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
      else if (now !== size && !shared.has(name)) problems.push(`${name} changed (${size} → ${now} bytes)`);
    }
    if (problems.length) summary = `reinstall CNI plugins ${o.version} in ${dir}: ${problems.join(', ')}`;
  }
  if (!summary) return [];
  // said, not silent: these stay the CNI's builds, whatever the tarball holds
  const kept = [...shared].filter((n) => typeof f.live[n] === 'number');
  if (kept.length) summary += `; leaves ${kept.join(', ')} as they are (${o.shared!.cni}'s DaemonSet installs its own builds of them)`;
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
  if (!o.tarballs.length) throw new InputError('cni plugins: no tarball');
  for (const t of o.tarballs)
    if (!/^[0-9a-f]{64}$/.test(t.sha256))
      throw new InputError(`cni plugins: sha256 must be 64 hex digits, got ${JSON.stringify(t.sha256)}`);
  for (const r of o.required) if (!PLUGIN_NAME.test(r)) throw new InputError(`cni plugins: invalid plugin name ${JSON.stringify(r)}`);
  for (const r of o.sharedWithCni?.plugins ?? [])
    if (!PLUGIN_NAME.test(r)) throw new InputError(`cni plugins: invalid plugin name ${JSON.stringify(r)}`);
  const shared = o.sharedWithCni?.plugins ?? [];
  const marker = `${dir}/${CNI_MARKER}`;
  return {
    ...common('cni-plugins', `cni-plugins:${dir}`, o),
    verifiable: true,
    probe: () =>
      [
        // the host's architecture: which tarball is its own (a builtin read, no process, on Linux 6.1+)
        `${MACHINE_ARCH}; echo "arch $a"`,
        `d=${shq(dir)}; m=${shq(marker)}`,
        `echo "tools curl=$(command -v curl >/dev/null 2>&1 && echo yes || echo no) wget=$(command -v wget >/dev/null 2>&1 && echo yes || echo no)"`,
        `if [ -f "$m" ]; then echo '== marker'; cat "$m"; fi`,
        `echo '== live'`,
        `{ [ -f "$m" ] && sed -n 's/^file \\([^ ]*\\) .*$/\\1/p' "$m"; printf '%s\\n' ${[...o.required, ...shared].map(shq).join(' ')}; } | sort -u | while IFS= read -r n; do`,
        `  if [ -f "$d/$n" ]; then echo "$n $(stat -c %s -- "$d/$n")"; else echo "$n -"; fi`,
        'done',
      ].join('\n'),
    parse: (out) => parseCniPluginsProbe(out.stdout),
    diff: (f) => cniPluginsChanges(o, dir, f),
    apply(f): Step[] {
      const tarball = pickCniTarball(o.version, o.tarballs, f.arch);
      const source = resolveSource(tarball);
      const sha = tarball.sha256;
      const fetch =
        source.kind === 'push'
          ? `printf '%s' ${shq(base64Of(source.bytes))} | base64 -d > "$t/p.tgz"`
          : source.kind === 'file'
            ? `cp -- ${shq(source.path)} "$t/p.tgz"`
            : [
                `if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 3 -o "$t/p.tgz" ${shq(source.url)}`,
                `elif command -v wget >/dev/null 2>&1; then wget -q -O "$t/p.tgz" ${shq(source.url)}`,
                `else echo 'neither curl nor wget on this host' >&2; exit 1; fi`,
              ].join('\n');
      const script = [
        `d=${shq(dir)}`,
        'mkdir -p -- "$d"',
        `t=$(mktemp -d ${shq(posix.dirname(dir) + '/.racksmith-cni.XXXXXX')})`,
        `trap 'rm -rf "$t"' EXIT`,
        fetch,
        `got=$(sha256sum < "$t/p.tgz" | cut -c1-64)`,
        `[ "$got" = ${shq(sha)} ] || { echo "CNI plugins tarball: sha256 $got, pinned ${sha}: refusing to install it (nothing changed)" >&2; exit 1; }`,
        'mkdir "$t/x"',
        'tar -xzf "$t/p.tgz" -C "$t/x" --no-same-owner --no-same-permissions',
        ...o.required.map((r) => `[ -f "$t/x/${r}" ] || { echo ${shq(`the CNI plugins tarball has no ${r}`)} >&2; exit 1; }`),
        // the programs' own architecture (ELF e_machine), before anything is written: a tarball
        // named or pinned for this host's architecture that holds another's is refused too
        ...(ELF_MACHINE[tarball.arch]
          ? o.required.map(
              (r) =>
                `h=$(od -An -tx1 -N20 "$t/x/"${shq(r)} | tr -d ' \\n'); case "$h" in 7f454c46*) m=\${h#????????????????????????????????????}; m=\${m%"\${m#????}"}; [ "$m" = ${ELF_MACHINE[tarball.arch]} ] || { echo ${shq(`the CNI plugins tarball's ${r} is not a linux-${tarball.arch} program`)}" (ELF machine bytes $m): refusing to install it (nothing changed)" >&2; exit 1; } ;; esac`,
            )
          : []),
        // top-level regular files only; each replaced by a rename (a running pod setup sees old or new)
        `: > "$t/marker"`,
        `shared=${shq(` ${shared.join(' ')} `)}`,
        `printf 'version %s\\nsha256 %s\\n' ${shq(o.version)} ${shq(sha)} >> "$t/marker"`,
        `for f in "$t"/x/* "$t"/x/.[!.]*; do`,
        '  { [ -f "$f" ] && [ ! -L "$f" ]; } || continue',
        '  n=${f##*/}',
        // the CNI's own build of a shared plugin stays (it would put it back at its next start)
        `  case "$shared" in *" $n "*) if [ -f "$d/$n" ]; then echo "file $n $(stat -c %s -- "$d/$n")" >> "$t/marker"; continue; fi ;; esac`,
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

/**
 * Plugins of the containernetworking tarball that each CNI's DaemonSet also copies into
 * /opt/cni/bin, over what is there, at every start: Calico's install-cni (calico/cni image:
 * bandwidth, host-local, loopback, portmap, tuning besides its own; UPDATE_CNI_BINARIES defaults to
 * true, and the Tigera operator does not change it). Flannel's init container copies only `flannel`,
 * which the tarball has not held since v1.0.
 */
export const CNI_INSTALLED_PLUGINS: Record<'flannel' | 'calico', string[]> = {
  flannel: [],
  calico: ['bandwidth', 'host-local', 'loopback', 'portmap', 'tuning'],
};

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
