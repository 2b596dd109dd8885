// End state of a host after a run, read from inside the host (nsenter, no SSH, not timed), in a
// form both tools must agree on. A benchmark of unequal work is worthless: after each tool's
// converged run the bench compares these per host.
//
// Compared exactly: every managed file (content hash, mode, owner) except the sysctl.d drop-ins,
// /etc/fstab (content, filesystem UUIDs named by disk), the live value of every managed sysctl,
// the mounts under /mnt/jail and /ais (target, source, fstype, options), the jail's /tmp source
// directory, each data disk (filesystem type, scheduler and queue values), the data roots (mode,
// owner, no leftover xattr), the managed directories' listings. Compared as key=value sets: the sysctl.d drop-ins (ansible.posix.sysctl
// writes `key=value` lines without racksmith's header comment). Not compared: fstab backups
// (racksmith: fstab.racksmith-<time>.bak, Ansible: fstab.<pid>.<time>~), listed for information.
import type { Testbed } from './bed.ts';
import { SYSCTL_PROFILES } from '../../src/profiles/sysctl-profiles.ts';
import { RACKSMITH_VARS } from './workload.ts';

const SYSCTL_FILES = ['required', 'network', 'vm'].map((p) => `/etc/sysctl.d/99-zz-racksmith-${p}.conf`);
const FILES = [
  '/etc/security/limits.d/90-racksmith.conf',
  '/etc/systemd/system.conf.d/90-racksmith-nofile.conf',
  '/etc/systemd/system/containerd.service.d/90-racksmith-nofile.conf',
  '/etc/modules-load.d/racksmith.conf',
  '/etc/udev/rules.d/60-racksmith-io.rules',
];
const DIRS = [
  '/etc/sysctl.d',
  '/etc/security/limits.d',
  '/etc/modules-load.d',
  '/etc/systemd/system.conf.d',
  '/etc/udev/rules.d',
  '/var/lib/racksmith',
  '/ais',
];

/** The sysctl keys the site playbook manages on the bed (profiles minus the dropped keys). */
export function managedSysctls(): string[] {
  const dropped = new Set(
    Object.entries(RACKSMITH_VARS.sysctl_overrides)
      .filter(([, v]) => v === null)
      .map(([k]) => k),
  );
  return Object.values(SYSCTL_PROFILES)
    .flatMap((p) => Object.keys(p))
    .filter((k) => !dropped.has(k));
}

function script(disks: string[]): string {
  const keys = managedSysctls();
  const ks = disks.map((d) => d.replace('/dev/', ''));
  return `
for f in ${SYSCTL_FILES.join(' ')}; do
  if [ -f "$f" ]; then echo "== sysctl-file $f $(stat -c '%a %U:%G' "$f")"; grep -v '^[[:space:]]*[#;]' "$f" | grep . | sed 's/^-//; s/[[:space:]]*=[[:space:]]*/=/; s/[[:space:]]\\+/ /g' | sort
  else echo "== sysctl-file $f absent"; fi
done
for f in ${FILES.join(' ')}; do
  if [ -f "$f" ]; then echo "== file $f $(stat -c '%a %U:%G' "$f") $(sha256sum < "$f" | cut -c1-16)"; else echo "== file $f absent"; fi
done
# filesystem UUIDs differ between two mkfs runs: name them by disk
uu=; for k in ${ks.join(' ')}; do u=$(blkid -p -s UUID -o value /dev/$k 2>/dev/null); [ -n "$u" ] && uu="$uu s/$u/<uuid of $k>/g;"; done
echo "== fstab $(stat -c '%a %U:%G' /etc/fstab)"; sed "\${uu:-s/^//}" /etc/fstab
echo "== live sysctls"
for k in ${keys.join(' ')}; do p=/proc/sys/$(echo "$k" | tr . /); printf '%s=%s\\n' "$k" "$(tr '\\t\\n' '  ' < "$p" 2>/dev/null | sed 's/ *$//; s/  */ /g')"; done
echo "== jail tmp source $(stat -c '%F %a %U:%G' /var/lib/racksmith/jail-tmp 2>/dev/null || echo absent)"
echo "== mounts"; findmnt -rn -o TARGET,SOURCE,FSTYPE,OPTIONS | awk '$1 ~ /^\\/(mnt\\/jail|ais)(\\/|$)/' | sort
for k in ${ks.join(' ')}; do
  q=/sys/block/$k/queue
  echo "== disk $k: $(blkid -p -s TYPE -o value /dev/$k 2>/dev/null || echo blank) $(sed 's/.*\\[\\(.*\\)\\].*/\\1/' $q/scheduler) nr_requests=$(cat $q/nr_requests) max_sectors_kb=$(cat $q/max_sectors_kb) read_ahead_kb=$(cat $q/read_ahead_kb) rq_affinity=$(cat $q/rq_affinity)"
done
for d in /ais/*; do [ -d "$d" ] && echo "== data root $d $(stat -c '%a %U:%G' "$d") xattrs: $(getfattr -d --absolute-names "$d" 2>/dev/null | grep -c =)"; done
# storage.json: racksmith's own record of which disk serves which mountpath (its state, no part of
# the workload the Ansible playbook does), left out of the comparison
echo "== listings"; for d in ${DIRS.join(' ')}; do echo "$d: $(ls -A "$d" 2>/dev/null | grep -vx storage.json | tr '\\n' ' ')"; done
`;
}

export interface HostState {
  host: string;
  text: string;
  /** fstab backups left by the tool (not compared). */
  fstabBackups: number;
}

export async function snapshot(tb: Testbed, hosts: string[]): Promise<HostState[]> {
  const bed = new Map(tb.hosts().map((h) => [h.name, h]));
  return Promise.all(
    hosts.map(async (h) => {
      const r = await tb.hostExec(h, script(bed.get(h)!.disks.map((d) => d.dev)));
      const b = await tb.hostExec(h, 'ls /etc | grep -cE "^fstab\\..*(bak|~)$" || true');
      return {
        host: h,
        text: r.stdout + (r.code ? `\n(snapshot exit ${r.code}: ${r.stderr})` : ''),
        fstabBackups: Number(b.stdout.trim()) || 0,
      };
    }),
  );
}

export interface Comparison {
  /** No difference in content (entries may still be in a different order, see orderOnly). */
  identical: boolean;
  hosts: number;
  /** Per differing host: the first lines that differ (a: first tool, b: second). */
  differences: Array<{ host: string; lines: Array<{ a?: string; b?: string }> }>;
  /** Sections with the same lines in a different order (e.g. fstab entries appended in another order). */
  orderOnly: Array<{ host: string; section: string }>;
}

function sections(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let cur = '(top)';
  for (const l of text.split('\n')) {
    if (l.startsWith('== ')) {
      cur = l;
      out.set(cur, []);
    } else (out.get(cur) ?? out.set(cur, []).get(cur)!).push(l);
  }
  return out;
}

export function compare(a: HostState[], b: HostState[]): Comparison {
  const bm = new Map(b.map((x) => [x.host, x]));
  const differences: Comparison['differences'] = [];
  const orderOnly: Comparison['orderOnly'] = [];
  for (const x of a) {
    const y = bm.get(x.host);
    if (!y) {
      differences.push({ host: x.host, lines: [{ a: '(state)', b: '(missing)' }] });
      continue;
    }
    if (x.text === y.text) continue;
    const sa = sections(x.text);
    const sb = sections(y.text);
    const lines: Array<{ a?: string; b?: string }> = [];
    for (const key of new Set([...sa.keys(), ...sb.keys()])) {
      const la = sa.get(key);
      const lb = sb.get(key);
      if (!la || !lb) {
        lines.push(la ? { a: key } : { b: key });
        continue;
      }
      if (la.join('\n') === lb.join('\n')) continue;
      if ([...la].sort().join('\n') === [...lb].sort().join('\n')) {
        orderOnly.push({ host: x.host, section: key });
        continue;
      }
      const setA = new Set(la);
      const setB = new Set(lb);
      lines.push(
        { a: key, b: key },
        ...la.filter((l) => !setB.has(l)).map((l) => ({ a: l })),
        ...lb.filter((l) => !setA.has(l)).map((l) => ({ b: l })),
      );
    }
    if (lines.length) differences.push({ host: x.host, lines: lines.slice(0, 12) });
  }
  return { identical: differences.length === 0, hosts: a.length, differences, orderOnly };
}
