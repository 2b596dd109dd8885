import { writeFileAtomic } from '../util/atomic-write.ts';
import { printable } from '../util/printable.ts';
import { scrub } from '../util/secret.ts';
import { reportHtml } from './html.ts';
import type { Report } from './model.ts';
import { reportJson, reportText } from './text.ts';

/**
 * A report where the command line asks: `html` a page written to that file (mode 0600, as plans
 * and journals: it holds the same changes), else JSON or text on stdout. Everything through
 * scrub, as every other output.
 */
export function writeReport(
  report: Report,
  how: { json: boolean; html?: string },
  out: { stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown } },
): void {
  if (how.html !== undefined) {
    writeFileAtomic(how.html, scrub(reportHtml(report)), 0o600, '--html');
    out.stderr.write(`page written to ${printable(how.html)}\n`);
  }
  if (how.json) out.stdout.write(reportJson(report));
  else if (how.html === undefined) out.stdout.write(reportText(report));
}
