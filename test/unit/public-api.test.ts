// The package's public API (src/index.ts, package.json `exports`): operators' playbooks import
// these names from 'racksmith'. Removing or renaming one breaks them: this list changes only on
// purpose, together with the note for users in docs/playbooks.md ("Your own playbooks").
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from '../../src/index.ts';

const EXPORTS = [
  'DEFAULT_GPU_CAPS',
  'DEFAULT_GPU_PATTERNS',
  'DEFAULT_IO_PROFILES',
  'DEFAULT_LOCK_TIMEOUT_S',
  'FileWrite',
  'GPU_CAPS',
  'HostContext',
  'IO_RULES_FILE',
  'InputError',
  'KUBELET_CONFIG',
  'KUBELET_HEALTHZ',
  'NotApplicable',
  'OPTIONAL_SYSCTLS',
  'ProbeError',
  'RETIRED_SYSCTL_FILES',
  'Refusal',
  'STORAGE_PACKAGES',
  'STORAGE_RECORD',
  'SYSCTL_KEY',
  'SYSCTL_PROFILES',
  'Secret',
  'UDEV_MATCH_KEY',
  'UNSET',
  'aisStatePurge',
  'artifactsGuard',
  'atomicWriteScript',
  'block',
  'checkAbsolutePath',
  'chronySources',
  'clusterGuard',
  'cniConfGuard',
  'cniPlugins',
  'command',
  'common',
  'contentDiff',
  'contentText',
  'cpuGovernor',
  'define',
  'directory',
  'diskDecommission',
  'diskMount',
  'editClaim',
  'file',
  'fileFacts',
  'fileProbe',
  'gpuBinds',
  'gpuDriver',
  'gpuStandins',
  'inline',
  'ioTuning',
  'ioUdevRules',
  'isSensitive',
  'jailPackages',
  'kmod',
  'kubeApply',
  'kubeClusterResources',
  'kubeNodeResources',
  'kubeletConfig',
  'limits',
  'line',
  'loadInventory',
  'managedFile',
  'mergeProfiles',
  'mergeUnsafeSysctls',
  'mount',
  'mtu',
  'nicQueues',
  'nmUnmanaged',
  'nodePackages',
  'normMode',
  'packages',
  'parseGpuCaps',
  'playbook',
  'pollScript',
  'prepare',
  'prerequisites',
  'recordedDiskMount',
  'restartHandler',
  'secretText',
  'shJoin',
  'shq',
  'specText',
  'standaloneProbe',
  'storagePrune',
  'storageRecordLine',
  'strictArp',
  'sysctl',
  'sysctlEffect',
  'sysctlFile',
  'textEdit',
  'textOutput',
  'udevGlobError',
  'varsSchema',
  'waitEstablished',
  'waitRollout',
  'waitTigeraStatus',
  'xattrCheck',
  'xfsFormat',
];

describe('public API', () => {
  it('exports exactly the pinned names', () => {
    expect(Object.keys(api).sort()).toEqual(EXPORTS);
  });

  it('package.json exports it (and its type declarations) as the package root, the bundled playbooks, and nothing else', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    // (racksmith-source: the sources, for this checkout only: .npmrc, vitest.config.ts, tsconfig.json)
    expect(pkg.exports['.']).toEqual({
      'racksmith-source': './src/index.ts',
      types: './dist/src/index.d.ts',
      default: './dist/src/index.js',
    });
    expect(pkg.exports['./playbooks/*']).toEqual({
      'racksmith-source': './playbooks/*.ts',
      types: './dist/playbooks/*.d.ts',
      default: './dist/playbooks/*.js',
    });
    expect(Object.keys(pkg.exports)).toEqual(['.', './playbooks/*', './package.json']);
  });
});
