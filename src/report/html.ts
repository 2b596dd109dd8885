import { createHash } from 'node:crypto';
import { groupItems, groupsByHost, hostTotals, type ItemGroup, type Report, type RunDrains } from './model.ts';
import { PAGE_CSS, PAGE_SCRIPT } from './page-assets.ts';
import { drainHowText } from '../contract/drain.ts';
import { drainKind, drainsHeading, RUN_DRAINS_HEADING, takenOverText } from './drains.ts';

/** Text as HTML text or attribute value: nothing in it can open a tag, end an attribute or a script. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A unified diff as lines marked added, removed or hunk header (for colour), each line escaped. */
function diffHtml(diff: string): string {
  const lines = diff.replace(/\n$/, '').split('\n');
  const cls = (l: string) =>
    l.startsWith('+++') || l.startsWith('---') ? 'f' : l.startsWith('+') ? 'a' : l.startsWith('-') ? 'd' : l.startsWith('@@') ? 'hk' : '';
  return lines.map((l) => (cls(l) ? `<span class="${cls(l)}">${esc(l)}</span>` : esc(l))).join('\n');
}

function groupHtml(g: ItemGroup, i: number): string {
  const n = i + 1;
  const hosts = g.hosts.map((h) => `<span class="hn">${esc(h)}</span>`).join(' ');
  const diffs = g.diffs.length
    ? `<details class="diff"><summary>diff (${g.diffs.length})</summary>${g.diffs.map((d) => `<pre>${diffHtml(d)}</pre>`).join('')}</details>`
    : '';
  const note = g.note !== undefined ? `<p class="note">${g.status === 'failed' ? 'error' : 'waits on'}: ${esc(g.note)}</p>` : '';
  return (
    `<article class="change" id="g${n}" data-play="${esc(g.play)}" data-id="${esc(g.id)}" data-kind="${esc(g.kind)}" data-status="${g.status}" data-hosts="${esc(g.hosts.join(' '))}">` +
    `<h3><span class="n">[${n}]</span> <span class="st s-${g.status}">${g.status}</span> <span class="play">${esc(g.play)}</span> / <code>${esc(g.id)}</code> <span class="count">${g.hosts.length} host${g.hosts.length === 1 ? '' : 's'}</span></h3>` +
    `<ul class="sum">${g.summaries.map((s) => `<li>${esc(s)}</li>`).join('')}</ul>${note}${diffs}<p class="hosts">${hosts}</p></article>`
  );
}

function hostRows(report: Report, groups: ItemGroup[]): string {
  const byHost = groupsByHost(report, groups);
  return report.hosts
    .map((h) => {
      const mine = byHost.get(h.name) ?? [];
      const links = mine.map((i) => `<a href="#g${i + 1}">[${i + 1}] ${esc(groups[i].id)}</a>`).join(' ');
      const error = h.error !== undefined ? `<div class="note">${esc(h.error)}</div>` : '';
      return (
        `<tr data-host="${esc(h.name)}" data-groups="${esc(h.groups.join(' '))}" data-status="${h.status}" data-changes="${mine.map((i) => i + 1).join(' ')}">` +
        `<td>${esc(h.name)}</td><td>${esc(h.groups.join(', '))}</td><td><span class="st s-${h.status}">${h.status}</span>${error}</td><td>${links}</td></tr>`
      );
    })
    .join('\n');
}

const DRAIN_TEXT = {
  would: 'would be drained',
  may: 'may be drained',
  already: 'already out of scheduling, left as it is',
  blocked: "BLOCKED by another racksmith run's drain (its changes would not be applied)",
  none: 'not drained (no disruptive change)',
};

/** The Drains section: every host with a drain provider, what the check run found, and how. */
function drainsHtml(d: NonNullable<Report['drains']>): string {
  const rows = d.hosts
    .map((h) => {
      const detail = h.detail !== undefined ? `<div class="note">${esc(h.detail)}</div>` : '';
      return (
        `<tr data-host="${esc(h.host)}" data-drain="${esc(h.outcome)}"><td>${esc(h.host)}</td>` +
        `<td><span class="st s-drain-${esc(h.outcome)}">${esc(DRAIN_TEXT[h.outcome] ?? h.outcome)}</span>${detail}</td><td>${esc(drainHowText(h))}</td></tr>`
      );
    })
    .join('\n');
  return `<section id="drains"><h2>${esc(drainsHeading(d).replace(/:$/, ''))}</h2><table><thead><tr><th>host</th><th>drain</th><th>how</th></tr></thead><tbody>
${rows}
</tbody></table></section>`;
}

const RUN_DRAIN_TEXT: Record<string, string> = {
  drained: 'drained (taken out by this run)',
  'taken-over': 'taken over from a dead run',
  already: "already out of scheduling (someone else's), left as it is",
  failed: 'DRAIN FAILED, nothing disruptive applied',
  would: 'would be drained (check mode)',
  blocked: "BLOCKED by another racksmith run's drain (check mode)",
  resumed: 'put back (resumed)',
  'not-resumed': 'NOT PUT BACK (the resume failed)',
  'someone-elses': "left out of scheduling: someone else's drain since, not this run's to put back",
};

/** A run's Drains section: the nodes it left out of scheduling, those taken over since, then each drain and resume in order. */
function runDrainsHtml(d: RunDrains): string {
  const row = (host: string, kind: string, text: string, how: string, detail?: string) =>
    `<tr data-host="${esc(host)}" data-drain="${esc(kind)}"><td>${esc(host)}</td>` +
    `<td><span class="st s-drain-${esc(kind)}">${esc(text)}</span>${detail !== undefined ? `<div class="note">${esc(detail)}</div>` : ''}</td><td>${esc(how)}</td></tr>`;
  const events = d.events.map((e) => {
    const kind = drainKind(e);
    return row(e.host, kind, RUN_DRAIN_TEXT[kind] ?? kind, drainHowText(e), e.detail);
  });
  const out = d.stillOut.map((s) => row(s.host, 'still-out', 'STILL OUT OF SCHEDULING', drainHowText(s), s.why));
  const still = out.length
    ? `<h3 class="warning">Still out of scheduling: ${out.length} node${out.length === 1 ? '' : 's'} this run took out and did not put back</h3><table class="still-out"><thead><tr><th>host</th><th>state</th><th>how</th></tr></thead><tbody>
${out.join('\n')}
</tbody></table>`
    : '';
  const taken = d.takenOver.map((t) =>
    row(t.host, 'taken-over-by', `${t.found ? 'found not out' : 'taken over'} by run ${t.by}`, drainHowText(t), takenOverText(t)),
  );
  const handedOver = taken.length
    ? `<h3>Taken over by a later run: ${taken.length} node${taken.length === 1 ? '' : 's'} this run took out, no longer its to put back</h3><table class="taken-over-by"><thead><tr><th>host</th><th>state</th><th>how</th></tr></thead><tbody>
${taken.join('\n')}
</tbody></table>`
    : '';
  return `<section id="drains"><h2>${esc(RUN_DRAINS_HEADING.replace(/:$/, ''))}</h2>${still}${handedOver}<table><thead><tr><th>host</th><th>drain</th><th>how</th></tr></thead><tbody>
${events.join('\n')}
</tbody></table></section>`;
}

const STATUSES = ['changed', 'pending', 'failed', 'unreachable', 'unfinished', 'ok'];

/**
 * The report as one self-contained page: inline CSS and one inline script (allowed by its hash in
 * the page's Content-Security-Policy, which also forbids anything fetched: no network, and markup
 * that escaping let through could run nothing). The content is rendered here, so the page reads
 * and prints without its script; the script only filters and switches views.
 */
export function reportHtml(report: Report): string {
  const groups = groupItems(report);
  const scriptHash = createHash('sha256').update(PAGE_SCRIPT).digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${scriptHash}'`;
  const totals = hostTotals(report.hosts)
    .map(([s, n]) => `<span class="st s-${s}">${n} ${s}</span>`)
    .join(' ');
  const warnings = report.warnings.map((w) => `<p class="warning">WARNING: ${esc(w)}</p>`).join('');
  const meta = report.meta.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join('');
  const options = STATUSES.map((s) => `<option value="${s}">${s}</option>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(report.title)}</title>
<style>${PAGE_CSS}</style>
</head><body>
<header>${warnings}<h1>${esc(report.title)}</h1><dl class="meta">${meta}</dl>
<p class="totals">${report.hosts.length} host${report.hosts.length === 1 ? '' : 's'}: ${totals} · ${groups.length} distinct change${groups.length === 1 ? '' : 's'}</p></header>
<nav class="controls" aria-label="filters">
<input id="f-host" placeholder="host" aria-label="host"><input id="f-group" placeholder="group" aria-label="group">
<input id="f-play" placeholder="play" aria-label="play"><input id="f-resource" placeholder="resource" aria-label="resource">
<select id="f-status" aria-label="status"><option value="">any status</option>${options}</select>
<button type="button" id="v-grouped" aria-pressed="true">grouped</button><button type="button" id="v-hosts" aria-pressed="false">per host</button>
<label><input type="checkbox" id="f-diffs"> diffs open</label> <span id="shown" aria-live="polite"></span>
</nav>
<main>
<section id="grouped"><h2>Changes, each once with its hosts</h2>${groups.length ? groups.map(groupHtml).join('\n') : '<p>No changes.</p>'}</section>
<section id="hosts"><h2>Per host</h2><table><thead><tr><th>host</th><th>groups</th><th>status</th><th>changes</th></tr></thead><tbody>
${hostRows(report, groups)}
</tbody></table></section>
${report.drains ? drainsHtml(report.drains) : ''}${report.runDrains ? runDrainsHtml(report.runDrains) : ''}
</main>
${warnings ? `<footer>${warnings}</footer>` : ''}
<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}
