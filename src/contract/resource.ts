import { checkToken, VALUE_LIMITS } from '../util/input-value.ts';
import type { ProbeOutput, ProbeText } from './probe.ts';
import { refuseSecrets } from '../util/secret.ts';

/**
 * One difference between desired and actual state. `summary` and `diff` are what the user sees
 * (and what a saved plan records); `data` is what `apply` acts on, typed by the resource: the
 * decision made once, in `diff`, never computed again. `data` is never shown nor recorded.
 */
export interface Change<D = unknown> {
  /** One line: "net.core.somaxconn: 4096 → 65535", "create /etc/x (12 bytes)". */
  summary: string;
  /** Unified diff, for file-like resources. */
  diff?: string;
  data?: D;
  /**
   * Set on a change that destroys data (a disk wipe): why. The engine applies it only when it was
   * reviewed in a saved plan (`--check --plan-out`, then `provision apply`) or with `--yes`; in
   * check mode it is shown like any other change.
   */
  confirm?: string;
  /**
   * Set on a change that disturbs the workloads running on the host (a kubelet or containerd
   * restart, an MTU or NIC queue change): what it disturbs. With `--drain` the engine moves the
   * work off the host (Kubernetes or Slurm) before the first such change and puts it back after
   * the host's last change; without, it is only reported.
   */
  disruptive?: string;
}

/** A named piece of shell that converges part of a resource. */
export interface Step {
  name: string;
  script: string;
  /** Set on the whole-file write of a file whose stacked writers may write it once per exec (see StepWrite). */
  write?: StepWrite;
  /**
   * What this step may change on its host (contract/state-topics.ts: `file:/etc/x`, `sysctl`):
   * answers probed ahead for a later play stay current across it when their resources' `reads`
   * miss all of these. Left out: it may change anything, and every such answer is probed again.
   */
  touches?: readonly string[];
}

/**
 * A step's whole-file write (made by `managedFile` for a file that allows it). Stacked writers of
 * one file in one exec whose writes have the same `fold` write it once: each one's write step only
 * marks that it was reached, and after the last one's the engine runs the `script` of the last
 * writer reached, compare-and-swap against what the first one expected. Nothing in the exec may
 * read the file between those writes (the file allows it only then: fstab, which mount commands
 * never read when they name source and target).
 */
export interface StepWrite {
  readonly path: string;
  /** Writes fold only with writes of the same path and options (mode, owner, backup, check...). */
  readonly fold: string;
  /** The sha256 (or 'absent') this write expects the file to have: its compare-and-swap. */
  readonly expect: string | undefined;
  /** The write, expecting `expect` in place of its own. */
  script(expect: string | undefined): string;
}

/**
 * A file a resource rewrites, as the engine sees it (made by `managedFile`, resources/core/managed-file.ts).
 * Two resources that write the same path are ordered by declaration, and the later one is diffed
 * against the file the earlier one's changes will leave (so both apply in one wave and check mode
 * shows exact diffs for the second edit too). What "a file's facts" are is the slot's business.
 */
export interface FileSlot<F = unknown> {
  readonly path: string;
  /** This file's facts after `changes` apply, or undefined when they leave it as probed. */
  predict(facts: F, changes: readonly Change[]): unknown;
  /** `facts` with this file's facts replaced by predicted ones (an earlier writer's). */
  use(facts: F, predicted: unknown): F;
}

/**
 * The unit of desired state: probe (shell that prints facts) -> parse -> diff (pure) -> apply
 * (shell steps). `F` is the facts type, `D` the type of its changes' data. Resources never open
 * connections, and everything here is a function of the resource's options and its arguments only.
 * docs/resources.md is the guide to writing one; the engine's own bookkeeping about a resource
 * (links, predictions, results) lives in the engine, never on this object.
 */
export interface Resource<F = unknown, D = unknown> {
  /** Unique on a host, e.g. `file:/etc/sysctl.d/90-net.conf`. */
  readonly id: string;
  readonly kind: string;
  readonly tags: readonly string[];
  /**
   * Resources whose changes must be applied (and verified) before this one is probed again and
   * diffed: its facts depend on them (a mount on the mkfs that makes its UUID).
   */
  readonly dependsOn: readonly string[];
  /**
   * Resources whose steps must run first, without this one's facts depending on them (a file
   * after its directory): the same wave, steps in declaration order.
   */
  readonly after?: readonly string[];
  /**
   * Handlers to run when this resource changed (ids of resources with `handler: true` in the
   * same play): a restart of the service that reads the file this resource wrote.
   */
  readonly notify?: readonly string[];
  /**
   * A handler: not converged like the others, but run once per host after the play's waves, and
   * only when a resource that notifies it changed (in check mode reported as "would ..."). Its
   * `diff` gives what it would do (a restart), or throws NotApplicable where it cannot run (no
   * systemd); its steps do it and check the result (a health check: failing, the host fails).
   */
  readonly handler?: boolean;
  /**
   * Set when its changes may disturb the workloads (they then carry Change.disruptive): what they
   * disturb. Known before any diff, so a check run that cannot diff it yet (its facts wait on a
   * pending change of a dependency) still says the host may be drained (--drain).
   */
  readonly mayDisrupt?: string;
  /**
   * false for things that cannot be checked afterwards (an unguarded command): reported as
   * "always runs" and not probed again after applying.
   */
  readonly verifiable: boolean;
  /** The files this resource rewrites (see FileSlot). */
  readonly files?: readonly FileSlot<F>[];
  /**
   * What this resource alone decides on its host: `sysctl:net.core.somaxconn`, `file:/etc/x`,
   * `mountpoint:/ais/d1`. Two resources of a host's run (any plays) with one claim fight over it
   * (each run flips it), so the run is refused before any host is contacted (exit 3). A claim
   * made with `editClaim(claim)` is shared: edits of one file (line, block) stack, but an edit and an
   * exclusive claim of the same thing still conflict.
   */
  readonly claims?: readonly string[];
  /**
   * Where the resource was declared: a captured stack, formatted only when a message needs the
   * playbook's file:line (a conflict). Set by `common`.
   */
  readonly declaredAt?: { readonly stack?: string };
  /**
   * true when its facts include state that other hosts can change: a cluster's API server, a
   * tree on a shared filesystem (the jail), whatever a command queries. Its answers, probed
   * ahead for a later play, are then read again after an apply on any host; the others only
   * after an apply on their own host (their facts are the host's own).
   */
  readonly readsSharedState?: boolean;
  /**
   * What its probe reads, in contract/state-topics.ts's names: everything whose change could
   * change its facts. Its answers, probed ahead for a later play, are then kept across an apply on
   * its host whose steps declare what they touch (Step.touches) and touch none of these. Left
   * out: it reads everything (its answers are read again after any apply on its host). Name too
   * much rather than too little: a topic missing here leaves its facts stale.
   */
  readonly reads?: readonly string[];
  /**
   * POSIX sh that prints the facts. Must not change anything. Parts (an array) run as separate
   * sections or batches (contract/probe.ts); a part that other resources share word for word
   * runs once per script.
   */
  probe(): ProbeText;
  /**
   * The facts from the probe's answers. Throws ProbeError when the host cannot answer. Pure:
   * hosts whose probe answered the same share one parse, and facts are never changed afterwards.
   */
  parse(out: ProbeOutput): F;
  /**
   * Hosts whose resource carries the same `fleet` key must agree with each other before anything
   * is applied (the GPU hosts sharing one jail: one driver version). The engine probes every host
   * of such a play first, and hands each one its group's answers through `useFleet`.
   */
  readonly fleet?: string;
  /**
   * These facts together with the group's: `fleet` holds, per host of the run's play that carries
   * the same key (this one included), that host's facts as probed before any of them applied
   * anything. Pure, like diff, which can then refuse on every host of a group that disagrees.
   */
  useFleet?(facts: F, fleet: ReadonlyMap<string, unknown>): F;
  /** Pure: what differs. Throws Refusal when converging would be unsafe. */
  diff(facts: F): Change<D>[];
  /** Shell steps that converge the host, given the facts and the changes `diff` returned. */
  apply(facts: F, changes: readonly Change<D>[]): Step[];
}

/** The host's state makes this resource unsafe or impossible to converge (e.g. a disk with data). */
export class Refusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refusal';
  }
}

/**
 * Nothing to do on this host, and why: the resource is reported as skipped with this message,
 * never hidden ("not restarted: no systemd", "not supported on this host"). Thrown by `diff`.
 */
export class NotApplicable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotApplicable';
  }
}

// The probe could not produce facts: declared with the probe vocabulary, thrown by parse.
export { ProbeError } from './probe.ts';

/** The shared form of a claim: an edit of part of what `claim` names (see Resource.claims). */
export function editClaim(claim: string): string {
  return `${EDIT_CLAIM}${claim}`;
}
export const EDIT_CLAIM = 'edit ';

/** Options every resource takes. */
export interface CommonOptions {
  tags?: string[];
  dependsOn?: string[];
  after?: string[];
  /** Handlers to run when this resource changed (see Resource.notify). */
  notify?: string[];
}

/** The fields every resource fills the same way from its options. */
export function common(
  kind: string,
  id: string,
  o: CommonOptions,
  /** Options that take a Secret (file content): every other one refuses secrets (exit 3). */
  takesSecrets: readonly string[] = [],
): Pick<Resource, 'id' | 'kind' | 'tags' | 'dependsOn' | 'after' | 'notify' | 'declaredAt'> {
  // Every resource's id is made of what identifies it (a path, a name): one check covers them all.
  checkToken(id, `${kind} id`, VALUE_LIMITS.path + 256);
  refuseSecrets(o, id, takesSecrets);
  // The stack's frames are kept, its text made only when read (engine/claims.ts, on a conflict).
  const declaredAt: { stack?: string } = {};
  Error.captureStackTrace(declaredAt, common);
  return { id, kind, tags: o.tags ?? [], dependsOn: o.dependsOn ?? [], after: o.after, notify: o.notify, declaredAt };
}
