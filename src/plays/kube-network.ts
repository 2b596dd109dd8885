/**
 * The Kubernetes network playbook's resources: host prerequisites on every node, and the cluster
 * objects (CNI, MetalLB) on the first control-plane host. See playbooks/kube-network.ts.
 */
import type { HostContext } from '../contract/playbook.ts';
import { CNI_INSTALLED_PLUGINS, cniConfGuard, cniPlugins, nmUnmanaged, type CniTarball } from '../resources/kube/cni.ts';
import { directory } from '../resources/core/directory.ts';
import { kmod } from '../resources/tuning/kmod.ts';
import {
  artifactsGuard,
  clusterGuard,
  kubeApply,
  strictArp,
  waitEstablished,
  waitRollout,
  waitTigeraStatus,
  type KubeAccess,
  type ManifestDoc,
} from '../resources/kube/kube.ts';
import { sysctl } from '../resources/tuning/sysctl.ts';
import { sysctlEffect } from '../resources/tuning/sysctl-effect.ts';
import { sysctlFile } from '../profiles/sysctl-profiles.ts';
import { Refusal, type Resource } from '../contract/resource.ts';
import { InputError, InputErrors } from '../util/errors.ts';
import { loadArtifact, type LoadedArtifact } from '../kube/artifacts.ts';
import { identify, parseObjects, printObjects, refOf, splitDocuments, type KubeObject } from '../kube/objects.ts';
import type { Component } from '../kube/pins.ts';
import {
  METALLB_NAMESPACE,
  renderCalicoOperator,
  renderCalicoResources,
  renderFlannel,
  renderMetallbConfig,
  renderMetallbNative,
} from '../kube/render.ts';
import { crdSchemas, schemaKey, validateCustomResource } from '../kube/schema.ts';
import { kubeSettings, type CniTarballSpec, type KubeSettings } from './kube-settings.ts';

export const MODULES_FILE = '/etc/modules-load.d/racksmith-k8s.conf';
export const SYSCTL_FILE = sysctlFile('k8s');

interface Loaded {
  problems: string[];
  /** Verified manifest text by `<component>/<file>`. */
  text: Map<string, string>;
  cniTarball?: LoadedArtifact;
}

function loadAll(s: KubeSettings): Loaded {
  const problems: string[] = [];
  const text = new Map<string, string>();
  for (const m of s.manifests) {
    const a = loadArtifact({ label: `${m.pin.component} ${m.pin.version} ${m.pin.file}`, sha256: m.pin.sha256, sources: m.sources });
    if (a.problem) problems.push(a.problem);
    else text.set(`${m.pin.component}/${m.pin.file}`, a.bytes!.toString('utf8'));
  }
  // One tarball named by the inventory: loaded (and refused) before anything, as the manifests.
  // The pinned ones of each architecture: loaded for the first host that takes it (cniTarballOf).
  let cniTarball: LoadedArtifact | undefined;
  const [only, ...more] = s.cniPlugins.tarballs;
  if (only && !more.length && only.source.fetch === 'controller') {
    cniTarball = cniArtifact(s.cniPlugins.version, only);
    if (cniTarball.problem) problems.push(cniTarball.problem);
  }
  return { problems, text, cniTarball };
}

const cniArtifact = (version: string, t: CniTarballSpec): LoadedArtifact =>
  loadArtifact({
    label: `CNI plugins ${version} (${t.arch})`,
    sha256: t.sha256,
    sources: t.source.fetch === 'controller' ? [t.source.src] : [],
  });

/** A tarball's source for cniPlugins: pushed by the controller (loaded when a host of its architecture asks), or fetched by the host. */
function cniTarballOf(version: string, t: CniTarballSpec): CniTarball {
  const src = t.source;
  if (src.fetch === 'host')
    return {
      arch: t.arch,
      sha256: t.sha256,
      source: src.kind === 'url' ? { kind: 'url', url: src.url } : { kind: 'file', path: src.path },
    };
  return {
    arch: t.arch,
    sha256: t.sha256,
    source: () => {
      const a = cniArtifact(version, t); // memoised per process: once per run, whatever the hosts
      if (!a.bytes) throw new Refusal(a.problem ?? `CNI plugins ${version} (${t.arch}): not loaded`);
      return { kind: 'push', bytes: a.bytes, origin: `${a.source} via the controller` };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// host level, every node

/** Kernel modules, sysctls, CNI directories and plugins, stale-config check, NetworkManager (Calico). */
export function kubeNodeResources(host: HostContext): Resource[] {
  const s = kubeSettings(host);
  const loaded = loadAll(s);
  const guard = artifactsGuard({ problems: loaded.problems, tags: ['always'] });
  const after = [guard.id];
  const modules = kmod({ modules: s.modules, file: MODULES_FILE, after, tags: ['kube-kernel'] });
  const values: Record<string, number> = {
    'net.ipv4.ip_forward': 1,
    'net.bridge.bridge-nf-call-iptables': 1,
    'net.bridge.bridge-nf-call-ip6tables': 1,
  };
  if (s.ipv6) values['net.ipv6.conf.all.forwarding'] = 1;
  // br_netfilter creates the net.bridge keys: their facts depend on the module being loaded
  const sysctls = sysctl({ file: SYSCTL_FILE, profile: 'kubernetes', values, dependsOn: [modules.id], after, tags: ['kube-kernel'] });
  const confDir = directory({ path: '/etc/cni/net.d', mode: '0755', after, tags: ['cni'] });
  const binDir = directory({ path: '/opt/cni/bin', mode: '0755', after, tags: ['cni'] });
  // checked by its effect at boot; racksmith's earlier name of the drop-in removed
  const effect = sysctlEffect({
    name: 'kubernetes',
    managed: [{ file: SYSCTL_FILE, values }],
    retire: ['/etc/sysctl.d/90-racksmith-k8s.conf'],
    // the old name goes only after the drop-in that replaces it is written (skipped if that failed)
    after: [...after, sysctls.id],
    tags: ['kube-kernel'],
  });
  const out: Resource[] = [guard, modules, sysctls, effect, confDir, binDir];
  // a single tarball that failed to load is the guard's problem: no plugins resource then
  if (!loaded.cniTarball?.problem) {
    out.push(
      cniPlugins({
        version: s.cniPlugins.version,
        tarballs: s.cniPlugins.tarballs.map((t) => cniTarballOf(s.cniPlugins.version, t)),
        required: s.cniPlugins.required,
        sharedWithCni: CNI_INSTALLED_PLUGINS[s.cni].length ? { cni: s.cni, plugins: CNI_INSTALLED_PLUGINS[s.cni] } : undefined,
        after: [guard.id, binDir.id],
        tags: ['cni'],
      }),
    );
  }
  out.push(cniConfGuard({ cni: s.cni, removeStale: s.removeStaleConf, after: [guard.id, confDir.id], tags: ['cni'] }));
  if (s.cni === 'calico') out.push(nmUnmanaged({ after, tags: ['cni', 'calico'] }));
  return out;
}

// ---------------------------------------------------------------------------------------------
// cluster level, first control-plane host

const docsOf = (objs: KubeObject[]): ManifestDoc[] => objs.map((o) => ({ ref: refOf(o), text: printObjects([o]) }));

/** The manifest as upstream ships it, split into documents (no YAML parse: the Calico CRDs are 3 MB). */
const verbatimDocs = (text: string): ManifestDoc[] => splitDocuments(text).map((d) => ({ ref: identify(d), text: d }));

/** CRD schemas of the named CRDs in a manifest (only those documents are parsed). */
function schemasFrom(text: string, crdNames: string[]): Map<string, Record<string, unknown>> {
  const docs = splitDocuments(text).filter((d) => {
    const r = identify(d);
    return r.kind === 'CustomResourceDefinition' && crdNames.includes(r.name);
  });
  return crdSchemas(parseObjects(docs.join('---\n')));
}

const schemaMemo = new Map<string, Map<string, Record<string, unknown>>>();
function schemasMemo(key: string, text: string, crdNames: string[]): Map<string, Record<string, unknown>> {
  const k = `${key}\n${crdNames.join(',')}\n${text.length}`;
  let hit = schemaMemo.get(k);
  if (!hit) {
    hit = schemasFrom(text, crdNames);
    schemaMemo.set(k, hit);
  }
  return hit;
}

/** Validate rendered custom resources against their CRDs; problems become input errors at `varFor(obj, path)`. */
function validateRendered(
  host: HostContext,
  objs: KubeObject[],
  schemas: Map<string, Record<string, unknown>>,
  what: string,
  varFor: (o: KubeObject, path: string) => string,
): void {
  const errors: InputError[] = [];
  for (const o of objs) {
    const schema = schemas.get(schemaKey(o));
    if (!schema) {
      errors.push(host.error(varFor(o, ''), `${o.kind} ${o.metadata.name}: ${what} has no CRD for ${o.apiVersion} ${o.kind}`));
      continue;
    }
    for (const p of validateCustomResource(o, schema)) {
      errors.push(
        host.error(
          varFor(o, p.path),
          `${o.kind} ${o.metadata.name} rendered from the inventory does not match the ${what} CRD schema: ${p.path} ${p.message}`,
        ),
      );
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length) throw new InputErrors(errors);
}

const CALICO_CRDS = [
  'installations.operator.tigera.io',
  'apiservers.operator.tigera.io',
  'goldmanes.operator.tigera.io',
  'whiskers.operator.tigera.io',
];
const METALLB_CRDS = ['ipaddresspools.metallb.io', 'l2advertisements.metallb.io', 'bgppeers.metallb.io', 'bgpadvertisements.metallb.io'];

function calicoVar(o: KubeObject, path: string): string {
  if (o.kind !== 'Installation') return 'kube_cni';
  if (path.startsWith('spec.calicoNetwork.ipPools')) return 'calico_ip_pools';
  if (path.startsWith('spec.calicoNetwork.nodeAddressAutodetectionV4')) return 'calico_node_address_autodetection';
  if (path.startsWith('spec.calicoNetwork.linuxDataplane')) return 'calico_linux_dataplane';
  if (path.startsWith('spec.calicoNetwork.mtu')) return 'calico_mtu';
  if (path.startsWith('spec.registry')) return 'kube_image_registry';
  if (path.startsWith('spec.imagePullSecrets')) return 'calico_image_pull_secrets';
  return 'kube_cni';
}

function metallbVar(o: KubeObject, path: string): string {
  if (o.kind === 'BGPPeer') return 'metallb_bgp_peers';
  if (o.kind === 'L2Advertisement' && path.startsWith('spec.interfaces')) return 'metallb_l2_interfaces';
  return 'metallb_pools';
}

/** Rendered, validated documents per cluster resource (memoised: every host of a play shares them). */
interface ClusterDocs {
  flannel?: ManifestDoc[];
  calicoCrds?: ManifestDoc[];
  calicoOperator?: ManifestDoc[];
  calicoResources?: ManifestDoc[];
  metallb?: ManifestDoc[];
  metallbConfig?: ManifestDoc[];
}

function renderAll(host: HostContext, s: KubeSettings, loaded: Loaded): ClusterDocs {
  const t = (c: Component, f: string) => loaded.text.get(`${c}/${f}`)!;
  const out: ClusterDocs = {};
  if (s.cni === 'flannel') {
    out.flannel = docsOf(
      renderFlannel(parseObjects(t('flannel', 'kube-flannel.yml')), { network: s.podCidr, ...s.flannel, registry: s.registry }),
    );
  } else {
    const crds = t('calico', 'operator-crds.yaml');
    out.calicoCrds = verbatimDocs(crds);
    out.calicoOperator = docsOf(renderCalicoOperator(parseObjects(t('calico', 'tigera-operator.yaml')), s.registry));
    const cr = renderCalicoResources({ ...s.calico, registry: s.registry });
    validateRendered(host, cr, schemasMemo(`calico ${s.versions.calico}`, crds, CALICO_CRDS), `calico ${s.versions.calico}`, calicoVar);
    out.calicoResources = docsOf(cr);
  }
  if (s.metallb.enabled) {
    const native = t('metallb', 'metallb-native.yaml');
    out.metallb = docsOf(renderMetallbNative(parseObjects(native), { registry: s.registry, ignoreExcludeLB: s.metallb.ignoreExcludeLB }));
    const cfg = renderMetallbConfig({ ...s.metallb, registry: s.registry });
    validateRendered(
      host,
      cfg,
      schemasMemo(`metallb ${s.versions.metallb}`, native, METALLB_CRDS),
      `metallb ${s.versions.metallb}`,
      metallbVar,
    );
    out.metallbConfig = docsOf(cfg);
  }
  return out;
}

const renderMemo = new Map<string, ClusterDocs>();

/** CNI (Flannel or Calico operator + Installation) and MetalLB, applied with kubectl on this host. */
export function kubeClusterResources(host: HostContext): Resource[] {
  const s = kubeSettings(host);
  const loaded = loadAll(s);
  const guard = artifactsGuard({ problems: loaded.problems, tags: ['always'] });
  if (loaded.problems.length) return [guard]; // refused before anything: nothing to render
  const key = JSON.stringify(s);
  let docs = renderMemo.get(key);
  if (!docs) {
    docs = renderAll(host, s, loaded);
    renderMemo.set(key, docs);
  }
  const access: KubeAccess = { kubeconfig: s.kubeconfig, kubectl: s.kubectl };
  const T = s.timeoutSec;
  const cg = clusterGuard({
    access,
    cni: s.cni,
    podCidr: s.podCidr,
    calicoPools: s.cni === 'calico' ? s.calico.pools : undefined,
    flannel: s.cni === 'flannel' ? { network: s.podCidr, backend: s.flannel.backend } : undefined,
    kubeProxyMode: s.proxyMode,
    after: [guard.id],
    tags: ['always'],
  });
  const base = [guard.id, cg.id];
  const out: Resource[] = [guard, cg];
  let cniLast: string;
  if (s.cni === 'flannel') {
    const f = kubeApply({
      name: 'flannel',
      access,
      docs: docs.flannel!,
      waits: [waitRollout('kube-flannel', 'daemonset/kube-flannel-ds', T)],
      after: base,
      tags: ['cni', 'flannel'],
    });
    out.push(f);
    cniLast = f.id;
  } else {
    const crdNames = [
      'installations.operator.tigera.io',
      'apiservers.operator.tigera.io',
      'tigerastatuses.operator.tigera.io',
      'ippools.crd.projectcalico.org',
    ];
    if (s.calico.goldmane) crdNames.push('goldmanes.operator.tigera.io');
    if (s.calico.whisker) crdNames.push('whiskers.operator.tigera.io');
    const crds = kubeApply({
      name: 'calico-crds',
      access,
      docs: docs.calicoCrds!,
      waits: [waitEstablished(crdNames, T)],
      after: base,
      tags: ['cni', 'calico'],
    });
    const op = kubeApply({
      name: 'calico-operator',
      access,
      docs: docs.calicoOperator!,
      waits: [waitRollout('tigera-operator', 'deployment/tigera-operator', T)],
      after: [...base, crds.id],
      tags: ['cni', 'calico'],
    });
    const statuses = ['calico', 'ippools', ...(s.calico.apiServer ? ['apiserver'] : [])];
    const inst = kubeApply({
      name: 'calico-installation',
      access,
      docs: docs.calicoResources!,
      // the Installation kind exists only once the CRDs are applied: diff it after them
      dependsOn: [crds.id],
      after: [...base, op.id],
      waits: s.calico.waitTigeraStatus ? [waitTigeraStatus(statuses, T)] : [],
      tags: ['cni', 'calico'],
    });
    out.push(crds, op, inst);
    cniLast = inst.id;
  }
  if (s.metallb.enabled) {
    const arp = strictArp({ access, allow: s.metallb.allowStrictArp, timeoutSec: T, after: base, tags: ['metallb'] });
    const native = kubeApply({
      name: 'metallb',
      access,
      docs: docs.metallb!,
      waits: [
        waitEstablished(METALLB_CRDS, T),
        waitRollout(METALLB_NAMESPACE, 'deployment/controller', T),
        waitRollout(METALLB_NAMESPACE, 'daemonset/speaker', T),
      ],
      // MetalLB's controller (the webhook) is a pod-network pod: the CNI comes first
      after: [...base, arp.id, cniLast],
      tags: ['metallb'],
    });
    const config = kubeApply({
      name: 'metallb-config',
      access,
      docs: docs.metallbConfig!,
      dependsOn: [native.id],
      after: base,
      webhookGate: { configuration: 'metallb-webhook-configuration', namespace: METALLB_NAMESPACE, service: 'metallb-webhook-service' },
      timeoutSec: T,
      tags: ['metallb'],
    });
    out.push(arp, native, config);
  }
  return out;
}
