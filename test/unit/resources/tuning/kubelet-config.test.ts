// kubeletConfig: the merge of allowedUnsafeSysctls into a kubelet config's text (every other byte
// kept), and the resource's diff over file facts.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubeletConfig, mergeUnsafeSysctls } from '../../../../src/resources/tuning/kubelet-config.ts';
import { Refusal } from '../../../../src/contract/resource.ts';
import type { FileFacts } from '../../../../src/resources/core/file-common.ts';
import { InputError } from '../../../../src/util/errors.ts';

// As kubeadm writes it (Go's yaml: lists not indented under their key).
const KUBEADM = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
kind: KubeletConfiguration
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
`;

describe('mergeUnsafeSysctls', () => {
  it.each<[string, string, string[], string | undefined]>([
    ['key absent: appended at the end, Go style', KUBEADM, ['net.*'], `${KUBEADM}allowedUnsafeSysctls:\n- net.*\n`],
    ['no final newline', 'kind: KubeletConfiguration', ['net.*'], 'kind: KubeletConfiguration\nallowedUnsafeSysctls:\n- net.*\n'],
    ['empty file', '', ['net.*'], 'allowedUnsafeSysctls:\n- net.*\n'],
    [
      'block list with other entries: kept, ours after them, same indentation',
      'a: 1\nallowedUnsafeSysctls:\n  - kernel.msg*\nz: 2\n',
      ['net.*'],
      'a: 1\nallowedUnsafeSysctls:\n  - kernel.msg*\n  - net.*\nz: 2\n',
    ],
    [
      'block list, Go style, comment after it',
      'allowedUnsafeSysctls:\n- kernel.shm*\n# keep\nz: 2\n',
      ['net.*', 'kernel.msg*'],
      'allowedUnsafeSysctls:\n- kernel.shm*\n- net.*\n- kernel.msg*\n# keep\nz: 2\n',
    ],
    ['empty flow list', 'allowedUnsafeSysctls: []\nz: 2\n', ['net.*'], 'allowedUnsafeSysctls: [net.*]\nz: 2\n'],
    ['flow list', 'allowedUnsafeSysctls: [kernel.shm*] # x\n', ['net.*'], 'allowedUnsafeSysctls: [kernel.shm*, net.*] # x\n'],
    ['null value', 'allowedUnsafeSysctls:\nz: 2\n', ['net.*'], 'allowedUnsafeSysctls: [net.*]\nz: 2\n'],
    ['~', 'allowedUnsafeSysctls: ~\nz: 2\n', ['net.*'], 'allowedUnsafeSysctls: [net.*]\nz: 2\n'],
    ['already allowed: nothing to write', 'allowedUnsafeSysctls:\n- net.*\n', ['net.*'], undefined],
    ['wanted twice', 'z: 1\n', ['net.*', 'net.*'], 'z: 1\nallowedUnsafeSysctls:\n- net.*\n'],
  ])('%s', (_, text, wanted, expected) => {
    const edit = mergeUnsafeSysctls(text, wanted);
    expect(edit.text).toBe(expected);
    if (edit.text) expect(parse(edit.text).allowedUnsafeSysctls).toEqual([...edit.before, ...edit.added]);
  });

  it("keeps every other key's bytes: the text before the appended key is the old file", () => {
    const edit = mergeUnsafeSysctls(KUBEADM, ['net.*']);
    expect(edit.text!.startsWith(KUBEADM)).toBe(true);
    expect(edit).toMatchObject({ before: [], added: ['net.*'] });
  });

  it.each<[string, string, RegExp]>([
    ['invalid YAML', 'a: [1\n', /not valid YAML/],
    ['two documents', 'a: 1\n---\nb: 2\n', /2 YAML documents/],
    ['a list at the top', '- a\n', /not a YAML mapping/],
    ['a flow mapping at the top', '{a: 1}\n', /not a YAML mapping/],
    ['another kind', 'kind: KubeProxyConfiguration\n', /kind is KubeProxyConfiguration/],
    ['the key not a list', 'allowedUnsafeSysctls: net.*\n', /not a list of sysctl names/],
    ['a list of maps', 'allowedUnsafeSysctls:\n- {a: 1}\n', /not a list of sysctl names/],
  ])('refuses %s', (_, text, msg) => {
    expect(() => mergeUnsafeSysctls(text, ['net.*'])).toThrow(Refusal);
    expect(() => mergeUnsafeSysctls(text, ['net.*'])).toThrow(msg);
  });
});

const facts = (content: string): FileFacts => ({
  type: 'file',
  mode: '644',
  uid: 0,
  user: 'root',
  gid: 0,
  group: 'root',
  size: content.length,
  content: Buffer.from(content),
  sha256: createHash('sha256').update(content).digest('hex'),
});

describe('kubeletConfig diff', () => {
  const r = kubeletConfig({ allowedUnsafeSysctls: ['net.*'] });

  it('converged: no change', () => {
    expect(r.diff(facts(`${KUBEADM}allowedUnsafeSysctls:\n- net.*\n`))).toEqual([]);
  });

  it('missing key: one update with before → after and a diff that only adds lines', () => {
    const [c, ...rest] = r.diff(facts(KUBEADM));
    expect(rest).toEqual([]);
    expect(c.summary).toBe('allowedUnsafeSysctls: [] → [net.*]');
    expect(c.diff).toMatch(/\+allowedUnsafeSysctls:\n\+- net\.\*\n$/);
    expect(c.diff!.split('\n').filter((l) => l.startsWith('-') && !l.startsWith('---'))).toEqual([]);
  });

  it.each<[string, FileFacts, RegExp]>([
    ['absent', { type: 'absent' }, /does not exist: is the kubelet installed/],
    ['a directory', { type: 'dir' }, /not a regular file/],
    ['too large', { ...facts(''), content: undefined, size: 2 << 20 }, /too large/],
  ])('refuses a config that is %s', (_, f, msg) => {
    expect(() => r.diff(f)).toThrow(msg);
  });

  it.each<[string, FileFacts, string]>([
    [
      'absent',
      { type: 'absent' },
      "/var/lib/kubelet/config.yaml does not exist: is the kubelet installed here (kubeadm writes it)? if the kubelet's config is elsewhere, set kubelet_config_path (Kubespray: /etc/kubernetes/kubelet-config.yaml)",
    ],
    [
      'a directory',
      { type: 'dir' },
      "/var/lib/kubelet/config.yaml is not a regular file; if the kubelet's config is elsewhere, set kubelet_config_path",
    ],
    [
      'another kind of file',
      facts('apiVersion: v1\nkind: Pod\n'),
      "kind is Pod, not KubeletConfiguration; if the kubelet's config is elsewhere, set kubelet_config_path",
    ],
    ['not YAML', facts('a: [\n'), 'not valid YAML'],
  ])("a config that is %s names the setting that points elsewhere (the playbook's variable)", (_, f, msg) => {
    const named = kubeletConfig({ allowedUnsafeSysctls: ['net.*'], pathSetting: 'kubelet_config_path' });
    expect(() => named.diff(f)).toThrow(msg);
    if (!msg.startsWith('not valid')) return;
    expect(() => named.diff(f)).toThrow(/set kubelet_config_path/);
  });
  it('a config whose allowedUnsafeSysctls is wrong is the right file: no hint', () => {
    const named = kubeletConfig({ allowedUnsafeSysctls: ['net.*'], pathSetting: 'kubelet_config_path' });
    expect(() => named.diff(facts(`${KUBEADM}allowedUnsafeSysctls: 5\n`))).toThrow(/^(?!.*kubelet_config_path).*is not a list/);
  });

  it.each([['net *'], ['*'], ['net..x'], ['']])('refuses the pattern %j at build time', (p) => {
    expect(() => kubeletConfig({ allowedUnsafeSysctls: [p] })).toThrow(InputError);
  });

  it('id and path', () => {
    expect(kubeletConfig({ path: '/etc/kubernetes/kubelet-config.yaml', allowedUnsafeSysctls: ['net.*'] }).id).toBe(
      'kubelet-config:/etc/kubernetes/kubelet-config.yaml',
    );
    expect(() => kubeletConfig({ path: 'rel.yaml', allowedUnsafeSysctls: ['net.*'] })).toThrow(InputError);
  });
});
