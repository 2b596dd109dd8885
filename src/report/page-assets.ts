/**
 * The report page's inline CSS and script (html.ts). The script's text is hashed into the page's
 * Content-Security-Policy: it must be this constant, never built from report data.
 */

export const PAGE_CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fff}
header,main{padding:0 1rem}
h1{font-size:1.3rem;margin:.6rem 0}
h2{font-size:1.1rem;margin:1rem 0 .4rem}
h3{font-size:1rem;margin:0 0 .3rem;font-weight:600}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;margin:.4rem 0}
dl.meta dt{color:#555}
dl.meta dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
.warning{background:#b00020;color:#fff;padding:.5rem 1rem;font-weight:700;margin:.4rem 0}
.controls{position:sticky;top:0;background:#f4f4f4;border-bottom:1px solid #ccc;padding:.4rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;z-index:1}
.controls input[type=text],.controls input:not([type]){width:9rem}
button[aria-pressed=true]{font-weight:700}
.change{border:1px solid #ddd;border-radius:4px;padding:.5rem .7rem;margin:.5rem 0}
.sum{margin:.2rem 0 .3rem 1.2rem;padding:0;font-family:ui-monospace,monospace}
.note{color:#8a4b00;margin:.2rem 0}
.hosts{margin:.3rem 0 0;font-family:ui-monospace,monospace;font-size:12px}
.hn{display:inline-block;margin-right:.4rem}
.n,.count{color:#666;font-weight:400}
.st{display:inline-block;border-radius:3px;padding:0 .35rem;font-size:12px;color:#fff;background:#777}
.s-changed{background:#a05a00}.s-pending{background:#5a4fa0}.s-failed,.s-unreachable,.s-unfinished{background:#b00020}.s-ok{background:#2e7d32}
.s-drain-would,.s-drain-may,.s-drain-drained,.s-drain-taken-over{background:#a05a00}.s-drain-already,.s-drain-someone-elses{background:#5a4fa0}.s-drain-none,.s-drain-resumed{background:#2e7d32}
.s-drain-failed,.s-drain-blocked,.s-drain-not-resumed,.s-drain-still-out{background:#b00020}.s-drain-taken-over-by{background:#5a4fa0}
pre{background:#fafafa;border:1px solid #eee;padding:.4rem;overflow:auto;font:12px/1.35 ui-monospace,monospace;margin:.3rem 0}
pre .a{color:#116329;background:#e6ffec}pre .d{color:#82071e;background:#ffebe9}pre .hk{color:#0550ae}pre .f{color:#555}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;border-bottom:1px solid #eee;padding:.2rem .4rem;vertical-align:top}
td a{margin-right:.5rem;font-family:ui-monospace,monospace;font-size:12px}
.hidden{display:none!important}
@media print{
  .controls{display:none}
  .hidden{display:revert!important}
  #grouped,#hosts{display:block!important}
  .change{break-inside:avoid}
  pre{white-space:pre-wrap;overflow:visible}
  body{font-size:11px}
}
`;

export const PAGE_SCRIPT = `
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var changes = Array.prototype.slice.call(document.querySelectorAll('article.change'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('#hosts tbody tr'));
  // (the nodes still out of scheduling, and those taken over since, are not filtered: always shown)
  var drainRows = Array.prototype.slice.call(document.querySelectorAll('#drains table:not(.still-out):not(.taken-over-by) tbody tr'));
  var groupsOf = {};
  var rowOf = {};
  rows.forEach(function (r) { groupsOf[r.dataset.host] = r.dataset.groups ? r.dataset.groups.split(' ') : []; rowOf[r.dataset.host] = r; });
  var byNumber = {};
  changes.forEach(function (c, i) { byNumber[i + 1] = c; });
  var f = { host: $('f-host'), group: $('f-group'), play: $('f-play'), resource: $('f-resource'), status: $('f-status') };
  var has = function (text, part) { return !part || text.toLowerCase().indexOf(part) >= 0; };
  var val = function (el) { return el.value.trim().toLowerCase(); };
  // A host or group filter that is a whole name (a link's #host=n1) means that one, not n10 too;
  // any other text is searched for in the names.
  var names = function (list) { var o = {}; list.forEach(function (n) { o[n.toLowerCase()] = true; }); return o; };
  var hostNames = names(Object.keys(groupsOf));
  var groupNames = names([].concat.apply([], Object.keys(groupsOf).map(function (h) { return groupsOf[h]; })));
  var named = function (name, q, all) { return !q || (all[q] ? name.toLowerCase() === q : has(name, q)); };
  function hostMatches(h, q) {
    if (!named(h, q.host, hostNames)) return false;
    if (!q.group) return true;
    return (groupsOf[h] || []).some(function (g) { return named(g, q.group, groupNames); });
  }
  function changeMatches(c, q) {
    return has(c.dataset.play, q.play) && (has(c.dataset.id, q.resource) || has(c.dataset.kind, q.resource)) &&
      (!q.status || c.dataset.status === q.status);
  }
  function apply() {
    var q = { host: val(f.host), group: val(f.group), play: val(f.play), resource: val(f.resource), status: f.status.value };
    var byHost = q.host || q.group;
    var shownChanges = 0;
    changes.forEach(function (c) {
      var hostEls = c.querySelectorAll('.hn');
      var any = 0;
      for (var i = 0; i < hostEls.length; i++) {
        var ok = !byHost || hostMatches(hostEls[i].textContent, q);
        hostEls[i].classList.toggle('hidden', !ok);
        if (ok) any++;
      }
      var show = changeMatches(c, q) && any > 0;
      c.classList.toggle('hidden', !show);
      if (show) shownChanges++;
    });
    var byChange = q.play || q.resource;
    var shownHosts = 0;
    rows.forEach(function (r) {
      var nums = r.dataset.changes ? r.dataset.changes.split(' ') : [];
      var show = hostMatches(r.dataset.host, q);
      if (show && byChange) show = nums.some(function (n) { return changeMatches(byNumber[n], { play: q.play, resource: q.resource }); });
      if (show && q.status) show = r.dataset.status === q.status || nums.some(function (n) { return byNumber[n].dataset.status === q.status; });
      r.classList.toggle('hidden', !show);
      if (show) shownHosts++;
    });
    // a drain follows its host: shown when the host's row is (every filter alike)
    var shownDrains = 0;
    drainRows.forEach(function (r) {
      var hostRow = rowOf[r.dataset.host];
      var show = hostRow ? !hostRow.classList.contains('hidden') : hostMatches(r.dataset.host, q) && !byChange && !q.status;
      r.classList.toggle('hidden', !show);
      if (show) shownDrains++;
    });
    $('shown').textContent = shownChanges + ' of ' + changes.length + ' changes, ' + shownHosts + ' of ' + rows.length + ' hosts' +
      (drainRows.length ? ', ' + shownDrains + ' of ' + drainRows.length + ' drains' : '');
  }
  function view(name) {
    $('grouped').classList.toggle('hidden', name !== 'grouped');
    $('hosts').classList.toggle('hidden', name !== 'hosts');
    $('v-grouped').setAttribute('aria-pressed', String(name === 'grouped'));
    $('v-hosts').setAttribute('aria-pressed', String(name === 'hosts'));
  }
  function openDiffs(open) {
    document.querySelectorAll('details.diff').forEach(function (d) { d.open = open; });
  }
  // A filtered view is a link (#host=tb3&status=changed&view=hosts): what a reviewer sends to
  // point at the hosts to look at. Read once at load; kept in step as the filters change.
  function fromHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    Object.keys(f).forEach(function (k) { if (p.has(k)) f[k].value = p.get(k); });
    return p.get('view') === 'hosts' ? 'hosts' : 'grouped';
  }
  function toHash() {
    var p = new URLSearchParams();
    Object.keys(f).forEach(function (k) { if (f[k].value) p.set(k, f[k].value); });
    if ($('grouped').classList.contains('hidden')) p.set('view', 'hosts');
    var h = p.toString();
    try { history.replaceState(null, '', h ? '#' + h : location.pathname + location.search); } catch (e) { /* a page the browser will not let rewrite its URL keeps it */ }
  }
  Object.keys(f).forEach(function (k) { f[k].addEventListener('input', function () { apply(); toHash(); }); });
  $('v-grouped').addEventListener('click', function () { view('grouped'); toHash(); });
  $('v-hosts').addEventListener('click', function () { view('hosts'); toHash(); });
  $('f-diffs').addEventListener('change', function (e) { openDiffs(e.target.checked); });
  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[href^="#g"]');
    if (a) view('grouped');
  });
  var wasOpen = [];
  window.addEventListener('beforeprint', function () {
    wasOpen = Array.prototype.map.call(document.querySelectorAll('details.diff'), function (d) { return d.open; });
    openDiffs(true);
  });
  window.addEventListener('afterprint', function () {
    document.querySelectorAll('details.diff').forEach(function (d, i) { d.open = !!wasOpen[i]; });
  });
  view(fromHash());
  apply();
})();
`;
