import { writeFileAtomic, type OutputKind } from '../util/atomic-write.ts';
import { printable } from '../util/printable.ts';
import { scrub } from '../util/secret.ts';
import { reportHtml } from './html.ts';
import type { Report } from './model.ts';
import { reportJson, reportText } from './text.ts';

/** What --html replaces: an HTML page (racksmith's start with a doctype). */
const HTML_PAGE: OutputKind = { name: 'an HTML page', head: /^\s*<!doctype html/i };

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
    writeFileAtomic(how.html, scrub(reportHtml(report)), 0o600, '--html', HTML_PAGE);
    out.stderr.write(`page written to ${printable(how.html)}\n`);
  }
  if (how.json) out.stdout.write(reportJson(report));
  else if (how.html === undefined) out.stdout.write(reportText(report));
}
