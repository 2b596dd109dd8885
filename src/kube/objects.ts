/** Kubernetes objects in multi-document YAML manifests: split, identify, parse, print. */
import { yamlLib } from '../util/yaml-lib.ts';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  /** Set for namespaced objects (upstream manifests always spell it). */
  namespace?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** Split a multi-document YAML text at `---` lines. Empty and comment-only documents are dropped. */
export function splitDocuments(text: string): string[] {
  const docs: string[] = [];
  let cur: string[] = [];
  const flush = () => {
    const t = cur.join('\n');
    if (t.split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('#'))) docs.push(t + '\n');
    cur = [];
  };
  for (const line of text.split('\n')) {
    if (/^---(\s.*)?$/.test(line)) flush();
    else if (/^\.\.\.\s*$/.test(line)) flush();
    else cur.push(line);
  }
  flush();
  return docs;
}

const unquote = (v: string) => {
  const s = v.replace(/\s+#.*$/, '').trim();
  if ((s.startsWith('"') && s.endsWith('"')) || (s.startsWith("'") && s.endsWith("'"))) return s.slice(1, -1);
  return s;
};

/**
 * Identify one document without parsing it (the Calico CRD manifest is 3 MB): top-level
 * `apiVersion:`/`kind:` and `name:`/`namespace:` one level under `metadata:`. Falls back to a full
 * parse when the document is written in another style.
 */
export function identify(doc: string): ObjectRef {
  let apiVersion: string | undefined;
  let kind: string | undefined;
  let name: string | undefined;
  let namespace: string | undefined;
  let inMeta = false;
  let metaIndent = -1;
  for (const line of doc.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const indent = line.length - line.trimStart().length;
    if (indent === 0) {
      inMeta = false;
      const m = /^([A-Za-z]+):(?:\s+(.*))?$/.exec(line);
      if (!m) continue;
      if (m[1] === 'apiVersion' && m[2]) apiVersion = unquote(m[2]);
      else if (m[1] === 'kind' && m[2]) kind = unquote(m[2]);
      else if (m[1] === 'metadata') inMeta = !m[2];
      continue;
    }
    if (!inMeta) continue;
    if (metaIndent < 0) metaIndent = indent;
    if (indent !== metaIndent) continue;
    const m = /^\s+(name|namespace):\s+(.+)$/.exec(line);
    if (m && m[1] === 'name') name = unquote(m[2]);
    else if (m && m[1] === 'namespace') namespace = unquote(m[2]);
  }
  if (apiVersion && kind && name) return { apiVersion, kind, name, ...(namespace ? { namespace } : {}) };
  const o = yamlLib().parse(doc) as KubeObject | null;
  if (!o || typeof o !== 'object' || !o.apiVersion || !o.kind || !o.metadata?.name) {
    throw new Error(`a manifest document has no apiVersion/kind/metadata.name: ${doc.slice(0, 120)}`);
  }
  return refOf(o);
}

export function refOf(o: KubeObject): ObjectRef {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    name: o.metadata.name,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
  };
}

/** Parse every object of a manifest. */
export function parseObjects(text: string): KubeObject[] {
  return splitDocuments(text).map((d) => {
    const o = yamlLib().parse(d) as KubeObject;
    if (!o || typeof o !== 'object' || !o.kind || !o.metadata?.name)
      throw new Error(`a manifest document has no kind/metadata.name: ${d.slice(0, 120)}`);
    return o;
  });
}

/** Print objects as one multi-document YAML. */
export function printObjects(objs: KubeObject[]): string {
  return objs.map((o) => yamlLib().stringify(o, { lineWidth: 0 })).join('---\n');
}

/** The file name `kubectl diff` gives an object: `<group>.<version>.<Kind>.<namespace>.<name>`. */
export function diffName(r: ObjectRef): string {
  const slash = r.apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : r.apiVersion.slice(0, slash);
  const version = slash < 0 ? r.apiVersion : r.apiVersion.slice(slash + 1);
  return `${group ? group + '.' : ''}${version}.${r.kind}.${r.namespace ?? ''}.${r.name}`;
}

/** How an object is named to the user: `DaemonSet kube-flannel/kube-flannel-ds`. */
export function displayName(r: ObjectRef): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

/** The `kind/name` argument kubectl takes, fully qualified by group (`customresourcedefinition.apiextensions.k8s.io/x`). */
export function kubectlRef(r: ObjectRef): string {
  const slash = r.apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : r.apiVersion.slice(0, slash);
  return `${r.kind.toLowerCase()}${group ? '.' + group : ''}/${r.name}`;
}
