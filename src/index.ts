/**
 * racksmith's public API: everything a playbook (and a resource family written outside this
 * repository) needs. `import { playbook, file, sysctl } from 'racksmith'`. The bundled playbooks
 * (playbooks/) import from here too. Pinned by test/unit/public-api.test.ts: a name removed or
 * renamed here breaks operators' playbooks.
 */

// Playbooks
export { playbook, varsSchema, HostContext, UNSET, type Play, type Playbook, type HostRead } from './contract/playbook.ts';
export type { Host, Vars } from './inventory/model.ts';
export type { Disk, Gpu, HostFacts, Nic, OsFamily } from './facts/types.ts';

// The resource contract, for writing resource families (docs/resources.md)
export {
  common,
  editClaim,
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
  probed,
  textOutput,
  type Answers,
  type BatchPart,
  type DefinePart,
  type ProbeBatch,
  type ProbeDecl,
  type Probed,
  type ProbeOutput,
  type ProbePart,
  type ProbeText,
} from './contract/probe.ts';
export { BLOCK_DEVICES, fileTopic, KERNEL_MODULES, MOUNTS, PACKAGES, SERVICE_UNITS, SYSCTL } from './contract/state-topics.ts';
export {
  isSensitive,
  managedFile,
  FileWrite,
  type ChangeText,
  type ManagedFile,
  type ManagedFileOptions,
} from './resources/core/managed-file.ts';
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
} from './resources/core/file-common.ts';
export { shq, shJoin } from './shell/quote.ts';
export { InputError, type SourcePos } from './util/errors.ts';
export { Secret, secretText } from './util/secret.ts';

// Testing a family's probe and a playbook's variables (docs/resources.md "Testing a probe and a playbook's variables")
export { standaloneProbe } from './engine/probe-set.ts';
export { prepare, type PreparedPlay, type RunSelection } from './engine/run.ts';
export { loadInventory } from './inventory/load.ts';

// Resource families
export { file, type FileOptions } from './resources/core/file.ts';
export { line, block, textEdit, type LineOptions, type BlockOptions, type TextEditOptions } from './resources/core/text-edit.ts';
export { directory, type DirectoryOptions } from './resources/core/directory.ts';
export { command, type CommandOptions } from './resources/core/command.ts';
export { sysctl, SYSCTL_KEY, type SysctlOptions, type SysctlValue, type SysctlFacts, type HostMemory } from './resources/tuning/sysctl.ts';
export {
  restartHandler,
  pollScript,
  KUBELET_HEALTHZ,
  type RestartHandlerOptions,
  type RestartHandlerFacts,
} from './resources/core/service.ts';
export { limits, type LimitsOptions, type NofileLimits, type JobLimit, type JobLimits } from './resources/tuning/limits.ts';
export { kmod, type KmodOptions } from './resources/tuning/kmod.ts';
export { mount, type MountOptions, type MountFacts } from './resources/core/mount.ts';
export {
  kubeletConfig,
  mergeUnsafeSysctls,
  KUBELET_CONFIG,
  type KubeletConfigOptions,
  type KubeletEdit,
} from './resources/tuning/kubelet-config.ts';
export { xfsFormat, ioTuning, xattrCheck, diskMount, specText, type DiskSpec } from './resources/storage/blockdev.ts';
export type { XfsFormatOptions, IoTuningOptions, XattrCheckOptions, DiskMountOptions } from './resources/storage/blockdev.ts';
export {
  mergeProfiles,
  DEFAULT_IO_PROFILES,
  UDEV_MATCH_KEY,
  udevGlobError,
  type IoProfile,
  type IoProfileOverride,
  type ProfileName,
} from './resources/storage/blockdev-logic.ts';
export {
  storageRecordLine,
  recordedDiskMount,
  storagePrune,
  diskDecommission,
  storageWipeCheck,
  aisStatePurge,
  type StorageEntry,
  type StorageRecordLineOptions,
  type RecordedDiskMountOptions,
  type StoragePruneOptions,
  type DiskDecommissionOptions,
  type StorageWipeCheckOptions,
  type AisStatePurgeOptions,
} from './resources/storage/storage-lifecycle.ts';
export { STORAGE_RECORD } from './resources/storage/storage-lifecycle-logic.ts';
export { ioUdevRules, IO_RULES_FILE, type IoUdevRulesOptions, type UdevDisk } from './resources/storage/udev.ts';
export { gpuBinds, type GpuBindOptions } from './resources/jail/gpu-binds.ts';
export { DEFAULT_LOCK_TIMEOUT_S } from './resources/jail/jail-shared.ts';
export { gpuDriver, type GpuDriverOptions } from './resources/jail/gpu-driver.ts';
export { gpuStandins, type GpuStandinOptions } from './resources/jail/gpu-standins.ts';
export { DEFAULT_GPU_CAPS, DEFAULT_GPU_PATTERNS, GPU_CAPS, parseGpuCaps, type GpuCap } from './resources/jail/gpu-files.ts';
export { cniPlugins, cniConfGuard, nmUnmanaged } from './resources/kube/cni.ts';
export {
  kubeApply,
  waitEstablished,
  waitRollout,
  waitTigeraStatus,
  artifactsGuard,
  clusterGuard,
  strictArp,
} from './resources/kube/kube.ts';
export { SYSCTL_PROFILES, OPTIONAL_SYSCTLS, RETIRED_SYSCTL_FILES, sysctlFile } from './profiles/sysctl-profiles.ts';
export { sysctlEffect, type ManagedSysctls, type SysctlEffectOptions } from './resources/tuning/sysctl-effect.ts';
export type { NeverLower } from './resources/tuning/sysctl-floor.ts';
export { mtu, type MtuOptions, type NetworkStack } from './resources/tuning/mtu.ts';
export { nicQueues, type NicQueuesOptions, type NicSelector } from './resources/tuning/nic.ts';
export { chronySources, type ChronyOptions } from './resources/tuning/chrony.ts';
export { cpuGovernor, type CpuGovernorOptions } from './resources/tuning/cpu-governor.ts';
export {
  transparentHugepages,
  THP_MODES,
  type TransparentHugepagesOptions,
  type TransparentHugepagesFacts,
} from './resources/tuning/transparent-hugepages.ts';
export { packages, type PackagesOptions, type PackageName, type PackageMirror } from './resources/core/packages.ts';
export { prerequisites, STORAGE_PACKAGES, jailPackages, nodePackages } from './plays/prerequisites.ts';
export { NFS_DEFAULTS, nfsMountOptions, jailStorageOptions, jailNfsUsed, type JailNfs } from './plays/jail-storage.ts';
export { kubeClusterResources, kubeNodeResources } from './plays/kube-network.ts';
