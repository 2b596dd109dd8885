/**
 * Why the run stopped (the current play's failures passed its budget: --max-fail-percent, or a
 * failure in an anyErrorsFatal play), once it did: no wave, handler, batch or play starts after,
 * on any host (the execs in flight finish).
 */
export class FailBudget {
  private halt: string | undefined;
  private play: { name: string; hosts: number; members: ReadonlySet<string>; maxFail?: number; fatal: boolean } | undefined;
  /** The hosts that failed in the current play so far, each counted once, as soon as it fails. */
  private readonly failed = new Set<string>();

  /** Why the run stopped, if it did (one function handed to every host's run). */
  readonly halted = (): string | undefined => this.halt;

  /** A play starts with these hosts: its budget replaces the last play's. */
  startPlay(name: string, members: readonly string[], maxFail: number | undefined, fatal: boolean): void {
    this.play = { name, hosts: members.length, members: new Set(members), maxFail, fatal };
    this.failed.clear();
  }

  /** A host failed (a failed resource, unreachable, not escalated). */
  hostFailed(host: string): void {
    // (a host given up on in an earlier play may report late: it does not count against this one)
    const p = this.play;
    if (!p || !p.members.has(host) || this.failed.has(host)) return;
    this.failed.add(host);
    if (this.halt !== undefined) return;
    if (p.fatal) this.halt = `play '${p.name}' stopped, ${host} failed (anyErrorsFatal)`;
    else if (p.maxFail !== undefined && (this.failed.size / p.hosts) * 100 > p.maxFail)
      this.halt = `play '${p.name}' stopped, ${this.failed.size} of ${p.hosts} hosts failed (max ${p.maxFail}%)`;
  }
}
