// Strom console: a client of the REST API (/api/v1) and of /metrics. No framework, no build.
'use strict';

const API = '/api/v1';
const $ = (sel) => document.querySelector(sel);

// el builds an element; text children are text nodes, never HTML.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function status(msg, isError) {
  const s = $('#status');
  s.textContent = msg;
  s.className = isError ? 'error' : '';
}

// api calls the REST API and throws the Fluss error of a failed call.
async function api(path, opts) {
  const r = await fetch(API + path, opts);
  if (r.status === 204) return null;
  const body = await r.json().catch(() => ({ message: r.statusText }));
  if (!r.ok) throw new Error((body.error_name ? body.error_name + ': ' : '') + (body.message || r.status));
  return body;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

// ---- views ----
const views = ['overview', 'tables', 'data', 'metrics'];
let current = '';

function show(view) {
  if (!views.includes(view)) view = 'overview';
  current = view;
  for (const v of views) $('#' + v).hidden = v !== view;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.view === view);
  if (location.hash !== '#' + view) history.replaceState(null, '', '#' + view);
  refresh();
}

function refresh() {
  const f = { overview: loadOverview, tables: loadTables, data: loadDataTables, metrics: async () => {} }[current];
  if (f) f().catch((e) => status(e.message, true));
}

// ---- overview ----
async function loadOverview() {
  const c = await api('/cluster');
  const h = c.health;
  $('#health').replaceChildren(
    el('div', { class: 'card ' + h.status }, 'health', el('b', {}, h.status)),
    el('div', { class: 'card' }, 'servers', el('b', {}, c.servers.length)),
    el('div', { class: 'card' }, 'buckets with leader', el('b', {}, h.buckets_with_leader + ' / ' + h.buckets)),
    el('div', { class: 'card' }, 'in-sync replicas', el('b', {}, h.in_sync_replicas + ' / ' + h.replicas)),
    el('div', { class: 'card' }, 'under-replicated', el('b', {}, h.under_replicated)),
    el('div', { class: 'card' }, 'etcd members', el('b', {}, (c.etcd_members || []).length)),
    el('div', { class: 'card' }, 'this node', el('b', {}, c.this_node ? (c.this_node.active_coordinator ? 'active coordinator' : 'standby') : '—')),
  );
  fill($('#servers tbody'), c.servers.map((s) => el('tr', {},
    el('td', { class: 'num' }, s.id), el('td', {}, s.type), el('td', {}, s.address),
    el('td', {}, s.type === 'coordinator' && s.id === c.active_coordinator ? 'yes' : ''))));
  const members = c.etcd_members || [];
  fill($('#etcd tbody'), members.map((m) => el('tr', {},
    el('td', {}, m.name), el('td', { class: 'mono' }, m.id), el('td', {}, m.client_urls.join(', ')), el('td', {}, m.peer_urls.join(', ')),
    el('td', {}, m.leader ? 'leader' : m.learner ? 'learner' : 'follower'))));
  if (c.etcd_error) status('etcd: ' + c.etcd_error, true);
  status('updated ' + new Date().toLocaleTimeString());
}

// ---- sizes ----
// bucketSizes reads the per-bucket size gauges of this node's /metrics: bytes of log segments
// and of primary-key state of the replicas this node's tablet server holds, by
// "database|table|partition|bucket". Buckets held only by other nodes are absent.
async function bucketSizes() {
  const text = await (await fetch('/metrics')).text();
  const out = {};
  const re = /^fluss_tabletserver_table_bucket_logicalStorage_(logSize|kvSize)\{([^}]*)\}\s+([0-9.e+]+)/;
  for (const line of text.split('\n')) {
    const m = line.match(re);
    if (!m) continue;
    const l = {};
    for (const kv of m[2].matchAll(/(\w+)="([^"]*)"/g)) l[kv[1]] = kv[2];
    const k = [l.database, l.table, l.partition || '', l.bucket].join('|');
    out[k] = out[k] || {};
    out[k][m[1]] = Number(m[3]);
  }
  return out;
}

function bytes(n) {
  if (n === undefined) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
}

// ---- tables ----
let tableNames = []; // "db.table"
let selected = -1;

async function listAllTables() {
  const dbs = (await api('/databases')).databases;
  const out = [];
  for (const db of dbs) {
    for (const t of (await api('/databases/' + encodeURIComponent(db) + '/tables')).tables) out.push(db + '.' + t);
  }
  return out;
}

function tableURL(name) {
  const i = name.indexOf('.');
  return '/databases/' + encodeURIComponent(name.slice(0, i)) + '/tables/' + encodeURIComponent(name.slice(i + 1));
}

async function loadTables() {
  tableNames = await listAllTables();
  const infos = await Promise.all(tableNames.map((n) => api(tableURL(n))));
  const filter = $('#table-filter').value.toLowerCase();
  const rows = [];
  infos.forEach((info, i) => {
    const name = tableNames[i];
    if (filter && !name.toLowerCase().includes(filter)) return;
    const kind = (info.primary_key.length ? 'primary key' : 'log') + (info.partition_keys.length ? ', partitioned' : '');
    const tr = el('tr', { tabindex: '0', 'data-name': name }, el('td', {}, name), el('td', {}, kind), el('td', { class: 'num' }, info.bucket_count));
    tr.addEventListener('click', () => selectTable(tr));
    tr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') selectTable(tr);
      if (e.key === 'ArrowDown' && tr.nextElementSibling) { e.preventDefault(); tr.nextElementSibling.focus(); }
      if (e.key === 'ArrowUp' && tr.previousElementSibling) { e.preventDefault(); tr.previousElementSibling.focus(); }
    });
    rows.push(tr);
  });
  fill($('#table-list tbody'), rows);
  status(tableNames.length + ' tables');
}

async function selectTable(tr) {
  for (const r of document.querySelectorAll('#table-list tr.sel')) r.classList.remove('sel');
  tr.classList.add('sel');
  const name = tr.dataset.name;
  const info = await api(tableURL(name));
  const d = $('#table-detail');
  const cols = el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'column'), el('th', {}, 'type'), el('th', {}, 'key'))),
    el('tbody', {}, ...info.columns.map((c) => el('tr', {}, el('td', {}, c.name), el('td', {}, c.type),
      el('td', {}, [info.primary_key.includes(c.name) ? 'PK' : '', info.partition_keys.includes(c.name) ? 'partition' : ''].filter(Boolean).join(', '))))));
  const parts = [];
  if (info.partition_keys.length) {
    for (const p of (await api(tableURL(name) + '/partitions')).partitions) parts.push(p.partition);
  } else {
    parts.push('');
  }
  const sections = [el('h3', {}, name + ' (id ' + info.table_id + ')'), cols];
  const sizes = await bucketSizes().catch(() => ({}));
  const db = name.slice(0, name.indexOf('.')), tb = name.slice(name.indexOf('.') + 1);
  for (const p of parts) {
    const b = await api(tableURL(name) + '/buckets' + (p ? '?partition=' + encodeURIComponent(p) : ''));
    sections.push(el('h3', {}, p ? 'partition ' + p : 'buckets'));
    sections.push(el('table', { class: 'buckets', 'data-partition': p },
      el('thead', {}, el('tr', {}, ...['bucket', 'leader', 'epoch', 'replicas', 'ISR', 'follower lag', 'earliest', 'latest', 'rows', 'log size', 'kv size'].map((h) => el('th', {}, h)))),
      el('tbody', {}, ...b.buckets.map((x) => {
        const s = sizes[[db, tb, p, x.bucket].join('|')] || {};
        const isr = x.isr || [];
        const short = x.isr && x.replicas && isr.length < x.replicas.length;
        return el('tr', { 'data-bucket': x.bucket, class: x.leader ? (short ? 'warn' : '') : 'bad' },
          el('td', { class: 'num' }, x.bucket),
          el('td', { class: 'leader' }, x.leader ? x.leader.id + ' (' + x.leader.address + ')' : 'none'),
          el('td', { class: 'num epoch' }, x.leader_epoch === undefined ? '' : x.leader_epoch),
          el('td', {}, (x.replicas || []).join(', ')),
          el('td', { class: 'isr' }, x.isr ? isr.join(', ') : '—'),
          el('td', { class: 'lag', title: x.followers_error || '' }, followerLag(x)),
          el('td', { class: 'num' }, x.earliest_offset), el('td', { class: 'num' }, x.latest_offset), el('td', { class: 'num' }, x.rows),
          el('td', { class: 'num' }, bytes(s.logSize)), el('td', { class: 'num' }, info.primary_key.length ? bytes(s.kvSize) : ''));
      }))));
  }
  sections.push(await lakeSection(name));
  d.replaceChildren(...sections);
  d.dataset.updated = String(Date.now());
}

// followerLag is "id: lag" per follower, out-of-sync ones marked; "—" when the leader could
// not be asked (the cell's title says why).
function followerLag(x) {
  if (!x.followers) return '—';
  if (!x.followers.length) return x.followers_error ? '?' : 'no followers';
  return x.followers.map((f) => f.id + ': ' + (f.lag === null ? '?' : f.lag) + (f.in_sync ? '' : ' (out of ISR)')).join(', ');
}

// lakeSection shows the lake tiering state of a table: off, no snapshot yet, or per bucket
// the snapshot's tiered offset against the latest offset.
async function lakeSection(name) {
  const l = await api(tableURL(name) + '/lake').catch((e) => ({ error: e.message }));
  const h = el('h3', {}, 'lake tiering');
  if (l.error) return el('div', { id: 'lake' }, h, el('p', { class: 'error' }, l.error));
  if (!l.datalake_enabled && l.snapshot_id === null) return el('div', { id: 'lake' }, h, el('p', { class: 'hint' }, 'off (table.datalake.enabled is not true)'));
  if (l.snapshot_id === null) return el('div', { id: 'lake' }, h, el('p', { class: 'hint' }, 'on (' + (l.format || 'lake') + '), no lake snapshot yet'));
  return el('div', { id: 'lake' }, h, el('p', {}, (l.datalake_enabled ? 'on' : 'off') + (l.format ? ' (' + l.format + ')' : '') + ', snapshot ' + l.snapshot_id),
    el('table', {}, el('thead', {}, el('tr', {}, ...['partition', 'bucket', 'tiered offset', 'latest offset', 'behind'].map((t) => el('th', {}, t)))),
      el('tbody', {}, ...l.buckets.map((b) => el('tr', {}, el('td', {}, b.partition || ''), el('td', { class: 'num' }, b.bucket),
        el('td', { class: 'num' }, b.tiered_offset), el('td', { class: 'num' }, b.latest_offset === undefined ? '' : b.latest_offset),
        el('td', { class: 'num' }, b.behind === undefined ? '' : b.behind))))));
}

// ---- data browser ----
let columns = [];
let tail = null;

async function loadDataTables() {
  const sel = $('#data-table');
  const keep = sel.value;
  const names = await listAllTables();
  sel.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
  if (names.includes(keep)) sel.value = keep;
  status(names.length + ' tables');
}

function cell(v) {
  if (v === null || v === undefined) return el('td', { class: 'hint' }, 'null');
  return el('td', {}, typeof v === 'object' ? JSON.stringify(v) : String(v));
}

function header(extra) {
  $('#rows thead').replaceChildren(el('tr', {}, ...extra.map((h) => el('th', {}, h)), ...columns.map((c) => el('th', {}, c))));
}

async function tableColumns() {
  const info = await api(tableURL($('#data-table').value));
  columns = info.columns.map((c) => c.name);
  return info;
}

function partitionQuery(sep) {
  const p = $('#data-partition').value.trim();
  return p ? sep + 'partition=' + encodeURIComponent(p) : '';
}

async function doScan() {
  stopTail();
  await tableColumns();
  const limit = $('#data-limit').value || 100;
  const r = await api(tableURL($('#data-table').value) + '/scan?limit=' + encodeURIComponent(limit) + partitionQuery('&'));
  header([]);
  fill($('#rows tbody'), r.rows.map((row) => el('tr', {}, ...columns.map((c) => cell(row[c])))));
  $('#data-info').textContent = r.rows.length + ' rows (limit scan)';
}

async function doLookup() {
  stopTail();
  await tableColumns();
  let key;
  try { key = JSON.parse($('#data-key').value); } catch (e) { throw new Error('key: not JSON: ' + e.message); }
  const r = await api(tableURL($('#data-table').value) + '/lookup', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ keys: [key] }),
  });
  header([]);
  const row = r.rows[0];
  fill($('#rows tbody'), row ? [el('tr', {}, ...columns.map((c) => cell(row[c])))] : []);
  $('#data-info').textContent = row ? '1 row' : 'no row with that key';
}

function stopTail() {
  if (tail) { tail.close(); tail = null; }
  $('#btn-tail').setAttribute('aria-pressed', 'false');
}

async function toggleTail() {
  if (tail) { stopTail(); $('#data-info').textContent += ' (stopped)'; return; }
  await tableColumns();
  header(['bucket', 'offset', 'change']);
  fill($('#rows tbody'), []);
  let n = 0;
  const src = new EventSource(API + tableURL($('#data-table').value) + '/tail?from=earliest' + partitionQuery('&'));
  tail = src;
  $('#btn-tail').setAttribute('aria-pressed', 'true');
  $('#data-info').textContent = 'tailing…';
  src.addEventListener('record', (e) => {
    const r = JSON.parse(e.data);
    const tr = el('tr', { class: 'new' }, el('td', { class: 'num' }, r.bucket), el('td', { class: 'num' }, r.offset), el('td', {}, r.change_type),
      ...columns.map((c) => cell(r.row[c])));
    const body = $('#rows tbody');
    body.prepend(tr);
    while (body.children.length > 500) body.lastChild.remove();
    n++;
    $('#data-info').textContent = 'tailing: ' + n + ' records';
  });
  src.addEventListener('error', (e) => {
    if (e.data) { status(JSON.parse(e.data).message, true); stopTail(); }
  });
}

// ---- metrics ----
const series = { writes: [], lookups: [], fetches: [], bytes: [], latency: [] };
// The "request" label values of server/metrics (Fluss's request metric names).
const groups = {
  writes: ['produceLog', 'putKv'],
  lookups: ['lookup', 'prefixLookup'],
  fetches: ['fetchLogClient'],
};
// The requests whose mean answer time the latency chart shows: what a client waits for.
const latencyRequests = [...groups.writes, ...groups.lookups];
const units = { writes: ' /s', lookups: ' /s', fetches: ' /s', bytes: ' kB/s', latency: ' µs' };
let last = null;

// scrape reads the fluss_*_request_* series of this node's Prometheus text, summed per request
// type over the coordinator and tablet-server scopes: requests answered, request and response
// bytes, and answer time. Each chart point is the change since the previous scrape.
async function scrape() {
  const text = await (await fetch('/metrics')).text();
  const sums = {}; // "metric request" -> value
  for (const line of text.split('\n')) {
    if (!line.startsWith('fluss_')) continue;
    const m = line.match(/_request_(requests_total|requestBytes_sum|responseBytes_sum|totalTime_seconds_sum|totalTime_seconds_count)\{[^}]*request="([A-Za-z_]+)"[^}]*}\s+([0-9.e+]+)/);
    if (m) sums[m[1] + ' ' + m[2]] = (sums[m[1] + ' ' + m[2]] || 0) + Number(m[3]);
  }
  const now = performance.now();
  if (last) {
    const dt = (now - last.t) / 1000;
    const delta = (metric, reqs) => reqs.reduce((a, r) => a + (sums[metric + ' ' + r] || 0) - (last.sums[metric + ' ' + r] || 0), 0);
    const point = {};
    for (const [k, reqs] of Object.entries(groups)) point[k] = delta('requests_total', reqs) / dt;
    const every = [...new Set(Object.keys(sums).map((k) => k.split(' ')[1]))];
    point.bytes = (delta('requestBytes_sum', every) + delta('responseBytes_sum', every)) / dt / 1e3;
    const answered = delta('totalTime_seconds_count', latencyRequests);
    point.latency = answered > 0 ? delta('totalTime_seconds_sum', latencyRequests) / answered * 1e6 : 0;
    for (const k of Object.keys(series)) {
      series[k].push(Math.max(0, point[k]));
      if (series[k].length > 60) series[k].shift();
    }
    draw();
  }
  last = { t: now, sums };
}

function draw() {
  for (const k of Object.keys(series)) {
    const s = series[k];
    const svg = $('#chart-' + k);
    if (!svg) continue;
    const max = Math.max(k === 'writes' || k === 'lookups' || k === 'fetches' ? 1 : 0.001, ...s);
    // The newest point at the right edge; 60 points (two minutes) fill the width.
    const pts = s.map((v, i) => (400 - (s.length - 1 - i) * 400 / 59).toFixed(1) + ',' + (110 - v / max * 100).toFixed(1)).join(' ');
    const ns = 'http://www.w3.org/2000/svg';
    const line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', pts);
    const axis = document.createElementNS(ns, 'line');
    for (const [a, v] of [['x1', 0], ['y1', 110], ['x2', 400], ['y2', 110]]) axis.setAttribute(a, v);
    const label = document.createElementNS(ns, 'text');
    label.setAttribute('x', 2); label.setAttribute('y', 10);
    const digits = 1;
    label.textContent = 'max ' + max.toFixed(digits) + units[k];
    svg.replaceChildren(axis, line, label);
    $('#val-' + k).textContent = (s.length ? s[s.length - 1] : 0).toFixed(digits) + units[k];
  }
}

// ---- wiring ----
document.addEventListener('keydown', (e) => {
  const typing = ['INPUT', 'SELECT', 'TEXTAREA'].includes(document.activeElement.tagName);
  if (e.key === 'Escape' && typing) { document.activeElement.blur(); return; }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const i = '1234'.indexOf(e.key);
  if (i >= 0) { show(views[i]); return; }
  if (e.key === 'r') refresh();
  if (e.key === '/') { e.preventDefault(); show('tables'); $('#table-filter').focus(); }
  if (current === 'data') {
    const run = (f) => f().catch((err) => status(err.message, true));
    if (e.key === 's') run(doScan);
    if (e.key === 'l') run(doLookup);
    if (e.key === 't') run(toggleTail);
  }
});
$('#table-filter').addEventListener('input', () => loadTables().catch((e) => status(e.message, true)));
$('#data-form').addEventListener('submit', (e) => { e.preventDefault(); doScan().catch((err) => status(err.message, true)); });
$('#btn-lookup').addEventListener('click', () => doLookup().catch((e) => status(e.message, true)));
$('#btn-tail').addEventListener('click', () => toggleTail().catch((e) => status(e.message, true)));
window.addEventListener('hashchange', () => show(location.hash.slice(1)));
setInterval(() => scrape().catch(() => {}), 2000);
// While the tables view shows a table, its buckets are re-read every 2 s, so a failover shows
// as it happens (new leader, epoch, shrunk ISR) without a keystroke.
let detailBusy = false; // one re-read at a time: a leader that does not answer takes up to 2 s
setInterval(() => {
  const sel = document.querySelector('#table-list tr.sel');
  if (current !== 'tables' || !sel || document.hidden || detailBusy) return;
  detailBusy = true;
  selectTable(sel).catch((e) => status(e.message, true)).finally(() => { detailBusy = false; });
}, 2000);
scrape().catch(() => {});
show(location.hash.slice(1));
