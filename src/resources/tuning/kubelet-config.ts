import { probed } from '../../contract/probe.ts';
/**
 * kubeletConfig: keys merged into the kubelet's own config file (kubeadm's
 * /var/lib/kubelet/config.yaml, Kubespray's /etc/kubernetes/kubelet-config.yaml) without
 * touching anything else in it: the edit is spliced into the file's text, so every other byte
 * stays as the installer wrote it (a re-serialised YAML would re-indent sequences and requote).
 * Today: `allowedUnsafeSysctls` (AIStore pods use hostPort, not hostNetwork, so the host's net.*
 * sysctls reach them only when the kubelet allows them: ais-k8s config_kubelet.yml).
 */
import { common, Refusal, type Change, type CommonOptions, type Resource } from '../../contract/resource.ts';
import { InputError } from '../../util/errors.ts';
import { yamlLib } from '../../util/yaml-lib.ts';
import { checkAbsolutePath, contentText, fileFacts, type FileFacts } from '../core/file-common.ts';
import { managedFile, type FileWrite } from '../core/managed-file.ts';

export const KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';

export interface KubeletConfigOptions extends CommonOptions {
  /** The kubelet's config file (default kubeadm's /var/lib/kubelet/config.yaml). */
  path?: string;
  /** Sysctl names or prefixes ending in `*` that pods may set (`net.*`); kept in addition to those already allowed. */
  allowedUnsafeSysctls: string[];
  /** How the operator sets `path`, named when the file is not there or not a kubelet config (node.ts: kubelet_config_path). */
  pathSetting?: string;
}

/** A sysctl name or a prefix pattern as the kubelet accepts them: `net.*`, `kernel.msg*`, `net.core.somaxconn`. */
const SYSCTL_PATTERN = /^[a-z0-9_]+(\.[A-Za-z0-9_-]+)*(\.\*|\*)?$/;
const KEY = 'allowedUnsafeSysctls';

/** The result of merging the wanted entries into a kubelet config's text. */
export interface KubeletEdit {
  /** The entries allowed before (empty when the key is absent). */
  before: string[];
  /** The entries to add. */
  added: string[];
  /** The new text: the old one with only the key's value edited (undefined when nothing is added). */
  text?: string;
}

/**
 * Merge `wanted` into the `allowedUnsafeSysctls` list of a kubelet config's text. Pure; throws
 * Refusal for a file it cannot edit safely (not a single YAML mapping, not a KubeletConfiguration,
 * the key not a list).
 */
export function mergeUnsafeSysctls(text: string, wanted: readonly string[], path = KUBELET_CONFIG): KubeletEdit {
  const Y = yamlLib();
  const docs = Y.parseAllDocuments(text);
  if (!Array.isArray(docs)) throw new Refusal(`${path}: not YAML`);
  if (docs.length > 1) throw new Refusal(`${path}: holds ${docs.length} YAML documents; a kubelet config is one`);
  const doc = docs[0];
  if (doc?.errors.length) throw new Refusal(`${path}: not valid YAML: ${doc.errors[0].message.split('\n')[0]}`);
  const root = doc?.contents ?? null;
  if (root !== null && !(Y.isMap(root) && !root.flow))
    throw new Refusal(`${path}: not a YAML mapping of keys (a block mapping, as kubeadm writes it)`);
  const kind: unknown = root?.toJSON()?.kind;
  if (kind !== undefined && kind !== 'KubeletConfiguration')
    throw new Refusal(`${path}: kind is ${String(kind)}, not KubeletConfiguration`);

  const pair = root?.items.find((p) => Y.isScalar(p.key) && p.key.value === KEY);
  const value = pair?.value ?? null;
  let before: string[] = [];
  if (value !== null && !(Y.isScalar(value) && value.value === null)) {
    if (!Y.isSeq(value) || !value.items.every((i) => Y.isScalar(i) && typeof i.value === 'string'))
      throw new Refusal(`${path}: ${KEY} is not a list of sysctl names`);
    before = value.items.map((i) => String((i as { value: unknown }).value));
  }
  const added = [...new Set(wanted)].filter((w) => !before.includes(w));
  if (!added.length) return { before, added };

  const item = (s: string) => Y.stringify(s).trimEnd();
  let text2: string;
  if (!pair) {
    // A new top-level key at the end, in the style kubeadm (Go's yaml) writes lists.
    const base = text === '' || text.endsWith('\n') ? text : `${text}\n`;
    text2 = `${base}${KEY}:\n${added.map((a) => `- ${item(a)}\n`).join('')}`;
  } else if (Y.isSeq(value) && !value.flow && value.items.length) {
    // After the last item, indented like the first.
    const first = value.range![0];
    const indent = text.slice(text.lastIndexOf('\n', first - 1) + 1, first);
    const end = (value.items.at(-1) as { range: [number, number, number] }).range[1];
    text2 = text.slice(0, end) + added.map((a) => `\n${indent}- ${item(a)}`).join('') + text.slice(end);
  } else {
    // null, `[]` or a flow list: the value becomes a flow list of the old entries and the new.
    if (!value?.range) throw new Refusal(`${path}: cannot locate the value of ${KEY} in the file`);
    const [from, to] = value.range;
    const flow = `[${[...before, ...added].map(item).join(', ')}]`;
    text2 = text.slice(0, from) + (from === to && text[from - 1] === ':' ? ' ' : '') + flow + text.slice(to);
  }
  checkOnlyKeyChanged(text, text2, [...before, ...added], path);
  return { before, added, text: text2 };
}

/** The edit must leave every other key as it was and the key holding exactly `want`: else it is a bug, never written. */
function checkOnlyKeyChanged(oldText: string, newText: string, want: string[], path: string): void {
  const Y = yamlLib();
  const a = (Y.parse(oldText) ?? {}) as Record<string, unknown>;
  const b = (Y.parse(newText) ?? {}) as Record<string, unknown>;
  const rest = (o: Record<string, unknown>) => JSON.stringify(Object.entries(o).filter(([k]) => k !== KEY));
  if (rest(a) !== rest(b) || JSON.stringify(b[KEY]) !== JSON.stringify(want))
    throw new Error(`${path}: the edit of ${KEY} would change other keys (not written)`);
}

/**
 * The kubelet's config file with `allowedUnsafeSysctls` holding at least the wanted entries. The
 * file must exist (the kubelet's installer writes it): racksmith never creates a kubelet config.
 * The kubelet reads it at start: notify its restart handler.
 */
export function kubeletConfig(o: KubeletConfigOptions): Resource<FileFacts, FileWrite> {
  const path = checkAbsolutePath(o.path ?? KUBELET_CONFIG, 'kubelet config path');
  if (!o.allowedUnsafeSysctls.length) throw new InputError(`kubelet config ${path}: allowedUnsafeSysctls is empty`);
  for (const s of o.allowedUnsafeSysctls)
    if (!SYSCTL_PATTERN.test(s))
      throw new InputError(`kubelet config ${path}: invalid sysctl pattern ${JSON.stringify(s)} (e.g. net.*, net.core.somaxconn)`);
  const mf = managedFile({ path });
  return {
    ...common('kubelet-config', `kubelet-config:${path}`, o),
    verifiable: true,
    files: [mf],
    ...probed(
      () => ({ file: mf.probe() }),
      ({ file }) => fileFacts(file),
    ),
    diff(f): Change<FileWrite>[] {
      // the file racksmith looked at may not be the one this kubelet reads: say how to name that one
      const elsewhere = `; if the kubelet's config is elsewhere, set ${o.pathSetting ?? 'its path'} (Kubespray: /etc/kubernetes/kubelet-config.yaml)`;
      if (f.type === 'absent')
        throw new Refusal(`${path} does not exist: is the kubelet installed here (kubeadm writes it)?${elsewhere.slice(1)}`);
      if (f.type !== 'file') throw new Refusal(`${path} is not a regular file${elsewhere}`);
      if (!f.content) throw new Refusal(`${path} is too large to edit (over 1 MiB)`);
      let edit: KubeletEdit;
      try {
        edit = mergeUnsafeSysctls(contentText(f), o.allowedUnsafeSysctls, path);
      } catch (e) {
        // not a kubelet config at all (not YAML, another kind): perhaps the wrong file
        if (e instanceof Refusal && !e.message.includes(KEY)) throw new Refusal(`${e.message}${elsewhere}`);
        throw e;
      }
      if (!edit.text) return [];
      return mf.changes(f, edit.text, { update: `${KEY}: [${edit.before.join(', ')}] → [${[...edit.before, ...edit.added].join(', ')}]` });
    },
    apply: (_, changes) => mf.steps(changes),
  };
}
