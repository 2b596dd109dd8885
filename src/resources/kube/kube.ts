/**
 * Cluster resources: Kubernetes objects converged with the real `kubectl` on a control-plane host
 * (over the same SSH connection as everything else).
 *
 * - probe: `kubectl diff --server-side --field-manager=racksmith --force-conflicts` of the
 *   rendered objects (a server-side dry run: nothing is written), normalised so that the same
 *   cluster state always prints the same facts (temp paths, timestamps and the bodies of
 *   would-be-created objects are dropped). Objects whose namespace does not exist yet cannot be
 *   dry-run (the API server refuses them); they are reported as creations without a server diff.
 *   A differing object is printed whole with its managedFields: it is an update only when a field
 *   racksmith applies differs (src/kube/applied-diff.ts), never for a field a controller wrote
 *   between kubectl's read and its dry run (MetalLB's cert-rotator, the Tigera operator).
 * - diff: pure, one change per object to create or update (updates carry kubectl's diff).
 * - apply: `kubectl apply --server-side --field-manager=racksmith --force-conflicts`, then the
 *   waits (CRDs Established, rollouts, ...), each a step with a timeout and a clear error.
 *
 * The rendered YAML travels inside the script (gzip + base64): the node needs no mirror and no
 * internet. `--force-conflicts`: the inventory is the source of truth for the fields racksmith
 * applies; other managers (the Tigera operator also manages its CRDs, kubeadm owns the kube-proxy
 * ConfigMap) keep every field racksmith does not declare.
 */
import { gzipSync } from 'node:zlib';
import { createTwoFilesPatch } from 'diff/lib/patch/create.js';
import { yamlLib } from '../../util/yaml-lib.ts';
import { shq } from '../../shell/quote.ts';
import { cidrEqual, cidrWithin, parseCidr, type Cidr } from '../../kube/cidr.ts';
import { diffName, displayName, kubectlRef, type KubeObject, type ObjectRef } from '../../kube/objects.ts';
import { appliedChange } from '../../kube/applied-diff.ts';
import { common, ProbeError, Refusal, type Change, type CommonOptions, type Resource, type Step } from '../../contract/resource.ts';

export const FIELD_MANAGER = 'racksmith';
const SSA = `--server-side --field-manager=${FIELD_MANAGER} --force-conflicts`;

/** How to reach the API server from the control-plane host. */
export interface KubeAccess {
  /** Path of the kubeconfig on the host, e.g. /etc/kubernetes/admin.conf. */
  kubeconfig: string;
  /** kubectl command (name in PATH or absolute path). */
  kubectl: string;
}

/** Shell that checks kubectl and the kubeconfig and defines `k` and `kw` (kubectl with that kubeconfig). */
export function kubectlPrelude(a: KubeAccess): string {
  return [
    `KUBECONFIG=${shq(a.kubeconfig)}; export KUBECONFIG`,
    'unset KUBECTL_EXTERNAL_DIFF',
    `command -v ${shq(a.kubectl)} >/dev/null 2>&1 || { echo ${shq(`racksmith: ${a.kubectl} not found on this host (set kube_kubectl)`)} >&2; exit 127; }`,
    `[ -r "$KUBECONFIG" ] || { echo "racksmith: kubeconfig $KUBECONFIG is not readable on this host (set kube_kubeconfig)" >&2; exit 126; }`,
    // k: one request may take at most a minute (a hung API server fails the step, not the run);
    // kw: watches (wait, rollout status), bounded by their own --timeout
    `k() { ${shq(a.kubectl)} --request-timeout=60s "$@"; }`,
    `kw() { ${shq(a.kubectl)} "$@"; }`,
  ].join('\n');
}

/** Shell that writes `text` to stdout; it travels gzip-compressed (the Calico CRDs are 3 MB). */
export function shGzText(text: string): string {
  const b64 = gzipSync(Buffer.from(text), { level: 9 }).toString('base64');
  return `printf '%s' ${shq(b64)} | base64 -d | gzip -dc`;
}

/** A temp dir removed on exit. */
const TMPDIR = `d=$(mktemp -d) || exit 1\ntrap 'rm -rf "$d"' EXIT`;

/** One object of a manifest: its identity and its YAML document. */
export interface ManifestDoc {
  ref: ObjectRef;
  text: string;
}

export function joinDocs(docs: ManifestDoc[]): string {
  return docs.map((d) => (d.text.endsWith('\n') ? d.text : d.text + '\n')).join('---\n');
}

export function probeFailure(what: string, code: number, stderr: string): ProbeError {
  const detail = stderr.trim().split('\n').slice(-6).join('\n');
  if (code === 127 || code === 126) return new ProbeError(detail || `${what}: kubectl or kubeconfig missing`);
  return new ProbeError(`${what}: cannot read the cluster: ${detail || `exit ${code}`}`);
}

// ---------------------------------------------------------------------------------------------
// kubeApply: a set of objects, server-side applied

export interface WebhookGate {
  /** ValidatingWebhookConfiguration whose caBundles must be set. */
  configuration: string;
  namespace: string;
  /** Service of the webhook: its EndpointSlice needs a ready endpoint. */
  service: string;
}

export interface KubeApplyOptions extends CommonOptions {
  /** Resource id is `kube:<name>`. */
  name: string;
  access: KubeAccess;
  /** The objects, in apply order. */
  docs: ManifestDoc[];
  /** Steps run after a successful apply (waits), each with its own error message. */
  waits?: Step[];
  /**
   * The objects go through an admission webhook that may not serve yet (MetalLB): the probe
   * treats "failed calling webhook" as a fact, and apply first waits until the webhook really
   * serves (caBundle set, endpoint ready, server-side dry run of these objects accepted).
   */
  webhookGate?: WebhookGate;
  /** Seconds for the webhook gate. */
  timeoutSec?: number;
  /** Seconds between polls of the webhook gate. */
  pollSec?: number;
}

export interface KubeApplyFacts {
  /** Namespaces the objects need that do not exist yet. */
  missingNamespaces: string[];
  /** kubectl diff exit code: 0 same, 1 differs (0 too when no field racksmith applies differs). */
  rc: number;
  /** Per kubectl diff file name: created, or the normalised diff of an update. */
  objects: Record<string, { create: boolean; diff: string }>;
  /** The webhook did not answer the dry run (webhookGate only). */
  webhookError?: string;
  /** `kind.group/name` of the objects that exist (read only when the webhook failed). */
  existing?: string[];
  /** The API server does not serve some kind yet (its CRD is applied by a resource this one depends on). */
  unknownKind?: string;
}

/** awk that normalises `kubectl diff` output (stable facts for the same cluster state). */
const NORMALISE_DIFF = `awk '
/^diff / { n = $NF; sub(/^.*\\//, "", n); print "@@object " n; hdr = 2; skip = 0; next }
hdr > 0 && /^(---|[+][+][+]) / { hdr--; next }
/^@@ -0,0 / { print "@@create"; skip = 1; next }
skip { next }
{ print }
'`;

const UNKNOWN_KIND =
  /no matches for kind|resource mapping not found|the server doesn't have a resource type|could not find the requested resource/i;
const WEBHOOK_ERROR =
  /failed calling webhook|no endpoints available for service|connection refused|x509:|context deadline exceeded|service unavailable/i;

/**
 * kubectl diff with the whole objects (a context longer than any object) and their managedFields,
 * for the verdict of applied-diff.ts. kubectl passes these options after the two directories: the
 * probe first checks that this host's diff takes them there.
 */
const FULL_DIFF = 'diff -N -U100000000';
const FULL_DIFF_CHECK = `printf 'x\\n' >"$d/p"; if ! diff "$d/p" "$d/p" -N -U1 >/dev/null 2>&1; then echo ${shq(
  `racksmith: this host's diff does not take options after its files, as kubectl diff passes them (diff LIVE MERGED ${FULL_DIFF.slice(5)}): install GNU diffutils`,
)} >&2; exit 4; fi`;

export function parseKubeApplyProbe(out: string, code: number, stderr: string, tolerateWebhook: boolean): KubeApplyFacts {
  if (code !== 0) throw probeFailure('kubectl', code, stderr);
  const lines = out.split('\n');
  const missingNamespaces: string[] = [];
  let rc = -1;
  let i = 0;
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (l.startsWith('missing-namespace ')) missingNamespaces.push(l.slice('missing-namespace '.length).trim());
    else if (l.startsWith('rc=')) {
      rc = Number(l.slice(3));
      i++;
      break;
    }
  }
  if (rc < 0) throw new ProbeError(`unexpected probe output: ${out.slice(0, 200)}`);
  const objects: KubeApplyFacts['objects'] = {};
  let cur: { create: boolean; diff: string[] } | undefined;
  let section: 'diff' | 'exists' | 'stderr' = 'diff';
  const existing: string[] = [];
  const errLines: string[] = [];
  const flush = (name: string | undefined) => {
    if (name && cur) objects[name] = { create: cur.create, diff: cur.diff.join('\n').replace(/\n+$/, '') };
  };
  let curName: string | undefined;
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (l === '== exists') {
      section = 'exists';
      continue;
    }
    if (l === '== stderr') {
      section = 'stderr';
      continue;
    }
    if (section === 'exists') {
      if (l.trim()) existing.push(l.trim());
      continue;
    }
    if (section === 'stderr') {
      errLines.push(l);
      continue;
    }
    if (l.startsWith('@@object ')) {
      flush(curName);
      curName = l.slice('@@object '.length);
      cur = { create: false, diff: [] };
    } else if (l === '@@create' && cur) cur.create = true;
    else if (cur) cur.diff.push(l);
  }
  flush(curName);
  const err = errLines.join('\n').trim();
  // kubectl diff: 0 same, 1 differs, >1 error (an exit 1 with no diff but an error is an error too)
  const failed = rc > 1 || (rc === 1 && Object.keys(objects).length === 0 && err);
  for (const [name, o] of Object.entries(objects)) {
    if (o.create) continue;
    const shown = appliedChange(o.diff, FIELD_MANAGER);
    if (shown === undefined) delete objects[name];
    else o.diff = shown;
  }
  // only others' fields differed: the same facts as a converged cluster (a saved plan's hash holds)
  if (!failed && rc === 1 && Object.keys(objects).length === 0) rc = 0;
  const facts: KubeApplyFacts = { missingNamespaces, rc, objects };
  if (failed) {
    if (UNKNOWN_KIND.test(err)) {
      facts.unknownKind = err
        .split('\n')
        .find((x) => UNKNOWN_KIND.test(x))!
        .trim();
      facts.objects = {};
    } else if (tolerateWebhook && WEBHOOK_ERROR.test(err)) {
      facts.webhookError = err.split('\n').filter((x) => WEBHOOK_ERROR.test(x))[0] ?? err;
      facts.existing = existing;
      facts.objects = {};
    } else {
      throw new ProbeError(`kubectl diff failed (exit ${rc}): ${err.split('\n').slice(-6).join('\n')}`);
    }
  }
  return facts;
}

/** Changes of a kubeApply from its facts (pure). */
export function kubeApplyChanges(docs: ManifestDoc[], f: KubeApplyFacts): Change[] {
  const changes: Change[] = [];
  const missing = new Set(f.missingNamespaces);
  if (f.unknownKind) {
    // Normally seen only before the CRDs this resource depends on are applied (check mode reports
    // that as a pending dependency); after them, kubectl apply says what is missing.
    return docs.map((d) => ({ summary: `create ${displayName(d.ref)} (the API server does not serve its kind yet)` }));
  }
  if (f.webhookError) {
    const existing = new Set(f.existing ?? []);
    for (const d of docs) {
      const there = existing.has(kubectlRef(d.ref).toLowerCase());
      changes.push({
        summary: there
          ? `verify ${displayName(d.ref)} once the admission webhook serves (now: ${f.webhookError})`
          : `create ${displayName(d.ref)} once the admission webhook serves`,
      });
    }
    return changes;
  }
  // in the order the objects are applied
  const seen = new Set<string>();
  const change = (what: string, o: { create: boolean; diff: string }): Change =>
    o.create ? { summary: `create ${what}` } : { summary: `update ${what}`, diff: o.diff || undefined };
  for (const d of docs) {
    const name = diffName(d.ref);
    seen.add(name);
    if (d.ref.namespace && missing.has(d.ref.namespace)) changes.push({ summary: `create ${displayName(d.ref)}` });
    else if (f.objects[name]) changes.push(change(displayName(d.ref), f.objects[name]));
  }
  for (const [name, o] of Object.entries(f.objects)) if (!seen.has(name)) changes.push(change(name, o));
  return changes;
}

/** Server-side apply of a set of objects (one manifest, or racksmith's custom resources). */
export function kubeApply(o: KubeApplyOptions): Resource<KubeApplyFacts> {
  const clusterDocs = o.docs.filter((d) => !d.ref.namespace);
  const namespaces = [...new Set(o.docs.filter((d) => d.ref.namespace).map((d) => d.ref.namespace!))];
  const all = joinDocs(o.docs);
  const timeout = o.timeoutSec ?? 300;
  const gate = o.webhookGate;

  const probe = () => {
    const lines = [kubectlPrelude(o.access), TMPDIR];
    if (clusterDocs.length) lines.push(`${shGzText(joinDocs(clusterDocs))} > "$d/c.yaml"`);
    namespaces.forEach((ns, i) => lines.push(`${shGzText(joinDocs(o.docs.filter((d) => d.ref.namespace === ns)))} > "$d/n${i}.yaml"`));
    lines.push('set --');
    if (clusterDocs.length) lines.push('set -- "$@" -f "$d/c.yaml"');
    if (namespaces.length) {
      lines.push(
        `present=$(k get namespace ${namespaces.map(shq).join(' ')} -o name --ignore-not-found 2>"$d/e") || { cat "$d/e" >&2; exit 3; }`,
      );
      namespaces.forEach((ns, i) =>
        lines.push(
          `if printf '%s\\n' "$present" | grep -qx ${shq(`namespace/${ns}`)}; then set -- "$@" -f "$d/n${i}.yaml"; else echo ${shq(`missing-namespace ${ns}`)}; fi`,
        ),
      );
    }
    lines.push(
      `if [ $# -gt 0 ]; then ${FULL_DIFF_CHECK}; (KUBECTL_EXTERNAL_DIFF=${shq(FULL_DIFF)}; export KUBECTL_EXTERNAL_DIFF; k diff ${SSA} --show-managed-fields "$@") >"$d/out" 2>"$d/err"; rc=$?; else rc=0; : >"$d/out"; : >"$d/err"; fi`,
      'echo "rc=$rc"',
      `${NORMALISE_DIFF} "$d/out"`,
    );
    if (gate) {
      // The webhook refused the dry run: say which objects exist (plain reads pass no webhook).
      lines.push(
        `if [ "$rc" -gt 1 ]; then echo '== exists'; k get ${o.docs.map((d) => shq(kubectlRef(d.ref))).join(' ')} -o name --ignore-not-found 2>/dev/null; fi`,
      );
    }
    lines.push(`echo '== stderr'`, `cat "$d/err"`, 'exit 0');
    return lines.join('\n');
  };

  return {
    ...common('kube', `kube:${o.name}`, o),
    verifiable: true,
    readsSharedState: true, // the cluster's objects
    probe,
    parse: (out) => parseKubeApplyProbe(out.stdout, out.code, out.stderr, !!gate),
    diff: (f) => kubeApplyChanges(o.docs, f),
    apply(): Step[] {
      const steps: Step[] = [];
      const write = `${kubectlPrelude(o.access)}\n${TMPDIR}\n${shGzText(all)} > "$d/all.yaml"`;
      if (gate)
        steps.push({
          name: `wait until the ${gate.configuration} webhook serves`,
          script: `${write}\n${webhookGateScript(gate, timeout, o.pollSec ?? 2)}`,
        });
      steps.push({ name: `kubectl apply ${o.name}`, script: `${write}\nk apply ${SSA} -f "$d/all.yaml"` });
      for (const w of o.waits ?? []) steps.push({ name: w.name, script: `${kubectlPrelude(o.access)}\n${w.script}` });
      return steps;
    },
  };
}

/**
 * Poll until the webhook really serves: every caBundle of the configuration set, a ready endpoint
 * behind its Service, and a server-side dry run of the objects ("$d/all.yaml") accepted. An
 * admission denial is final (bad config); anything else is retried until the timeout.
 */
export function webhookGateScript(g: WebhookGate, timeoutSec: number, pollSec: number): string {
  return `deadline=$(( $(date +%s) + ${timeoutSec} ))
last=''
while :; do
  ca=$(k get validatingwebhookconfiguration ${shq(g.configuration)} -o 'jsonpath={range .webhooks[*]}{.name}={.clientConfig.caBundle}{"\\n"}{end}' 2>/dev/null) || ca=''
  cab=no
  if [ -n "$ca" ] && ! printf '%s\\n' "$ca" | grep -q '=$'; then cab=yes; fi
  ep=$(k -n ${shq(g.namespace)} get endpointslices -l ${shq(`kubernetes.io/service-name=${g.service}`)} -o 'jsonpath={range .items[*].endpoints[*]}{.conditions.ready}{"\\n"}{end}' 2>/dev/null) || ep=''
  eps=no
  if printf '%s\\n' "$ep" | grep -qx true; then eps=yes; fi
  if [ "$cab" = yes ] && [ "$eps" = yes ]; then
    if out=$(k apply ${SSA} --dry-run=server -f "$d/all.yaml" 2>&1); then break; fi
    case "$out" in
      *'denied the request'*) printf 'the admission webhook rejected the configuration: %s\\n' "$(printf '%s\\n' "$out" | grep -v '(server dry run)$')" >&2; exit 1 ;;
    esac
    last=$(printf '%s' "$out" | tail -n 1)
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    printf '%s\\n' "webhook ${g.configuration} not serving after ${timeoutSec}s (caBundle set: $cab; ready endpoint behind ${g.namespace}/${g.service}: $eps\${last:+; last dry run: $last}); check the controller: kubectl -n ${g.namespace} logs deploy/controller" >&2
    exit 1
  fi
  sleep ${pollSec}
done`;
}

// ---------------------------------------------------------------------------------------------
// Wait steps

export function waitEstablished(crds: string[], timeoutSec: number): Step {
  return {
    name: `wait for CRDs Established (${crds.length})`,
    script: `kw wait --for=condition=Established --timeout=${timeoutSec}s ${crds.map((c) => shq(`crd/${c}`)).join(' ')} || { echo ${shq(`CRDs not Established within ${timeoutSec}s: ${crds.join(', ')}`)} >&2; exit 1; }`,
  };
}

export function waitRollout(namespace: string, what: string, timeoutSec: number): Step {
  const hint = `kubectl -n ${namespace} describe ${what}; kubectl -n ${namespace} get pods -o wide`;
  return {
    name: `wait for ${namespace}/${what} rolled out`,
    script: `kw -n ${shq(namespace)} rollout status ${shq(what)} --timeout=${timeoutSec}s || { echo ${shq(`${namespace}/${what} not rolled out within ${timeoutSec}s; look at: ${hint}`)} >&2; exit 1; }`,
  };
}

/** Calico: wait for the operator's TigeraStatus objects to appear, then to be Available. */
export function waitTigeraStatus(names: string[], timeoutSec: number): Step {
  const refs = names.map((n) => shq(`tigerastatus/${n}`)).join(' ');
  return {
    name: `wait for tigerastatus ${names.join(', ')} Available`,
    script: `deadline=$(( $(date +%s) + ${timeoutSec} ))
until k get ${refs} -o name >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then echo ${shq(`the Tigera operator created no tigerastatus ${names.join(', ')} within ${timeoutSec}s; look at: kubectl -n tigera-operator logs deploy/tigera-operator`)} >&2; exit 1; fi
  sleep 2
done
left=$(( deadline - $(date +%s) )); [ "$left" -gt 0 ] || left=1
kw wait --for=condition=Available --timeout="\${left}s" ${refs} || { k get tigerastatus >&2 || true; echo ${shq(`Calico components not Available within ${timeoutSec}s (kubectl get tigerastatus -o yaml shows why)`)} >&2; exit 1; }`,
  };
}

// ---------------------------------------------------------------------------------------------
// artifactsGuard: the run stops when a pinned artifact failed verification

export interface ArtifactsGuardOptions extends CommonOptions {
  /** Problems found while loading artifacts on the controller (empty: all verified). */
  problems: string[];
}

/**
 * Every other resource of the kube plays runs after this one: a manifest or tarball whose sha256
 * does not match its pin (or that could not be read) refuses every host before anything is
 * applied. No remote command: its probe is empty.
 */
export function artifactsGuard(o: ArtifactsGuardOptions): Resource<null> {
  return {
    ...common('kube-artifacts', 'kube-artifacts', o),
    verifiable: true,
    probe: () => ':',
    parse: () => null,
    diff() {
      if (o.problems.length) throw new Refusal(o.problems.join('; '));
      return [];
    },
    apply: () => [],
  };
}

// ---------------------------------------------------------------------------------------------
// clusterGuard: the cluster's pod network agrees with the inventory

export interface ClusterGuardOptions extends CommonOptions {
  access: KubeAccess;
  cni: 'flannel' | 'calico';
  /** The inventory's pod CIDR (kube_pod_cidr). */
  podCidr: string;
  /** Calico: the pools racksmith declares. */
  calicoPools?: Array<{ name: string; cidr: string }>;
  /** Flannel: Network and backend racksmith renders. */
  flannel?: { network: string; backend: string };
  /** kube_proxy_mode when the inventory sets it. */
  kubeProxyMode?: string;
}

export interface ClusterFacts {
  /** kubeadm-config ClusterConfiguration networking.podSubnet entries; null: no kubeadm-config. */
  podSubnets: string[] | null;
  nodes: Array<{ name: string; podCIDR: string }>;
  /** `namespace/name` of every DaemonSet. */
  daemonSets: string[];
  /** Live kube-flannel-cfg net-conf.json, if flannel is installed. */
  flannelNetConf?: string;
  /** Live Installation default ipPools, if Calico's operator is installed. */
  calicoPools?: Array<{ name?: string; cidr?: string }>;
  /** kube-proxy mode from its ConfigMap ('' = iptables); undefined: no kube-proxy ConfigMap. */
  kubeProxyMode?: string;
}

const SECTIONS = ['kubeadm', 'nodes', 'daemonsets', 'flannel', 'calico', 'kube-proxy'] as const;

export function parseClusterProbe(out: string): ClusterFacts {
  const parts: Record<string, string> = {};
  let cur: string | undefined;
  for (const line of out.split('\n')) {
    const m = /^== (\S+)$/.exec(line);
    if (m && (SECTIONS as readonly string[]).includes(m[1])) {
      cur = m[1];
      parts[cur] = '';
      continue;
    }
    if (cur) parts[cur] += line + '\n';
  }
  for (const s of SECTIONS) if (!(s in parts)) throw new ProbeError(`unexpected probe output (no ${s} section): ${out.slice(0, 200)}`);
  let podSubnets: string[] | null = null;
  const cc = parts.kubeadm.trim();
  if (cc) {
    const doc = yamlLib().parse(cc) as { networking?: { podSubnet?: string } } | null;
    const ps = doc?.networking?.podSubnet;
    podSubnets = typeof ps === 'string' && ps.trim() ? ps.split(',').map((s) => s.trim()) : [];
  }
  const nodes = parts.nodes
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const [name, podCIDR = ''] = l.split('\t');
      return { name, podCIDR: podCIDR.trim() };
    });
  const daemonSets = parts.daemonsets
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const facts: ClusterFacts = { podSubnets, nodes, daemonSets };
  if (parts.flannel.trim()) facts.flannelNetConf = parts.flannel.trim();
  if (parts.calico.trim()) {
    try {
      facts.calicoPools = JSON.parse(parts.calico.trim());
    } catch {
      facts.calicoPools = [];
    }
  }
  const kp = parts['kube-proxy'];
  if (kp.trim()) {
    const cfg = yamlLib().parse(kp) as { mode?: string } | null;
    facts.kubeProxyMode = cfg?.mode ?? '';
  }
  return facts;
}

/** Well-known DaemonSets of CNIs, to refuse installing a second one. */
const CNI_DAEMONSETS: Record<string, string> = {
  'kube-flannel/kube-flannel-ds': 'flannel',
  'kube-system/kube-flannel-ds': 'flannel',
  'calico-system/calico-node': 'calico',
  'kube-system/calico-node': 'calico',
  'kube-system/cilium': 'cilium',
  'kube-system/weave-net': 'weave',
  'kube-system/kube-router': 'kube-router',
  'kube-system/canal': 'canal',
};

/** Why the cluster and the inventory disagree about the pod network (pure; [] when they agree). */
export function clusterProblems(o: Omit<ClusterGuardOptions, 'access'>, f: ClusterFacts): string[] {
  const problems: string[] = [];
  const foreign = [...new Set(f.daemonSets.map((d) => CNI_DAEMONSETS[d]).filter((c) => c && c !== o.cni))];
  if (foreign.length) {
    problems.push(
      `another CNI runs in this cluster (${foreign.join(', ')}: DaemonSet ${f.daemonSets.filter((d) => CNI_DAEMONSETS[d] && CNI_DAEMONSETS[d] !== o.cni).join(', ')}); installing ${o.cni} beside it breaks pod networking. Remove it first (and its /etc/cni/net.d config on every node)`,
    );
  }
  const want = parseCidr(o.podCidr)!;
  const subnets = (f.podSubnets ?? []).map((s) => parseCidr(s)).filter((c): c is Cidr => !!c);
  const sameFamily = subnets.filter((c) => c.family === want.family);
  if (o.cni === 'calico') {
    for (const p of o.calicoPools ?? []) {
      const pc = parseCidr(p.cidr)!;
      const inside = sameFamily.some((s) => cidrWithin(pc, s));
      if (sameFamily.length && !inside) {
        problems.push(
          `Calico IP pool ${p.name} (${p.cidr}) is outside the cluster's pod network ${sameFamily.map((c) => c.text).join(', ')} (kube-system/kubeadm-config networking.podSubnet): the Tigera operator rejects such a pool ("IPPool ... is not within the platform's configured pod network CIDR(s)") and pod traffic would bypass kube-proxy's cluster CIDR rules. Use a pool inside the pod network`,
        );
      }
      const live = (f.calicoPools ?? []).find((x) => x.name === p.name);
      if (live?.cidr && live.cidr !== p.cidr) {
        problems.push(
          `Calico IP pool ${p.name} already exists with CIDR ${live.cidr}, not ${p.cidr}: a pool's CIDR cannot be modified (create a new pool and migrate, see Calico's "migrate pools")`,
        );
      }
    }
  }
  if (sameFamily.length && !sameFamily.some((s) => cidrEqual(s, want))) {
    problems.push(
      `kube_pod_cidr ${o.podCidr} differs from the cluster's pod CIDR ${sameFamily.map((c) => c.text).join(', ')} (kube-system/kubeadm-config networking.podSubnet); set kube_pod_cidr to the cluster's value`,
    );
  }
  if (o.cni === 'flannel') {
    const outside = f.nodes.filter((n) => n.podCIDR && !(parseCidr(n.podCIDR) && cidrWithin(parseCidr(n.podCIDR)!, want)));
    if (outside.length) {
      problems.push(
        `nodes have pod CIDRs outside kube_pod_cidr ${o.podCidr}: ${outside.map((n) => `${n.name} ${n.podCIDR}`).join(', ')}; flannel's Network must contain every node's spec.podCIDR`,
      );
    }
    if (!sameFamily.length && f.nodes.length && f.nodes.every((n) => !n.podCIDR)) {
      problems.push(
        `no node has a spec.podCIDR and kubeadm-config has no podSubnet: flannel's kube subnet manager needs them (kubeadm init --pod-network-cidr=${o.podCidr}, or kube-controller-manager --allocate-node-cidrs --cluster-cidr)`,
      );
    }
    if (f.flannelNetConf && o.flannel) {
      let live: { Network?: string; Backend?: { Type?: string } } = {};
      try {
        live = JSON.parse(f.flannelNetConf);
      } catch {
        /* unreadable: the manifest diff shows it */
      }
      const ln = live.Network ? parseCidr(live.Network) : undefined;
      if (ln && !cidrEqual(ln, parseCidr(o.flannel.network)!)) {
        problems.push(
          `flannel runs with Network ${live.Network}, the inventory says ${o.flannel.network}: changing it on a live cluster breaks pod networking (every node's subnet lease and pods would have to be recreated); not changing it`,
        );
      }
      const lb = live.Backend?.Type;
      if (lb && lb !== o.flannel.backend) {
        problems.push(
          `flannel runs with backend ${lb}, the inventory says ${o.flannel.backend}: flannel's backend must not be changed at runtime; not changing it`,
        );
      }
    }
  }
  if (o.kubeProxyMode !== undefined && f.kubeProxyMode !== undefined) {
    const live = f.kubeProxyMode || 'iptables';
    if (live !== o.kubeProxyMode)
      problems.push(
        `kube_proxy_mode is ${o.kubeProxyMode} but kube-proxy runs in ${live} mode (kube-system/kube-proxy config.conf); fix the inventory (it decides the kernel modules loaded on the nodes)`,
      );
  }
  return problems;
}

/** Reads the cluster's pod network facts and refuses when they disagree with the inventory. */
export function clusterGuard(o: ClusterGuardOptions): Resource<ClusterFacts> {
  return {
    ...common('kube-guard', 'kube:cluster-network', o),
    verifiable: true,
    readsSharedState: true, // the cluster's objects
    probe: () =>
      [
        kubectlPrelude(o.access),
        `echo '== kubeadm'`,
        `k -n kube-system get configmap kubeadm-config -o 'jsonpath={.data.ClusterConfiguration}' --ignore-not-found || exit 3`,
        `echo; echo '== nodes'`,
        `k get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.spec.podCIDR}{"\\n"}{end}' || exit 3`,
        `echo '== daemonsets'`,
        `k get daemonsets -A -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}' || exit 3`,
        `echo '== flannel'`,
        `k -n kube-flannel get configmap kube-flannel-cfg -o 'jsonpath={.data.net-conf\\.json}' --ignore-not-found 2>/dev/null`,
        `echo; echo '== calico'`,
        // the CRD may not exist yet: then there is no Installation either
        `k get installations.operator.tigera.io default -o 'jsonpath={.spec.calicoNetwork.ipPools}' --ignore-not-found 2>/dev/null`,
        `echo; echo '== kube-proxy'`,
        `k -n kube-system get configmap kube-proxy -o 'jsonpath={.data.config\\.conf}' --ignore-not-found || exit 3`,
        'echo; exit 0',
      ].join('\n'),
    parse({ stdout, code, stderr }) {
      if (code !== 0) throw probeFailure('kubectl', code, stderr);
      return parseClusterProbe(stdout);
    },
    diff(f) {
      const problems = clusterProblems(o, f);
      if (problems.length) throw new Refusal(problems.join('; '));
      return [];
    },
    apply: () => [],
  };
}

// ---------------------------------------------------------------------------------------------
// strictARP in kube-proxy's ConfigMap (MetalLB with kube-proxy in IPVS mode)

export interface StrictArpOptions extends CommonOptions {
  access: KubeAccess;
  /** metallb_allow_strict_arp: racksmith may edit kube-proxy's config and restart it. */
  allow: boolean;
  timeoutSec?: number;
}

export interface StrictArpFacts {
  exists: boolean;
  resourceVersion?: string;
  config?: string;
  mode?: string;
  strictARP?: boolean;
}

export function parseStrictArpProbe(out: string): StrictArpFacts {
  if (!out.trim()) return { exists: false };
  const cm = JSON.parse(out) as { metadata?: { resourceVersion?: string }; data?: Record<string, string> };
  const config = cm.data?.['config.conf'];
  if (config === undefined) return { exists: true, resourceVersion: cm.metadata?.resourceVersion };
  const parsed = (yamlLib().parse(config) ?? {}) as { mode?: string; ipvs?: { strictARP?: boolean } };
  return {
    exists: true,
    resourceVersion: cm.metadata?.resourceVersion,
    config,
    mode: parsed.mode ?? '',
    strictARP: parsed.ipvs?.strictARP === true,
  };
}

/** config.conf with ipvs.strictARP: true, the rest of the document kept as it is. */
export function withStrictArp(config: string): string {
  const doc = yamlLib().parseDocument(config);
  doc.setIn(['ipvs', 'strictARP'], true);
  return doc.toString({ lineWidth: 0 });
}

export function strictArpChanges(f: StrictArpFacts, allow: boolean): Change[] {
  if (!f.exists || f.config === undefined || f.mode !== 'ipvs' || f.strictARP) return [];
  if (!allow) {
    throw new Refusal(
      'kube-proxy runs in IPVS mode without ipvs.strictARP: true (kube-system/kube-proxy, config.conf): every node would answer ARP for MetalLB addresses. Set metallb_allow_strict_arp: true to let racksmith set it and restart kube-proxy, or set it yourself (kubeadm: KubeProxyConfiguration ipvs.strictARP: true)',
    );
  }
  const next = withStrictArp(f.config);
  return [
    {
      summary: 'kube-system/kube-proxy config.conf: ipvs.strictARP false → true (kube-proxy is restarted)',
      diff: createTwoFilesPatch('config.conf', 'config.conf', f.config, next, '', '', { context: 2 }).replace(/^(Index: .*\n)?=+\n/, ''),
    },
  ];
}

export function strictArp(o: StrictArpOptions): Resource<StrictArpFacts> {
  const timeout = o.timeoutSec ?? 300;
  return {
    ...common('kube', 'kube:kube-proxy-strict-arp', o),
    verifiable: true,
    readsSharedState: true, // the cluster's objects
    probe: () => `${kubectlPrelude(o.access)}\nk -n kube-system get configmap kube-proxy -o json --ignore-not-found || exit 3`,
    parse({ stdout, code, stderr }) {
      if (code !== 0) throw probeFailure('kubectl', code, stderr);
      return parseStrictArpProbe(stdout);
    },
    diff: (f) => strictArpChanges(f, o.allow),
    apply(f): Step[] {
      const cm: KubeObject = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        // resourceVersion: the write fails (409) if someone changed the ConfigMap since the probe
        metadata: { name: 'kube-proxy', namespace: 'kube-system', resourceVersion: f.resourceVersion },
        data: { 'config.conf': withStrictArp(f.config!) },
      };
      return [
        {
          name: 'set ipvs.strictARP in kube-system/kube-proxy',
          script: `${kubectlPrelude(o.access)}\n${TMPDIR}\n${shGzText(JSON.stringify(cm))} > "$d/cm.json"\nk apply ${SSA} -f "$d/cm.json"`,
        },
        {
          name: 'restart kube-proxy',
          script: `${kubectlPrelude(o.access)}\nk -n kube-system rollout restart daemonset/kube-proxy\nkw -n kube-system rollout status daemonset/kube-proxy --timeout=${timeout}s || { echo ${shq(`kube-proxy not rolled out within ${timeout}s after the strictARP change`)} >&2; exit 1; }`,
        },
      ];
    },
  };
}
