import type { SourcePos } from '../util/errors.ts';
import type { Inventory } from './model.ts';
import { CONNECTION_VAR_NAMES } from './connection.ts';

/**
 * Ansible's variables that change how it reaches or runs on a host, and what racksmith does with
 * each. `honoured` ones are read by inventory/connection.ts; `irrelevant` ones do not matter to
 * a tool that speaks SSH itself and runs /bin/sh scripts (no Python, no file transfer, no
 * multiplexing to tune): accepted quietly; `ignored` ones would make Ansible connect or escalate
 * differently from racksmith: reported once per variable, where it was first set.
 */
type Treatment = { kind: 'irrelevant' } | { kind: 'ignored'; why: string };

const IRRELEVANT: Treatment = { kind: 'irrelevant' };
const ignored = (why: string): Treatment => ({ kind: 'ignored', why });

export const ANSIBLE_CONNECTION_VARS: Readonly<Record<string, Treatment>> = {
  ansible_python_interpreter: IRRELEVANT,
  ansible_pipelining: IRRELEVANT,
  ansible_ssh_pipelining: IRRELEVANT,
  ansible_ssh_retries: IRRELEVANT,
  ansible_remote_tmp: IRRELEVANT,
  ansible_async_dir: IRRELEVANT,
  ansible_module_compression: IRRELEVANT,
  ansible_shell_type: IRRELEVANT,
  ansible_shell_executable: IRRELEVANT,
  ansible_sftp_batch_mode: IRRELEVANT,
  ansible_scp_if_ssh: IRRELEVANT,
  ansible_ssh_transfer_method: IRRELEVANT,
  ansible_sftp_extra_args: IRRELEVANT,
  ansible_scp_extra_args: IRRELEVANT,
  ansible_ssh_use_tty: IRRELEVANT,
  ansible_group_priority: IRRELEVANT,
  ansible_ssh_args: ignored('racksmith does not run ssh: give the options in ansible_ssh_common_args (the ones it honours)'),
  ansible_ssh_executable: ignored('racksmith speaks SSH itself and never runs this program'),
  ansible_control_path: ignored('no connection sharing: racksmith keeps one session per host for the run'),
  ansible_control_path_dir: ignored('no connection sharing: racksmith keeps one session per host for the run'),
  ansible_host_key_checking: ignored('host keys are always checked: use --ssh-accept-new or StrictHostKeyChecking=accept-new'),
  ansible_ssh_host_key_checking: ignored('host keys are always checked: use --ssh-accept-new or StrictHostKeyChecking=accept-new'),
  ansible_ssh_private_key_passphrase: ignored('encrypted keys are read through ssh-agent only'),
  ansible_become_exe: ignored('racksmith runs sudo or su from PATH'),
  ansible_become_flags: ignored('racksmith chooses sudo/su flags itself (-n/-S, -H, -u)'),
  ansible_sudo: ignored('removed from Ansible: use ansible_become'),
  ansible_sudo_user: ignored('removed from Ansible: use ansible_become_user'),
  ansible_sudo_pass: ignored("sudo's old name for the become password, not read by racksmith: use ansible_become_password"),
  ansible_sudo_exe: ignored('removed from Ansible'),
  ansible_sudo_flags: ignored('removed from Ansible'),
  ansible_su: ignored('removed from Ansible: use ansible_become with ansible_become_method su'),
  ansible_su_user: ignored('removed from Ansible: use ansible_become_user'),
  ansible_su_pass: ignored("su's old name for the become password, not read by racksmith: use ansible_become_password"),
  ansible_network_os: ignored('racksmith reaches Linux hosts over SSH only'),
};

/** Families of variables of connection plugins racksmith does not have. */
const IGNORED_PREFIXES: ReadonlyArray<[string, string]> = [
  ['ansible_winrm_', 'racksmith reaches Linux hosts over SSH only'],
  ['ansible_psrp_', 'racksmith reaches Linux hosts over SSH only'],
  ['ansible_paramiko_', 'racksmith has its own SSH client'],
  ['ansible_docker_', 'racksmith reaches hosts over SSH or locally only'],
  ['ansible_kubectl_', 'racksmith reaches hosts over SSH or locally only'],
  ['ansible_netconf_', 'racksmith reaches Linux hosts over SSH only'],
  ['ansible_httpapi_', 'racksmith reaches Linux hosts over SSH only'],
];

export function treatmentOf(variable: string): Treatment | 'honoured' | undefined {
  if (CONNECTION_VAR_NAMES.has(variable)) return 'honoured';
  const t = ANSIBLE_CONNECTION_VARS[variable];
  if (t) return t;
  const p = IGNORED_PREFIXES.find(([prefix]) => variable.startsWith(prefix));
  return p ? ignored(p[1]) : undefined;
}

export interface IgnoredVariable {
  variable: string;
  why: string;
  /** Where the first host that has it got it from. */
  pos?: SourcePos;
}

/** The connection variables the inventory sets that racksmith does not honour: once each, in first-seen order. */
export function ignoredConnectionVars(inv: Inventory, hosts?: ReadonlySet<string>): IgnoredVariable[] {
  const out = new Map<string, IgnoredVariable>();
  for (const h of inv.hosts) {
    if (hosts && !hosts.has(h.name)) continue;
    for (const v of Object.keys(h.vars)) {
      if (out.has(v) || !v.startsWith('ansible_')) continue;
      const t = treatmentOf(v);
      if (t && t !== 'honoured' && t.kind === 'ignored') out.set(v, { variable: v, why: t.why, pos: h.varSources[v] });
    }
  }
  return [...out.values()];
}
