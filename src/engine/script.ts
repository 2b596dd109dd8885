import { randomBytes } from 'node:crypto';

/**
 * One part of a remote script: a probe (read-only), an apply step, or shell definitions
 * (functions) that probes call: put at the top of the script, in the script's own shell, so every
 * section's subshell has them; they print nothing and have no output of their own.
 */
export interface Section {
  kind: 'probe' | 'step' | 'define';
  /** Apply steps of one resource share a group: after a failed step the group's later steps are skipped. */
  group?: string;
  /** Groups whose failure (or skip) earlier in the script skips this step's group too. */
  skipIf?: readonly string[];
  /** A gate (the apply lock): when it fails, the script ends there and no later section runs. */
  stop?: boolean;
  /**
   * A step with nothing to run but setting variable `name` (a safe token, empty at the script's
   * start) to `value` in the script's own shell (no subshell, exit 0): later sections read
   * whether it was reached (a folded write's stage).
   */
  mark?: { name: string; value: string };
  /**
   * A probe that keeps the inline contract (contract/probe.ts): probes in a row that are shared run
   * in one subshell, each as a brace group between its markers (a fork for all of them, not one
   * each); the row that ends the script runs in the script's own shell. An `exit` there would end
   * the rest of the row: those sections show as not run.
   */
  shared?: boolean;
  body: string;
}

export interface SectionOutput {
  stdout: string;
  stderr: string;
  /** null when the section did not run (an earlier step of its group failed, or the script died). */
  code: number | null;
  /** A probe of several parts: each part's stdout, in order (`stdout` is them joined). */
  readonly parts?: readonly string[];
}

/**
 * Join sections into ONE script for one round trip. Each section runs in a subshell (a row of
 * shared probes in one together, or in the script's shell when the row ends the script) between
 * markers on both streams: its stdout between B and E (with its exit code) on stdout, its stderr
 * between B and X on stderr. A random marker per script keeps host output from faking a boundary.
 * Nothing is written on the host (no temp files): a converged run only reads.
 */
export function buildScript(sections: Section[], body = scriptBody(sections)): { script: string; marker: string } {
  const marker = `@@RS-${randomBytes(8).toString('hex')}@@`;
  return { script: `rs_m='${marker}'\n${body}`, marker };
}

/** The script of `buildScript` after its marker line: the same for every host given the same sections. */
export function scriptBody(sections: readonly Section[]): string {
  const lines = sections.some((s) => s.kind === 'step' && s.group) ? ['rs_failed='] : [];
  // Group names become shell tokens g0, g1...: only safe characters reach the script.
  const groupTokens = new Map<string, string>();
  const token = (group: string) => {
    if (!groupTokens.has(group)) groupTokens.set(group, `g${groupTokens.size}`);
    return groupTokens.get(group)!;
  };
  for (const s of sections) if (s.kind === 'define') lines.push(s.body);
  for (const s of sections) if (s.mark) lines.push(`${s.mark.name}=`);
  // A row of shared probes runs in a subshell of its own, but the row that ends the script runs
  // in the script's own shell (a fork less on every converged host: such a run is that one row):
  // nothing runs after it to see what it leaves, and an exit there ends the rest of it alike.
  const isShared = (s: Section) => s.kind === 'probe' && s.shared === true;
  let lastRow = sections.length;
  for (let j = sections.length - 1; j >= 0 && (sections[j].kind === 'define' || isShared(sections[j])); j--)
    if (isShared(sections[j])) lastRow = j;
  let inRow = false;
  sections.forEach((s, i) => {
    if (s.kind === 'define') return;
    const shared = isShared(s);
    if (shared && !inRow) lines.push(i >= lastRow ? '{' : '(');
    else if (!shared && inRow) lines.push(') </dev/null');
    inRow = shared;
    const run = [
      `printf '\\n%s B ${i}\\n' "$rs_m"; printf '\\n%s B ${i}\\n' "$rs_m" >&2`,
      s.mark !== undefined
        ? `${s.mark.name}=${s.mark.value}`
        : s.kind === 'step'
          ? `( set -e\n${s.body}\n) </dev/null`
          : shared
            ? `{\n${s.body}\n} </dev/null`
            : `(\n${s.body}\n) </dev/null`,
      // (a brace group's status is its last command's, echo's too: shellcheck would take it for a slip)
      shared ? '# shellcheck disable=SC2320\nrs_rc=$?' : 'rs_rc=$?',
      `printf '\\n%s E ${i} %s\\n' "$rs_m" "$rs_rc"; printf '\\n%s X ${i}\\n' "$rs_m" >&2`,
    ];
    if (s.kind === 'step' && s.group) {
      const t = token(s.group);
      const skip = [t, ...(s.skipIf ?? []).map(token)].map((x) => `*' ${x} '*`).join('|');
      // a skipped group counts as failed for the groups that skip with it
      lines.push(`case " $rs_failed " in ${skip}) rs_failed="$rs_failed ${t}" ;; *)`);
      lines.push(...run);
      lines.push(`[ "$rs_rc" = 0 ] || rs_failed="$rs_failed ${t}"`, ';; esac');
    } else {
      lines.push(...run);
    }
    if (s.stop) lines.push('[ "$rs_rc" = 0 ] || exit 0');
  });
  if (inRow) lines.push('} </dev/null');
  return lines.join('\n');
}

/**
 * Split the output of a script made by `buildScript` back into its sections: stdout and exit code
 * from stdout (between B and E), each section's stderr from the stderr stream (between B and X).
 */
export function splitOutput(stdout: string, marker: string, count: number, stderr = ''): SectionOutput[] {
  const out: SectionOutput[] = Array.from({ length: count }, () => ({ stdout: '', stderr: '', code: null }));
  // Sections appear in order: search on from the last one, with plain indexOf (no regex per
  // section: this runs for every section of every host).
  let from = 0;
  for (let i = 0; i < count; i++) {
    const b = `\n${marker} B ${i}\n`;
    const bi = stdout.indexOf(b, from);
    if (bi < 0) continue;
    const start = bi + b.length;
    const e = `\n${marker} E ${i} `;
    const ei = stdout.indexOf(e, start);
    const eol = ei < 0 ? -1 : stdout.indexOf('\n', ei + e.length);
    const code = eol < 0 ? '' : stdout.slice(ei + e.length, eol);
    if (!/^\d+$/.test(code)) {
      // cut short (the script died, or an exit ended its row of shared probes): up to the next
      // section that began, if any
      const next = stdout.indexOf(`\n${marker} B `, start);
      out[i].stdout = next < 0 ? stdout.slice(start) : stdout.slice(start, next);
      from = start;
      continue;
    }
    out[i].stdout = stdout.slice(start, ei);
    out[i].code = Number(code);
    from = eol;
  }
  let at = 0;
  for (let i = 0; i < count && stderr; i++) {
    const b = `\n${marker} B ${i}\n`;
    const bi = stderr.indexOf(b, at);
    if (bi < 0) continue;
    const start = bi + b.length;
    const xi = stderr.indexOf(`\n${marker} X ${i}\n`, start);
    const end = xi < 0 ? stderr.indexOf(`\n${marker} B `, start) : xi;
    out[i].stderr = end < 0 ? stderr.slice(start) : stderr.slice(start, end);
    at = xi < 0 ? start : xi + 1;
  }
  return out;
}
