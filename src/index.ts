/**
 * racksmith's public API: everything a playbook (and a resource family written outside this
 * repository) needs. `import { playbook, file, sysctl } from 'racksmith'`. The bundled playbooks
 * (playbooks/) import from here too. Pinned by test/unit/public-api.test.ts: a name removed or
 * renamed here breaks operators' playbooks.
 */

// Playbooks
export { playbook, varsSchema, HostContext, UNSET, type Play, type Playbook, type HostRead } from './contract/playbook.ts';
export type { Host, Vars } from './inventory/model.ts';

// The resource contract, for writing resource families (docs/resources.md)
export {
  common,
  NotApplicable,
  Refusal,
  ProbeError,
  type Change,
  type CommonOptions,
  type FileSlot,
  type Resource,
  type Step,
} from './contract/resource.ts';
export {
  define,
  inline,
  textOutput,
  type BatchPart,
  type DefinePart,
  type ProbeBatch,
  type ProbeOutput,
  type ProbePart,
  type ProbeText,
} from './contract/probe.ts';
export { managedFile, FileWrite, type ChangeText, type ManagedFile, type ManagedFileOptions } from './resources/managed-file.ts';
export {
  atomicWriteScript,
  checkAbsolutePath,
  contentDiff,
  contentText,
  fileFacts,
  fileProbe,
  normMode,
  type FileAnswer,
  type FileFacts,
  type WriteSpec,
} from './resources/file-common.ts';
export { shq, shJoin } from './shell/quote.ts';
export { InputError, type SourcePos } from './util/errors.ts';
export { Secret } from './util/secret.ts';

// Testing a family's probe and a playbook's variables (docs/resources.md "Testing a probe and a playbook's variables")
export { standaloneProbe } from './engine/probe-set.ts';
export { prepare, type PreparedPlay, type RunSelection } from './engine/run.ts';
export { loadInventory } from './inventory/load.ts';

// Resource families
export { file, type FileOptions } from './resources/file.ts';
export { line, block, textEdit, type LineOptions, type BlockOptions, type TextEditOptions } from './resources/text-edit.ts';
export { directory, type DirectoryOptions } from './resources/directory.ts';
export { command, type CommandOptions } from './resources/command.ts';
export { sysctl, SYSCTL_KEY, type SysctlOptions, type SysctlValue, type SysctlFacts, type HostMemory } from './resources/sysctl.ts';
export { restartHandler, pollScript, KUBELET_HEALTHZ, type RestartHandlerOptions, type RestartHandlerFacts } from './resources/service.ts';
export { limits, type LimitsOptions, type NofileLimits, type JobLimit, type JobLimits } from './resources/limits.ts';
export { kmod, type KmodOptions } from './resources/kmod.ts';
export { mount, type MountOptions, type MountFacts } from './resources/mount.ts';
export {
  kubeletConfig,
  mergeUnsafeSysctls,
  KUBELET_CONFIG,
  type KubeletConfigOptions,
  type KubeletEdit,
} from './resources/kubelet-config.ts';
export { xfsFormat, ioTuning, xattrCheck, diskMount, specText, type DiskSpec } from './resources/blockdev.ts';
export type { XfsFormatOptions, IoTuningOptions, XattrCheckOptions, DiskMountOptions } from './resources/blockdev.ts';
export {
  mergeProfiles,
  DEFAULT_IO_PROFILES,
  UDEV_MATCH_KEY,
  udevGlobError,
  type IoProfile,
  type IoProfileOverride,
  type ProfileName,
} from './resources/blockdev-logic.ts';
export {
  storageRecordLine,
  recordedDiskMount,
  storagePrune,
  diskDecommission,
  aisStatePurge,
  type StorageEntry,
  type StorageRecordLineOptions,
  type RecordedDiskMountOptions,
  type StoragePruneOptions,
  type DiskDecommissionOptions,
  type AisStatePurgeOptions,
} from './resources/storage-lifecycle.ts';
export { STORAGE_RECORD } from './resources/storage-lifecycle-logic.ts';
export { ioUdevRules, IO_RULES_FILE, type IoUdevRulesOptions, type UdevDisk } from './resources/udev.ts';
export { gpuBinds, type GpuBindOptions } from './resources/gpu-binds.ts';
export { DEFAULT_LOCK_TIMEOUT_S } from './resources/jail-shared.ts';
export { gpuDriver, type GpuDriverOptions } from './resources/gpu-driver.ts';
export { gpuStandins, type GpuStandinOptions } from './resources/gpu-standins.ts';
export { DEFAULT_GPU_CAPS, DEFAULT_GPU_PATTERNS, GPU_CAPS, parseGpuCaps, type GpuCap } from './resources/gpu-files.ts';
export { cniPlugins, cniConfGuard, nmUnmanaged } from './resources/cni.ts';
export { kubeApply, waitEstablished, waitRollout, waitTigeraStatus, artifactsGuard, clusterGuard, strictArp } from './resources/kube.ts';
export { SYSCTL_PROFILES, OPTIONAL_SYSCTLS, RETIRED_SYSCTL_FILES, sysctlFile } from './profiles/sysctl-profiles.ts';
export { sysctlEffect, type ManagedSysctls, type SysctlEffectOptions } from './resources/sysctl-effect.ts';
export { mtu, type MtuOptions, type NetworkStack } from './resources/mtu.ts';
export { nicQueues, type NicQueuesOptions, type NicSelector } from './resources/nic.ts';
export { chronySources, type ChronyOptions } from './resources/chrony.ts';
export { cpuGovernor, type CpuGovernorOptions } from './resources/cpu-governor.ts';
export { packages, type PackagesOptions, type PackageName, type PackageMirror } from './resources/packages.ts';
export { prerequisites, STORAGE_PACKAGES, jailPackages, nodePackages } from './plays/prerequisites.ts';
export { kubeClusterResources, kubeNodeResources } from './plays/kube-network.ts';
