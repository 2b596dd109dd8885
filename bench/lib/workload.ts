// What the tools run on the bench bed: racksmith's playbooks/site.ts with a bench inventory, and
// bench/ansible/site.yml with a YAML inventory and an ansible.cfg generated for the run (plain
// ansible-core, and the same with Mitogen's strategy).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Testbed } from './bed.ts';
import { repoRoot } from './bed.ts';

export const ansibleDir = join(repoRoot, 'bench', 'ansible');
export const ansiblePlaybook = join(ansibleDir, 'site.yml');
export const sitePlaybook = join(repoRoot, 'playbooks', 'site.ts');

/**
 * Inventory variables racksmith's site playbook needs on the bed (see test/e2e/network.test.ts
 * and jail.test.ts): two sysctls that a child network namespace lacks are dropped, two built-in
 * modules are listed so that the kmod resource has work, and the jail root is the bed's shared
 * directory bound (no NFS in this kernel). The bed's hosts have no NVIDIA driver, so they are the
 * jail's CPU nodes (`jail_gpu: false`): a GPU node without a driver fails, and the Ansible side
 * binds no driver either.
 */
export const RACKSMITH_VARS = {
  sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null },
  kernel_modules: ['br_netfilter', 'overlay'],
  jail_source: '/srv/shared/jail',
  jail_fstype: 'none',
  jail_options: ['bind'],
  jail_gpu: false,
};

export interface Workload {
  dir: string;
  racksmithInventory: string;
  ansibleInventory: string;
  ansibleCfg: string;
  /** The same ansible.cfg with Mitogen's strategy (written when Mitogen is installed). */
  mitogenCfg?: string;
  /**
   * --become: every tool logs in as the bed's operator account `ops` and escalates with sudo
   * (NOPASSWD, the bed's default); racksmithRootInventory reaches the same hosts as root, for the
   * root run racksmith's become run is compared with.
   */
  become: boolean;
  racksmithRootInventory?: string;
  /** ControlPath directory of this run's OpenSSH masters. */
  controlDir: string;
  ansibleHome: string;
  hosts: string[];
  /** The storage play is in site.ts and the hosts are in the storage group with their loop disks. */
  storage: boolean;
}

/** Host patterns of site.ts's plays that the bench inventory fills (and the Ansible side mirrors). */
export const BENCHED_PATTERNS = ['all', 'storage', 'jail'];

/** The plays of playbooks/site.ts: does it have the storage play, and which plays get no bench host. */
export async function sitePlays(): Promise<{ storage: boolean; storagePlay?: string; plays: string[]; notBenched: string[] }> {
  const { loadPlaybook } = await import('../../src/cli.ts');
  const pb = await loadPlaybook(sitePlaybook);
  const storagePlay = pb.plays.find((p) => p.hosts === 'storage')?.name;
  return {
    storage: storagePlay !== undefined,
    storagePlay,
    plays: pb.plays.map((p) => p.name),
    notBenched: pb.plays.filter((p) => !BENCHED_PATTERNS.includes(p.hosts)).map((p) => `${p.name} (hosts: ${p.hosts})`),
  };
}

/** storage_disks of a bed host: its loop disks as d1 (HDD), d2 (SSD), ..., matched by kernel name in udev. */
export function storageDisks(h: { disks: Array<{ dev: string }> }) {
  return h.disks.map((d, i) => ({ device: d.dev, name: `d${i + 1}`, match: { KERNEL: d.dev.replace('/dev/', '') } }));
}

/**
 * Inventories as people write them: every group's members spelled out, no YAML anchors (the
 * yaml library would alias the member list both groups share).
 */
const WRITTEN_OUT = { aliasDuplicateObjects: false } as const;

/**
 * Where the installed ansible-mitogen keeps its strategy plugins (Debian's package:
 * /usr/lib/python3/dist-packages/ansible_mitogen/plugins/strategy), or undefined when it is not
 * installed. Asked from the Python that runs ansible-playbook, so it is the copy Ansible imports.
 */
export function mitogenStrategyDir(): string | undefined {
  try {
    // its shebang's interpreter (`python3` on PATH may be another Python, e.g. pyenv's)
    const playbookBin = execFileSync('sh', ['-c', 'command -v ansible-playbook'], { encoding: 'utf8' }).trim();
    const python = /^#!\s*(\S+)/.exec(readFileSync(playbookBin, 'utf8').split('\n', 1)[0])?.[1] ?? 'python3';
    const pkg = execFileSync(python, ['-c', 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dir = join(pkg, 'plugins', 'strategy');
    return existsSync(join(dir, 'mitogen_linear.py')) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Who the tools log in as: root, or (--become) the bed's `ops` with sudo, for all tools alike. */
const login = (become: boolean) => (become ? { ansible_user: 'ops', ansible_become: true } : { ansible_user: 'root' });

/** Write the inventories and the ansible.cfg files for every bed host into `dir`. */
export function writeWorkload(tb: Testbed, dir: string, forks: number, storage: boolean, mitogenDir?: string, become = false): Workload {
  mkdirSync(dir, { recursive: true });
  const bed = tb.hosts();
  const hosts = bed.map((h) => h.name);
  const hostVars = (h: (typeof bed)[number]) => ({
    ansible_host: h.ip,
    ansible_port: h.port,
    ...(storage ? { storage_disks: storageDisks(h) } : {}),
  });
  const members = Object.fromEntries(hosts.map((h) => [h, null]));
  const groups = { jail: { hosts: members }, ...(storage ? { storage: { hosts: members } } : {}) };

  const writeRacksmithInventory = (file: string, asBecome: boolean) =>
    writeFileSync(
      file,
      stringify(
        {
          all: {
            vars: {
              ...login(asBecome),
              ansible_ssh_private_key_file: tb.keyPath,
              racksmith_known_hosts: tb.knownHostsPath,
              ...RACKSMITH_VARS,
            },
            hosts: Object.fromEntries(bed.map((h) => [h.name, hostVars(h)])),
            children: groups,
          },
        },
        WRITTEN_OUT,
      ),
    );
  const rsInv = join(dir, 'inventory.yaml');
  writeRacksmithInventory(rsInv, become);
  let rsRootInv: string | undefined;
  if (become) writeRacksmithInventory((rsRootInv = join(dir, 'inventory-root.yaml')), false);

  // Ansible reads the same YAML inventory format; its own variables are in bench/ansible/group_vars.
  const ansInv = join(dir, 'ansible-inventory.yaml');
  writeFileSync(
    ansInv,
    stringify(
      {
        all: {
          vars: { ...login(become), ansible_ssh_private_key_file: tb.keyPath, ansible_python_interpreter: '/usr/bin/python3' },
          hosts: Object.fromEntries(bed.map((h) => [h.name, hostVars(h)])),
          children: groups,
        },
      },
      WRITTEN_OUT,
    ),
  );

  const controlDir = join(dir, 'cp');
  const ansibleHome = join(dir, 'ansible-home');
  mkdirSync(controlDir, { recursive: true });
  mkdirSync(ansibleHome, { recursive: true });
  const cfg = join(dir, 'ansible.cfg');
  const cfgText = (strategy: string) =>
    `# generated by bench/lib/workload.ts: Ansible tuned for the benchmark
[defaults]
forks = ${forks}
gathering = explicit
host_key_checking = True
retry_files_enabled = False
interpreter_python = /usr/bin/python3
local_tmp = ${join(ansibleHome, 'tmp')}
# seconds to connect; for Mitogen, to connect and boot its agent on the host, which a loaded
# machine took more than 10 s for at 2 hosts and more than 30 s for at 20 (load 27)
timeout = 120
${strategy}
[ssh_connection]
pipelining = True
# ControlPersist keeps one master connection per host for the whole run (every later task reuses
# it). No -C: compression only costs CPU on a local bridge (racksmith's ssh2 does not compress).
ssh_args = -o ControlMaster=auto -o ControlPersist=60s -o KexAlgorithms=curve25519-sha256 -o UserKnownHostsFile=${tb.knownHostsPath} -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes
control_path_dir = ${controlDir}
`;
  writeFileSync(cfg, cfgText(''));
  // Mitogen: everything else as above (its connection takes ssh_args and the timeout from here;
  // pipelining and ControlPersist do not apply to it: one Mitogen connection per host carries
  // every task).
  let mitogenCfg: string | undefined;
  if (mitogenDir) {
    mitogenCfg = join(dir, 'ansible-mitogen.cfg');
    writeFileSync(mitogenCfg, cfgText(`strategy_plugins = ${mitogenDir}\nstrategy = mitogen_linear\n`));
  }
  return {
    dir,
    racksmithInventory: rsInv,
    racksmithRootInventory: rsRootInv,
    ansibleInventory: ansInv,
    ansibleCfg: cfg,
    mitogenCfg,
    become,
    controlDir,
    ansibleHome,
    hosts,
    storage,
  };
}

/** Environment for ansible-playbook: the generated config, state under the run directory (not ~/.ansible). */
export function ansibleEnv(w: Workload, mitogen = false): NodeJS.ProcessEnv {
  if (mitogen && !w.mitogenCfg) throw new Error('bench: ansible-mitogen is not installed (apt-get install ansible-mitogen)');
  // the generated config decides the strategy, not the caller's environment
  const { ANSIBLE_STRATEGY: _s, ANSIBLE_STRATEGY_PLUGINS: _p, ...env } = process.env;
  return {
    ...env,
    ANSIBLE_CONFIG: mitogen ? w.mitogenCfg : w.ansibleCfg,
    ANSIBLE_HOME: w.ansibleHome,
    ANSIBLE_LOCAL_TEMP: join(w.ansibleHome, 'tmp'),
    ANSIBLE_NOCOLOR: '1',
    ANSIBLE_FORCE_COLOR: '0',
  };
}
