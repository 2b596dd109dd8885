/**
 * Pinned artifacts of the Kubernetes network playbook: every manifest version racksmith knows,
 * with the sha256 of the exact upstream bytes, and the CNI plugins tarball. Nothing is applied
 * from a file whose bytes do not hash to its pin (src/kube/artifacts.ts).
 *
 * A version that is not pinned here can be used by pinning it in the inventory
 * (`kube_manifest_pins`, see playbooks/kube-network.ts).
 *
 * Sources of the hashes: the manifests as released upstream (the copies under
 * shared/fixtures/manifests were taken from these URLs); the CNI plugins tarball sums from
 * kubespray `roles/kubespray_defaults/vars/main/checksums.yml` (`cni_binary_checksums`).
 */

export type Component = 'flannel' | 'calico' | 'metallb';

export interface ManifestPin {
  component: Component;
  version: string;
  /** File name, also its name in a mirror directory: `<dir>/<component>-<version>/<file>`. */
  file: string;
  url: string;
  sha256: string;
}

/** `<component>-<version>/<file>`: the key of a pin and the path in a mirror directory. */
export function pinKey(component: string, version: string, file: string): string {
  return `${component}-${version}/${file}`;
}

const GH_RAW = 'https://raw.githubusercontent.com';

export const MANIFEST_PINS: ManifestPin[] = [
  {
    component: 'flannel',
    version: 'v0.28.9',
    file: 'kube-flannel.yml',
    url: 'https://github.com/flannel-io/flannel/releases/download/v0.28.9/kube-flannel.yml',
    sha256: 'e875824be2f552b45711dbda91af81b17eb961d00025d914d9fef18fad8f09c0',
  },
  {
    component: 'calico',
    version: 'v3.32.1',
    file: 'operator-crds.yaml',
    url: `${GH_RAW}/projectcalico/calico/v3.32.1/manifests/operator-crds.yaml`,
    sha256: '192f8b2d934ef24b62e86b7e1a6e1762d1c8af26a916f78057bc13fa5ed60f71',
  },
  {
    component: 'calico',
    version: 'v3.32.1',
    file: 'tigera-operator.yaml',
    url: `${GH_RAW}/projectcalico/calico/v3.32.1/manifests/tigera-operator.yaml`,
    sha256: 'f18e073794207d372606bc3ea6f8fd73972f86d6828f4ba666dfe0d4aa8ab07f',
  },
  {
    component: 'metallb',
    version: 'v0.16.1',
    file: 'metallb-native.yaml',
    url: `${GH_RAW}/metallb/metallb/v0.16.1/config/manifests/metallb-native.yaml`,
    sha256: 'bf25feebb7582ca7df845efd52ffbc2960d6cbf4cfc972f47fded9f788b67f0b',
  },
];

/** The files each component needs, in apply order. */
export const COMPONENT_FILES: Record<Component, string[]> = {
  flannel: ['kube-flannel.yml'],
  calico: ['operator-crds.yaml', 'tigera-operator.yaml'],
  metallb: ['metallb-native.yaml'],
};

/** The version used when the inventory does not choose one. */
export const DEFAULT_VERSIONS: Record<Component, string> = {
  flannel: 'v0.28.9',
  calico: 'v3.32.1',
  metallb: 'v0.16.1',
};

export interface CniPluginsPin {
  version: string;
  /** sha256 per architecture (Go names: amd64, arm64). */
  sha256: Record<string, string>;
}

/** containernetworking/plugins release tarballs (`cni-plugins-linux-<arch>-<version>.tgz`). */
export const CNI_PLUGINS_PINS: CniPluginsPin[] = [
  {
    version: 'v1.8.0',
    sha256: {
      amd64: 'ab3bda535f9d90766cccc90d3dddb5482003dd744d7f22bcf98186bf8eea8be6',
      arm64: '57ce466fc3b79db1f19b8f4c63e07a1112306efa53c94fe810a2150dd9e07ddb',
    },
  },
  {
    version: 'v1.7.1',
    sha256: {
      amd64: '1a28a0506bfe5bcdc981caf1a49eeab7e72da8321f1119b7be85f22621013098',
      arm64: '119fcb508d1ac2149e49a550752f9cd64d023a1d70e189b59c476e4d2bf7c497',
    },
  },
];

export const DEFAULT_CNI_PLUGINS_VERSION = 'v1.8.0';

export function cniPluginsUrl(version: string, arch: string): string {
  return `https://github.com/containernetworking/plugins/releases/download/${version}/cni-plugins-linux-${arch}-${version}.tgz`;
}

/** Binaries flannel's config chains (flannel delegates to bridge + host-local, and portmap) and containerd needs (loopback). */
export const REQUIRED_CNI_BINARIES = ['bridge', 'host-local', 'loopback', 'portmap'];

/** Where upstream publishes a manifest, for versions pinned in the inventory without a URL. */
export function upstreamManifestUrl(component: Component, version: string, file: string): string {
  switch (component) {
    case 'flannel':
      return `https://github.com/flannel-io/flannel/releases/download/${version}/${file}`;
    case 'calico':
      return `${GH_RAW}/projectcalico/calico/${version}/manifests/${file}`;
    case 'metallb':
      return `${GH_RAW}/metallb/metallb/${version}/config/manifests/${file}`;
  }
}

/** The pin of a manifest: the inventory's (`kube_manifest_pins`) first, then racksmith's. */
export function findManifestPin(
  component: Component,
  version: string,
  file: string,
  extra: Record<string, { sha256: string; url?: string }> = {},
): ManifestPin | undefined {
  const key = pinKey(component, version, file);
  const own = extra[key];
  if (own) return { component, version, file, sha256: own.sha256, url: own.url ?? upstreamManifestUrl(component, version, file) };
  return MANIFEST_PINS.find((p) => p.component === component && p.version === version && p.file === file);
}
