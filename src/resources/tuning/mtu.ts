import { probed } from '../../contract/probe.ts';
/**
 * mtu: an interface's MTU (by name, MAC or driver), set live (`ip link`) and persisted through the
 * network stack the host actually uses, detected in this order: netplan (/etc/netplan/*.yaml),
 * NetworkManager (running, with an active connection on the device), systemd-networkd (a .network
 * file that matches the device: a drop-in for it) or ifupdown (an `iface` stanza in
 * /etc/network/interfaces). A host where none of them configures the device is refused: racksmith
 * never guesses where a boot takes the MTU from.
 */
import { posix } from 'node:path';
import {
  common,
  NotApplicable,
  ProbeError,
  Refusal,
  type Change,
  type CommonOptions,
  type Resource,
  type Step,
} from '../../contract/resource.ts';
import { shq } from '../../shell/quote.ts';
import { InputError } from '../../util/errors.ts';
import { contentText, fileFacts, sha256, type FileFacts } from '../core/file-common.ts';
import { FileWrite, managedFile } from '../core/managed-file.ts';
import {
  checkSelector,
  NIC_PROBE,
  parseNics,
  selectNics,
  selectorId,
  selectorText,
  type NicFacts,
  type NicSelector,
  type NicsFacts,
} from './nic.ts';

export type NetworkStack = 'netplan' | 'networkmanager' | 'networkd' | 'ifupdown';

export interface MtuOptions extends CommonOptions {
  select: NicSelector;
  mtu: number;
}

export interface NetworkdFile {
  path: string;
  /** [Match] keys (Name, MACAddress, Driver ...), each a list of patterns. */
  match: Record<string, string[]>;
  /** The content of racksmith's drop-in for it, if present. */
  dropin?: string;
}

export interface MtuFacts extends NicsFacts {
  netplan: string[];
  /** Active NetworkManager connections by device (NM running), else null. */
  nm: Record<string, string> | null;
  networkd: NetworkdFile[];
  interfaces: FileFacts;
  /** Our netplan file's facts. */
  netplanFile: FileFacts;
}

export const INTERFACES = '/etc/network/interfaces';
export const NETWORKD_DIRS = ['/etc/systemd/network', '/run/systemd/network', '/usr/lib/systemd/network', '/lib/systemd/network'];
const DROPIN = '90-racksmith-mtu.conf';
/** Why a live MTU change is disruptive (Change.disruptive): the link resets, connections stall. */
const MTU_DISRUPTS = 'the link resets: open connections stall or drop';
const MATCH_KEYS = ['Name', 'MACAddress', 'PermanentMACAddress', 'Driver', 'OriginalName'];

const STACK_PROBE = `for rs_f in /etc/netplan/*.yaml; do [ -e "$rs_f" ] && echo "@netplan $rs_f"; done
if [ -d /run/NetworkManager ] && command -v nmcli >/dev/null 2>&1; then
  echo @nm; nmcli -t -f DEVICE,NAME connection show --active 2>/dev/null
fi
set --
for rs_d in ${NETWORKD_DIRS.join(' ')}; do for rs_f in "$rs_d"/*.network; do [ -e "$rs_f" ] && set -- "$@" "$rs_f"; done; done
for rs_f in "$@"; do
  echo "@networkd $rs_f"
  rs_x=/etc/systemd/network/\${rs_f##*/}.d/${DROPIN}
  [ -f "$rs_x" ] && { echo "@dropin"; cat "$rs_x"; echo "@end"; }
done
echo @match
[ $# -gt 0 ] && grep -H -E '^[[:space:]]*(\\[|Name=|MACAddress=|PermanentMACAddress=|Driver=|OriginalName=)' -- "$@" 2>/dev/null
:`;

export function parseStack(stdout: string): Pick<MtuFacts, 'netplan' | 'nm' | 'networkd'> {
  const cut = stdout.indexOf('@match\n');
  if (cut < 0) throw new ProbeError('network stack probe output is incomplete');
  const head = stdout.slice(0, cut);
  const netplan = [...head.matchAll(/^@netplan (.+)$/gm)].map((m) => m[1]);
  let nm: Record<string, string> | null = null;
  const networkd: NetworkdFile[] = [];
  const lines = head.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (l === '@nm') {
      nm = {};
      for (i++; i < lines.length && !lines[i].startsWith('@'); i++) {
        const [dev, ...name] = lines[i].split(':');
        if (dev && name.length) nm[dev] = name.join(':');
      }
      i--;
    } else if (l.startsWith('@networkd ')) {
      const f: NetworkdFile = { path: l.slice(10), match: {} };
      if (lines[i + 1] === '@dropin') {
        const end = lines.indexOf('@end', i + 2);
        f.dropin = lines.slice(i + 2, end).join('\n') + '\n';
        i = end;
      }
      networkd.push(f);
    }
  }
  // [Match] keys: only lines inside a [Match] section count
  const section = new Map<string, string>();
  for (const l of stdout.slice(cut + 7).split('\n')) {
    const f = networkd.find((x) => l.startsWith(`${x.path}:`));
    if (!f) continue;
    const text = l.slice(f.path.length + 1).trim();
    if (text.startsWith('[')) section.set(f.path, text);
    else if (section.get(f.path) === '[Match]') {
      const eq = text.indexOf('=');
      const key = text.slice(0, eq);
      if (!MATCH_KEYS.includes(key)) continue; // (the probe's grep keeps only these; other keys do not narrow here)
      const values = text
        .slice(eq + 1)
        .trim()
        .split(/\s+/)
        .filter(Boolean);
      // an empty assignment resets the list (systemd.network(5))
      f.match[key] = values.length ? [...(f.match[key] ?? []), ...values] : [];
    }
  }
  return { netplan, nm, networkd };
}

const glob = (p: string) =>
  new RegExp(
    `^${p
      .replace(/[.+^${}()|\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
const anyMatch = (patterns: string[], v: string) => {
  const neg = patterns.length > 0 && patterns.every((p) => p.startsWith('!'));
  return neg ? !patterns.some((p) => glob(p.slice(1)).test(v)) : patterns.some((p) => glob(p).test(v));
};

/** The .network file systemd-networkd applies to a device: the first by name (a name in /etc hides the others) whose [Match] fits. */
export function networkdFileFor(files: readonly NetworkdFile[], nic: NicFacts): NetworkdFile | undefined {
  const byName = new Map<string, NetworkdFile>();
  for (const dir of NETWORKD_DIRS)
    for (const f of files) if (posix.dirname(f.path) === dir && !byName.has(posix.basename(f.path))) byName.set(posix.basename(f.path), f);
  const ordered = [...byName.keys()].sort().map((k) => byName.get(k)!);
  return ordered.find((f) => {
    const m = f.match;
    if (m.Name?.length && !anyMatch(m.Name, nic.name)) return false;
    if (m.OriginalName?.length && !anyMatch(m.OriginalName, nic.name)) return false;
    if (m.MACAddress?.length && !m.MACAddress.includes(nic.mac)) return false;
    if (m.PermanentMACAddress?.length && !m.PermanentMACAddress.includes(nic.mac)) return false;
    if (m.Driver?.length && !anyMatch(m.Driver, nic.driver)) return false;
    return true;
  });
}

/** The ifupdown stanza of a device in /etc/network/interfaces: the line index of its first `iface NAME inet` line. */
const STANZA = /^(iface|auto|allow-\S+|mapping|source|source-directory|no-auto-down|no-scripts|rename)\b/;

/** /etc/network/interfaces with racksmith's MTU line in the device's inet stanza (undefined: no such stanza). */
export function editInterfaces(text: string, nic: string, mtu: number): { text: string; current?: number } | undefined {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => new RegExp(`^\\s*iface\\s+${nic.replace(/[.]/g, '\\.')}\\s+inet\\s`).test(l));
  if (at < 0) return undefined;
  let end = at + 1;
  while (end < lines.length && !STANZA.test(lines[end].trim())) end++;
  const ours = `    post-up ip link set dev ${nic} mtu ${mtu} # racksmith`;
  const mark = new RegExp(`^\\s*post-up ip link set dev ${nic.replace(/[.]/g, '\\.')} mtu (\\d+) # racksmith$`);
  const existing = lines.slice(at + 1, end).findIndex((l) => mark.test(l));
  if (existing >= 0) {
    const current = Number(mark.exec(lines[at + 1 + existing])![1]);
    lines[at + 1 + existing] = ours;
    return { text: lines.join('\n'), current };
  }
  lines.splice(at + 1, 0, ours);
  return { text: lines.join('\n') };
}

export function renderNetplan(sel: NicSelector, mtu: number): string {
  const id = sel.name ?? `racksmith-${selectorId(sel).replace(/[^A-Za-z0-9-]/g, '-')}`;
  const match = sel.name
    ? ''
    : sel.mac
      ? `      match:\n        macaddress: "${sel.mac}"\n`
      : `      match:\n        driver: "${sel.driver}"\n`;
  return `# Managed by racksmith: MTU of ${selectorText(sel)}.\nnetwork:\n  version: 2\n  ethernets:\n    ${id}:\n${match}      mtu: ${mtu}\n`;
}

export const renderNetworkdDropin = (mtu: number) => `# Managed by racksmith.\n[Link]\nMTUBytes=${mtu}\n`;

/** The stack that configures a device, by the detection order above. */
export function detectStack(f: MtuFacts, nic: NicFacts): NetworkStack | undefined {
  if (f.netplan.length) return 'netplan';
  if (f.nm && f.nm[nic.name]) return 'networkmanager';
  if (networkdFileFor(f.networkd, nic)) return 'networkd';
  if (f.interfaces.type === 'file' && editInterfaces(contentText(f.interfaces), nic.name, 0)) return 'ifupdown';
  return undefined;
}

type MtuData = { live: string } | { nm: string; conn: string } | FileWrite;

/** A probed small file as FileFacts (a drop-in read by the stack probe). */
function textFacts(text: string | undefined): FileFacts {
  if (text === undefined) return { type: 'absent' };
  const content = Buffer.from(text);
  return { type: 'file', size: content.length, content, sha256: sha256(content), mode: '644', uid: 0, user: 'root', gid: 0, group: 'root' };
}

export function mtu(o: MtuOptions): Resource<MtuFacts, MtuData> {
  const sel = checkSelector(o.select, 'mtu');
  if (!Number.isInteger(o.mtu) || o.mtu < 576 || o.mtu > 65536)
    throw new InputError(`mtu ${selectorText(sel)}: must be 576..65536, got ${o.mtu}`);
  const id = selectorId(sel).replace(/[^A-Za-z0-9_.-]/g, '_');
  const netplanPath = `/etc/netplan/90-racksmith-mtu-${id}.yaml`;
  const netplan = managedFile<MtuFacts>({
    path: netplanPath,
    get: (f) => f.netplanFile,
    set: (f, netplanFile) => ({ ...f, netplanFile }),
    mode: '600',
    then: 'netplan generate',
  });
  const interfaces = managedFile<MtuFacts>({ path: INTERFACES, get: (f) => f.interfaces, set: (f, i) => ({ ...f, interfaces: i }) });
  return {
    ...common('mtu', `mtu:${selectorId(sel)}`, o),
    mayDisrupt: MTU_DISRUPTS,
    verifiable: true,
    files: [netplan, interfaces],
    // its own netplan file (the interfaces file and drop-ins it edits are the host's, found at run time)
    claims: [`file:${netplanPath}`],
    ...probed(
      () => ({ nics: NIC_PROBE, stack: STACK_PROBE, netplanFile: netplan.probe(), interfaces: interfaces.probe() }),
      (a) => ({
        ...parseNics(a.nics),
        ...parseStack(a.stack),
        netplanFile: fileFacts(a.netplanFile),
        interfaces: fileFacts(a.interfaces),
      }),
    ),
    diff(f) {
      const nics = selectNics(f.nics, sel);
      if (!nics.length) throw new NotApplicable(`no interface matches ${selectorText(sel)}`);
      const changes: Change<MtuData>[] = [];
      const unknown: string[] = [];
      let ifText: string | undefined;
      for (const nic of nics) {
        if (nic.mtu !== o.mtu)
          changes.push({ summary: `${nic.name} mtu: ${nic.mtu} → ${o.mtu}`, data: { live: nic.name }, disruptive: MTU_DISRUPTS });
        const stack = detectStack(f, nic);
        if (stack === 'netplan') {
          if (!changes.some((c) => c.data instanceof FileWrite))
            changes.push(
              ...netplan.changes(f, renderNetplan(sel, o.mtu), {
                create: `persist mtu ${o.mtu} for ${selectorText(sel)} in ${netplanPath} (netplan)`,
              }),
            );
        } else if (stack === 'networkmanager') {
          // (NetworkManager keeps it in the connection's profile; its current value is not probed: set when the live one differs)
          if (nic.mtu !== o.mtu)
            changes.push({
              summary: `persist mtu ${o.mtu} in NetworkManager connection ${f.nm![nic.name]}`,
              data: { nm: nic.name, conn: f.nm![nic.name] },
              disruptive: MTU_DISRUPTS,
            });
        } else if (stack === 'networkd') {
          const file = networkdFileFor(f.networkd, nic)!;
          const path = `/etc/systemd/network/${posix.basename(file.path)}.d/${DROPIN}`;
          const mf = managedFile({ path, mode: '644' });
          changes.push(
            ...mf.changes(textFacts(file.dropin), renderNetworkdDropin(o.mtu), {
              create: `persist mtu ${o.mtu} for ${nic.name}: ${path} (systemd-networkd, for ${file.path})`,
            }),
          );
        } else if (stack === 'ifupdown') {
          const edit = editInterfaces(ifText ?? contentText(f.interfaces), nic.name, o.mtu)!;
          ifText = edit.text;
        } else unknown.push(nic.name);
      }
      if (ifText !== undefined)
        changes.push(
          ...interfaces.changes(f, ifText, { update: `persist mtu ${o.mtu} for ${selectorText(sel)} in ${INTERFACES} (ifupdown)` }),
        );
      if (unknown.length)
        throw new Refusal(
          `cannot persist mtu ${o.mtu} for ${unknown.join(', ')}: no network stack racksmith knows configures it (netplan, NetworkManager, systemd-networkd, ifupdown)`,
        );
      return changes;
    },
    apply(_, changes): Step[] {
      const steps: Step[] = [...netplan.steps(changes), ...interfaces.steps(changes)];
      for (const c of changes) {
        const d = c.data;
        if (d instanceof FileWrite) {
          if (d.path !== netplanPath && d.path !== INTERFACES) steps.push(...managedFile({ path: d.path, mode: '644' }).steps([c]));
        } else if (d && 'live' in d)
          steps.push({ name: `ip link set ${d.live} mtu ${o.mtu}`, script: `ip link set dev ${shq(d.live)} mtu ${o.mtu}` });
        else if (d && 'nm' in d)
          steps.push({ name: `nmcli mtu ${d.conn}`, script: `nmcli connection modify ${shq(d.conn)} 802-3-ethernet.mtu ${o.mtu}` });
      }
      return steps;
    },
  };
}
