import type { ProbeText } from './probe.ts';

/** One difference between desired and actual state, as shown to the user. */
export interface Change {
  /** One line: "net.core.somaxconn: 4096 → 65535", "create /etc/x (12 bytes)". */
  summary: string;
  /** Unified diff, for file-like resources. */
  diff?: string;
}

/** A named piece of shell that converges part of a resource. */
export interface Step {
  name: string;
  script: string;
}

/**
 * The unit of desired state: probe (shell that prints facts) -> diff (pure) -> apply (shell).
 * `F` is the parsed facts type. Resources never open connections themselves. They are plain
 * objects (no classes): the engine copies their own fields (play tags added, one object shape for
 * every kind).
 */
export interface Resource<F = unknown> {
  /** Unique on a host, e.g. `file:/etc/sysctl.d/90-net.conf`. */
  readonly id: string;
  readonly kind: string;
  readonly tags: readonly string[];
  /** Ids of resources whose changes must be applied (and verified) before this one is diffed. */
  readonly dependsOn: readonly string[];
  /**
   * Ids of resources that must be applied first, without this one's facts depending on them
   * (a file after its directory). They share a wave; steps run in declaration order.
   */
  readonly after?: readonly string[];
  /**
   * false for things that cannot be checked afterwards (an unguarded command): they are
   * reported as "always runs" and not re-probed after applying.
   */
  readonly verifiable: boolean;
  /**
   * Paths this resource rewrites. Two resources that write the same path are ordered (the later
   * one depends on the earlier), so neither overwrites the other's edit.
   */
  readonly writes?: readonly string[];
  /**
   * Set by the engine: the earlier resource that writes the same path. This one is diffed
   * against that one's predicted files, so both apply in one wave and check mode shows exact
   * diffs for the second edit too.
   */
  readonly stacksOn?: string;
  /**
   * Set by the engine: earlier resources that write the same paths. They order this one but
   * never block it: if one fails without writing, this one's own probe of the file still holds
   * (and its write is compare-and-swap on that probe anyway).
   */
  readonly writeAfter?: readonly string[];
  /** The facts of each path in `writes` after applying `changes` (opaque to the engine). */
  predictFiles?(facts: F, changes: Change[]): Record<string, unknown>;
  /** These facts with the given paths' facts replaced by predicted ones. */
  useFiles?(facts: F, files: Record<string, unknown>): F;
  /**
   * POSIX sh that prints the facts; its stdout is handed to `parse`. Must not change anything.
   * Parts (an array) run as separate sections and their outputs are joined: a part that other
   * resources of the script share word for word (a file they all read) runs once.
   */
  probe(): ProbeText;
  /**
   * Turn probe output into facts. Throws ProbeError when the host cannot answer. A function of
   * its arguments only, and the facts are never changed afterwards: hosts whose probe answered
   * the same (converged hosts mostly do) share one parse.
   */
  parse(stdout: string, exitCode: number, stderr: string): F;
  /**
   * The same as `parse` for a probe of several parts, given each part's stdout (in probe order)
   * instead of them joined: for a resource parsed anew on most hosts (a mount: its lines of the
   * mount table and the host's fstab differ host by host), no joined copy is built and re-split.
   */
  parseParts?(parts: readonly string[], exitCode: number, stderr: string): F;
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
  diff(facts: F): Change[];
  /** Shell steps that converge the host, given the facts and changes from `diff`. */
  apply(facts: F, changes: Change[]): Step[];
}

/** The host's state makes this resource unsafe or impossible to converge (e.g. a disk with data). */
export class Refusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refusal';
  }
}

/** The probe could not produce facts (missing tool, unreadable file...). */
export class ProbeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProbeError';
  }
}

/** Options every resource takes. */
export interface CommonOptions {
  tags?: string[];
  dependsOn?: string[];
  after?: string[];
}

/** The fields every resource fills the same way from its options. */
export function common(kind: string, id: string, o: CommonOptions): Pick<Resource, 'id' | 'kind' | 'tags' | 'dependsOn' | 'after'> {
  return { id, kind, tags: o.tags ?? [], dependsOn: o.dependsOn ?? [], after: o.after };
}
