// Issue #37, plan show and runs show: each distinct change once with its hosts, per host the
// changes it has, and the HTML page inert whatever a diff holds (host data is escaped; the
// page's one script is allowed by its hash, nothing else could run).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { groupItems, groupsByHost, hostTotals, type Report, type ReportItem } from '../../src/report/model.ts';
import { esc, reportHtml } from '../../src/report/html.ts';
import { PAGE_SCRIPT } from '../../src/report/page-assets.ts';
import { reportJson, reportText } from '../../src/report/text.ts';

const item = (host: string, over: Partial<ReportItem> = {}): ReportItem => ({
  host,
  play: 'tuning',
  id: 'sysctl:net.core.somaxconn',
  kind: 'sysctl',
  status: 'changed',
  summaries: ['net.core.somaxconn: 4096 → 65535'],
  diffs: [],
  ...over,
});

const report = (items: ReportItem[], names = ['h1', 'h2', 'h3']): Report => ({
  kind: 'plan',
  title: 'Plan p.plan',
  meta: [['made', '2026-01-01T00:00:00Z']],
  warnings: [],
  hosts: names.map((name) => ({ name, groups: ['rack1'], status: items.some((i) => i.host === name) ? 'changed' : 'ok' })),
  items,
});

describe('groupItems', () => {
  it.each<[string, ReportItem[], Array<{ id: string; hosts: string[] }>]>([
    [
      'one change on two hosts: one group, hosts in report order',
      [item('h2'), item('h1')],
      [{ id: 'sysctl:net.core.somaxconn', hosts: ['h1', 'h2'] }],
    ],
    [
      'another value: another group',
      [item('h1'), item('h2', { summaries: ['net.core.somaxconn: 128 → 65535'] })],
      [
        { id: 'sysctl:net.core.somaxconn', hosts: ['h1'] },
        { id: 'sysctl:net.core.somaxconn', hosts: ['h2'] },
      ],
    ],
    [
      'the same summary, another diff: another group',
      [item('h1', { diffs: ['-a\n+b\n'] }), item('h2', { diffs: ['-a\n+c\n'] })],
      [
        { id: 'sysctl:net.core.somaxconn', hosts: ['h1'] },
        { id: 'sysctl:net.core.somaxconn', hosts: ['h2'] },
      ],
    ],
    [
      'the same change in another play: another group',
      [item('h1'), item('h2', { play: 'other' })],
      [
        { id: 'sysctl:net.core.somaxconn', hosts: ['h1'] },
        { id: 'sysctl:net.core.somaxconn', hosts: ['h2'] },
      ],
    ],
    [
      'pending and changed apart',
      [item('h1'), item('h2', { status: 'pending', note: 'mkfs:/dev/sdb' })],
      [
        { id: 'sysctl:net.core.somaxconn', hosts: ['h1'] },
        { id: 'sysctl:net.core.somaxconn', hosts: ['h2'] },
      ],
    ],
    [
      'a host listed once, even if recorded twice',
      [item('h1'), item('h1'), item('h3')],
      [{ id: 'sysctl:net.core.somaxconn', hosts: ['h1', 'h3'] }],
    ],
    ['nothing: no group', [], []],
  ])('%s', (_, items, want) => {
    expect(groupItems(report(items)).map((g) => ({ id: g.id, hosts: g.hosts }))).toEqual(want);
  });

  it('per host: the indexes of its groups; a host with none has an empty list', () => {
    const r = report([item('h1'), item('h2', { id: 'file:/etc/x', kind: 'file' }), item('h2')]);
    const groups = groupItems(r);
    expect(Object.fromEntries(groupsByHost(r, groups))).toEqual({ h1: [0], h2: [0, 1], h3: [] });
    expect(hostTotals(r.hosts)).toEqual([
      ['changed', 2],
      ['ok', 1],
    ]);
  });

  it('1,000 hosts with one identical change and 10 distinct ones: 11 groups, in well under a second', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `n${i}`);
    const items = names.flatMap((h, i) => [item(h), ...(i % 100 === 0 ? [item(h, { id: `file:/etc/${i}`, kind: 'file' })] : [])]);
    const t = performance.now();
    const groups = groupItems(report(items, names));
    expect(groups.length).toBe(11);
    expect(groups[0].hosts.length).toBe(1000);
    expect(performance.now() - t).toBeLessThan(1000);
  });
});

describe('text and JSON', () => {
  it('text: the distinct change once with its hosts and its diff, then per host', () => {
    const text = reportText(report([item('h1', { diffs: ['--- a\n+++ a\n-x\n+y\n'] }), item('h2', { diffs: ['--- a\n+++ a\n-x\n+y\n'] })]));
    expect(text).toMatch(
      /\[1\] tuning \/ sysctl:net.core.somaxconn \(changed\) on 2 host\(s\): h\[1-2\] \(2 hosts\)\n {6}net.core.somaxconn: 4096 → 65535\n {6}\| --- a/,
    );
    expect(text).toMatch(/Per host:\n {2}h1 \(changed\): \[1\] sysctl:net.core.somaxconn\n {2}h2 \(changed\): \[1\]/);
    expect(text).toMatch(/1 host\(s\) with no change/);
  });

  it('text: control characters of a diff are shown escaped, never sent to the terminal', () => {
    expect(reportText(report([item('h1', { diffs: ['+\x1b[2Jcleared\n'] })]))).toContain('| +\\x1b[2Jcleared');
  });

  it('a warning opens and closes the text, and is in the JSON', () => {
    const r = { ...report([item('h1')]), warnings: ['signature does not verify'] };
    expect(reportText(r)).toMatch(/^WARNING: signature does not verify\n[^]*WARNING: signature does not verify\n$/);
    expect(JSON.parse(reportJson(r)).warnings).toEqual(['signature does not verify']);
  });

  it('JSON: the groups with their hosts, each host with the indexes of its changes', () => {
    const j = JSON.parse(reportJson(report([item('h1'), item('h2')])));
    expect(j.groups).toEqual([expect.objectContaining({ id: 'sysctl:net.core.somaxconn', hosts: ['h1', 'h2'] })]);
    expect(j.hosts.map((h: { name: string; changes: number[] }) => [h.name, h.changes])).toEqual([
      ['h1', [0]],
      ['h2', [0]],
      ['h3', []],
    ]);
  });
});

describe('the HTML page', () => {
  const evil = '</script><img src=x onerror=alert(1)><script>alert(2)</script>';
  const hostile = report(
    [
      item('h1', {
        id: `file:/etc/${evil}`,
        summaries: [`update ${evil}`],
        diffs: [`--- a\n+++ a\n-old\n+${evil}\n`],
        note: `"' onmouseover=alert(3) x='`,
        status: 'pending',
      }),
    ],
    ['h1', `h2${evil}`],
  );
  hostile.meta.push(['argv', evil]);
  hostile.warnings.push(evil);
  const page = reportHtml(hostile);

  it('a diff line holding </script><img onerror=...> renders as text: no tag, no handler, one script', () => {
    expect(page).not.toContain('<img');
    expect(page).not.toMatch(/onerror=alert\(1\)>/);
    expect(page.match(/<script\b/g)).toHaveLength(1);
    expect(page.match(/<\/script>/g)).toHaveLength(1);
    expect(page).toContain('+&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;');
    // an attribute value cannot be closed early
    expect(page).not.toMatch(/onmouseover=alert\(3\) x='/);
    expect(page).toContain('&quot;&#39; onmouseover=alert(3) x=&#39;');
  });

  it('the page allows only its own script (by hash) and fetches nothing', () => {
    const hash = createHash('sha256').update(PAGE_SCRIPT).digest('base64');
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(page)?.[1];
    expect(csp).toBe(`default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${hash}'`);
    expect(page).toContain(`<script>${PAGE_SCRIPT}</script>`);
    expect(page).not.toMatch(/\b(src|href)="(https?:|\/\/)/);
  });

  it('every host, its groups and status; each change links to its place', () => {
    const p = reportHtml(report([item('h1'), item('h2')]));
    expect(p).toContain('data-hosts="h1 h2"');
    expect(p).toMatch(/<tr data-host="h3" data-groups="rack1" data-status="ok" data-changes="">/);
    expect(p).toContain('<a href="#g1">[1] sysctl:net.core.somaxconn</a>');
    expect(p).toContain('<article class="change" id="g1"');
  });

  it.each([
    ['&', '&amp;'],
    ['<b>', '&lt;b&gt;'],
    [`"'`, '&quot;&#39;'],
    ['plain', 'plain'],
  ])('esc(%j) = %j', (raw, want) => expect(esc(raw)).toBe(want));
});
