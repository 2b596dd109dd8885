import { probed } from '../../contract/probe.ts';
/**
 * Network interfaces as resources see them: the NIC probe (one plain part, shared word for word by
 * every NIC resource of a script: it runs once), selectors by name, MAC or driver (as ais-k8s
 * matches mlx5_core), and nicQueues: `ethtool -L` channels (default: physical cores, as ais-k8s)
 * and `ethtool -G` rings, set live and at boot by a udev rule. A setting the driver does not
 * support is reported per NIC ("rings: not supported by driver veth (eth0)"), never hidden.
 */
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
import { checkAbsolutePath, fileFacts, type FileFacts } from '../core/file-common.ts';
import { FileWrite, managedFile } from '../core/managed-file.ts';

/** Which interfaces a setting is for: exactly one of name, MAC address or driver. */
export interface NicSelector {
  name?: string;
  mac?: string;
  driver?: string;
}

export interface ChannelCounts {
  rx?: number;
  tx?: number;
  other?: number;
  combined?: number;
}

export interface NicFacts {
  name: string;
  mac: string;
  mtu: number;
  driver: string;
  /** null: the driver does not report channels (ethtool -l unsupported). */
  channels: { max: ChannelCounts; current: ChannelCounts } | null;
  /** null: the driver does not report rings (ethtool -g unsupported). */
  rings: { max: ChannelCounts; current: ChannelCounts } | null;
}

export interface NicsFacts {
  nics: NicFacts[];
  /** Physical cores (distinct package:core pairs). */
  cores: number;
  ethtool: boolean;
}

const IFNAME = /^[A-Za-z0-9_.:@-]{1,15}$/;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;
const DRIVER = /^[A-Za-z0-9_.-]+$/;

export function checkSelector(s: NicSelector, what: string): NicSelector {
  const given = (['name', 'mac', 'driver'] as const).filter((k) => s[k] !== undefined);
  if (given.length !== 1) throw new InputError(`${what}: give exactly one of name, mac or driver`);
  if (s.name !== undefined && !IFNAME.test(s.name)) throw new InputError(`${what}: invalid interface name ${JSON.stringify(s.name)}`);
  if (s.mac !== undefined && !MAC.test(s.mac))
    throw new InputError(`${what}: invalid MAC ${JSON.stringify(s.mac)} (lower case, aa:bb:...)`);
  if (s.driver !== undefined && !DRIVER.test(s.driver)) throw new InputError(`${what}: invalid driver ${JSON.stringify(s.driver)}`);
  return s;
}

export const selectorText = (s: NicSelector) => (s.name ? s.name : s.mac ? `mac ${s.mac}` : `driver ${s.driver}`);
export const selectorId = (s: NicSelector) => s.name ?? s.mac ?? `driver=${s.driver}`;

export function selectNics(nics: readonly NicFacts[], s: NicSelector): NicFacts[] {
  return nics.filter((n) => (s.name ? n.name === s.name : s.mac ? n.mac === s.mac : n.driver === s.driver));
}

/**
 * Every interface but lo: MAC and MTU by builtin reads, then with ethtool its driver, channels
 * and rings; without ethtool, the driver from sysfs. Physical cores from sysfs topology.
 */
export const NIC_PROBE = `if command -v ethtool >/dev/null 2>&1; then echo ethtool=yes; rs_et=1; else echo ethtool=no; rs_et=; fi
for rs_n in /sys/class/net/*; do
  rs_i=\${rs_n##*/}
  [ "$rs_i" = lo ] && continue
  read -r rs_mac < "$rs_n/address" 2>/dev/null || rs_mac=
  read -r rs_mtu < "$rs_n/mtu" 2>/dev/null || rs_mtu=0
  echo "@nic $rs_i $rs_mac $rs_mtu"
  if [ -n "$rs_et" ]; then
    ethtool -i "$rs_i" 2>/dev/null | grep '^driver:'
    echo @channels; ethtool -l "$rs_i" 2>/dev/null || echo unsupported
    echo @rings; ethtool -g "$rs_i" 2>/dev/null || echo unsupported
  elif [ -e "$rs_n/device/driver" ]; then
    rs_d=$(readlink "$rs_n/device/driver"); echo "driver: \${rs_d##*/}"
  fi
done
for rs_c in /sys/devices/system/cpu/cpu[0-9]*/topology; do
  read -r rs_p < "$rs_c/physical_package_id" && read -r rs_k < "$rs_c/core_id" && echo "@core $rs_p:$rs_k"
done 2>/dev/null
:`;

/** ethtool -l / -g output: the "Pre-set maximums" and "Current hardware settings" blocks. */
export function parseEthtoolCounts(text: string): { max: ChannelCounts; current: ChannelCounts } | null {
  if (/^\s*unsupported\s*$/m.test(text) || !/Current hardware settings:/.test(text)) return null;
  const block = (from: RegExp) => {
    const out: ChannelCounts = {};
    const at = text.search(from);
    if (at < 0) return out;
    const rest = text.slice(at).split('\n').slice(1);
    for (const l of rest) {
      const m = /^(RX|TX|Other|Combined):\s*(\S+)/.exec(l);
      if (!m) {
        if (/:$/.test(l.trim())) break;
        continue;
      }
      const v = Number(m[2]);
      if (Number.isInteger(v)) out[m[1].toLowerCase() as keyof ChannelCounts] = v;
    }
    return out;
  };
  return { max: block(/Pre-set maximums:/), current: block(/Current hardware settings:/) };
}

export function parseNics(stdout: string): NicsFacts {
  const ethtool = /^ethtool=yes$/m.test(stdout);
  if (!/^ethtool=(yes|no)$/m.test(stdout)) throw new ProbeError('NIC probe output is incomplete');
  const nics: NicFacts[] = [];
  const cores = new Set<string>();
  for (const l of stdout.split('\n')) if (l.startsWith('@core ')) cores.add(l.slice(6));
  for (const chunk of stdout.split(/^@nic /m).slice(1)) {
    const [head, ...rest] = chunk.split('\n');
    const [name, mac, mtu] = head.split(' ');
    const body = rest.join('\n');
    const driver = /^driver: (\S+)/m.exec(body)?.[1] ?? '';
    const ch = body.indexOf('@channels\n');
    const rg = body.indexOf('@rings\n');
    nics.push({
      name,
      mac,
      mtu: Number(mtu),
      driver,
      channels: ch < 0 ? null : parseEthtoolCounts(body.slice(ch + 10, rg < 0 ? undefined : rg)),
      rings: rg < 0 ? null : parseEthtoolCounts(body.slice(rg + 7)),
    });
  }
  return { nics, cores: cores.size || 1, ethtool };
}

export interface NicQueuesOptions extends CommonOptions {
  select: NicSelector;
  /** Channels (ethtool -L): a count, or 'cores' (physical cores, as ais-k8s). */
  channels?: number | 'cores';
  /** Or ring sizes (ethtool -G), e.g. { rx: 8192 } as ais-k8s sets for mlx5_core. One of the two per resource. */
  rings?: { rx?: number; tx?: number };
  /** The udev rule file that applies them at boot (default /etc/udev/rules.d/60-racksmith-nic-<channels|rings>-<selector>.rules). */
  rulesFile?: string;
}

export interface NicQueuesFacts extends NicsFacts {
  rules: FileFacts;
}

interface QueueData {
  args: string[];
}

/** The udev match of a selector for a net device. */
export function udevMatch(s: NicSelector): string {
  if (s.name) return `KERNEL=="${s.name}"`;
  if (s.mac) return `ATTR{address}=="${s.mac}"`;
  return `DRIVERS=="${s.driver}"`;
}

/** What ethtool -L / -G should get for a NIC: only the counts it has, clamped to its maximums. */
export function wantedCounts(
  kind: 'channels' | 'rings',
  nic: NicFacts,
  want: ChannelCounts,
): { args: ChannelCounts; unsupported?: string } {
  const facts = nic[kind];
  if (!facts) return { args: {}, unsupported: `${kind}: not supported by driver ${nic.driver || 'unknown'} (${nic.name})` };
  const args: ChannelCounts = {};
  for (const [k, v] of Object.entries(want) as Array<[keyof ChannelCounts, number]>) {
    const max = facts.max[k];
    if (max !== undefined) args[k] = Math.min(v, max);
  }
  if (!Object.keys(args).length)
    return {
      args,
      unsupported: `${kind}: ${Object.keys(want).join('/')} not supported by driver ${nic.driver || 'unknown'} (${nic.name})`,
    };
  return { args };
}

/** Channel counts for a wanted total: combined where the driver has it, else rx and tx (veth). */
export function channelWant(nic: NicFacts, n: number): ChannelCounts {
  if (nic.channels?.max.combined !== undefined) return { combined: n };
  return { rx: n, tx: n };
}

const argText = (a: ChannelCounts) =>
  Object.entries(a)
    .map(([k, v]) => `${k} ${v}`)
    .join(' ');

/**
 * One NIC setting (channels or rings) for the interfaces a selector matches: live by ethtool, at
 * boot by a udev rule. Where no matched NIC's driver supports it, the resource is skipped with
 * that said per NIC.
 */
export function nicQueues(o: NicQueuesOptions): Resource<NicQueuesFacts, QueueData | FileWrite> {
  const sel = checkSelector(o.select, 'nic queues');
  if ((o.channels === undefined) === (o.rings === undefined))
    throw new InputError(`nic queues ${selectorText(sel)}: give channels or rings (one per resource)`);
  const kind = o.channels !== undefined ? 'channels' : 'rings';
  const flag = kind === 'channels' ? '-L' : '-G';
  const count = (v: unknown, what: string) => {
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535)
      throw new InputError(`nic queues ${selectorText(sel)}: ${what} must be 1..65535`);
  };
  if (o.channels !== undefined && o.channels !== 'cores') count(o.channels, 'channels');
  if (o.rings && !Object.keys(o.rings).length) throw new InputError(`nic queues ${selectorText(sel)}: rings needs rx or tx`);
  for (const [k, v] of Object.entries(o.rings ?? {})) count(v, `rings.${k}`);
  const id = selectorId(sel).replace(/[^A-Za-z0-9_.-]/g, '_');
  const rulesFile = checkAbsolutePath(o.rulesFile ?? `/etc/udev/rules.d/60-racksmith-nic-${kind}-${id}.rules`, 'nic rules file');
  const mf = managedFile<NicQueuesFacts>({ path: rulesFile, get: (f) => f.rules, set: (f, rules) => ({ ...f, rules }), mode: '644' });

  return {
    ...common('nic-queues', `nic-${kind}:${selectorId(sel)}`, o),
    mayDisrupt: `${selectorText(sel)} ${kind} reset: traffic stops while the driver rebuilds its queues`,
    verifiable: true,
    files: [mf],
    claims: [`file:${rulesFile}`],
    ...probed(
      () => ({ nics: NIC_PROBE, rules: mf.probe() }),
      ({ nics, rules }) => ({ ...parseNics(nics), rules: fileFacts(rules) }),
    ),
    diff(f) {
      if (!f.ethtool) throw new Refusal('ethtool is not installed (install_packages installs it)');
      const nics = selectNics(f.nics, sel);
      if (!nics.length) throw new NotApplicable(`no interface matches ${selectorText(sel)}`);
      const changes: Change<QueueData | FileWrite>[] = [];
      const unsupported: string[] = [];
      const rules: string[] = [];
      for (const nic of nics) {
        const want = o.channels !== undefined ? channelWant(nic, o.channels === 'cores' ? f.cores : o.channels) : o.rings!;
        const { args, unsupported: why } = wantedCounts(kind, nic, want);
        if (why) {
          unsupported.push(why);
          continue;
        }
        const cur = nic[kind]!.current;
        const differ = (Object.keys(args) as Array<keyof ChannelCounts>).filter((k) => cur[k] !== args[k]);
        if (differ.length)
          changes.push({
            summary: `${nic.name} ${kind}: ${differ.map((k) => `${k} ${cur[k] ?? '?'} → ${args[k]}`).join(', ')}`,
            data: { args: [flag, nic.name, ...argText(args).split(' ')] },
            // the driver resets its queues: the link drops packets (or goes down) for a moment
            disruptive: `${nic.name} ${kind} reset: traffic stops while the driver rebuilds its queues`,
          });
        // at boot, for every interface the selector then matches
        const rule = `ACTION=="add", SUBSYSTEM=="net", ${udevMatch(sel)}, RUN+="/usr/sbin/ethtool ${flag} $name ${argText(args)}"`;
        if (!rules.includes(rule)) rules.push(rule);
      }
      if (!rules.length) throw new NotApplicable(unsupported.join('; '));
      const out = [...mf.changes(f, `# Managed by racksmith: NIC ${kind} at boot.\n${rules.join('\n')}\n`), ...changes];
      // some matched NICs take it, others do not: never hidden
      if (unsupported.length && out.length)
        out[out.length - 1] = { ...out[out.length - 1], summary: `${out[out.length - 1].summary} (${unsupported.join('; ')})` };
      return out;
    },
    apply(_, changes): Step[] {
      const steps = mf.steps(changes);
      for (const c of changes) {
        const d = c.data;
        if (d && !(d instanceof FileWrite))
          steps.push({ name: `ethtool ${d.args.join(' ')}`, script: `ethtool ${d.args.map(shq).join(' ')}` });
      }
      return steps;
    },
  };
}
