// The cluster at a glance: namespaces, object counts per resource, recent events, the store's revision, the
// controllers' leader, the store's size, request rates and latencies from the server's own /metrics (small charts, sampled while
// the page is open), and nodes and Pods by phase when there are (simulated) nodes. Each part asks as the user:
// what RBAC refuses says so in its place.

import { collectionPath, get, text } from './api.js';
import { age, clear, failure, h } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const SAMPLE = 2000; // ms between /metrics samples
const KEEP = 60; // samples each chart keeps

function card(title, ...children) { return h('section', { class: 'card' }, h('h3', {}, title), ...children); }

async function part(el, build) {
  try { clear(el).append(await build()); } catch (err) { clear(el).append(failure(err)); }
}

function chart(values, unit) {
  const width = 240;
  const height = 60;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('class', 'chart');
  const top = Math.max(...values, 1e-9);
  const points = values.map((v, i) => `${(i / Math.max(1, KEEP - 1)) * width},${height - (v / top) * (height - 4) - 2}`);
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('points', points.join(' '));
  svg.append(line);
  const last = values.length ? values[values.length - 1] : 0;
  return h('figure', {}, svg, h('figcaption', {}, `${last.toFixed(unit === 'ms' ? 1 : 2)} ${unit} (max ${top.toFixed(2)})`));
}

// The sums of the named metric families from Prometheus' text format.
function sums(text, names) {
  const out = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const name = line.split(/[{ ]/, 1)[0];
    if (name in out) out[name] += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  }
  return out;
}

export async function showOverview(main, ctx) {
  const namespaces = h('div');
  const counts = h('div');
  const events = h('div');
  const store = h('div');
  const metrics = h('div');
  const nodes = h('div');
  const storeSize = h('p', { class: 'hint', id: 'store-size' });
  main.append(h('h2', {}, 'Overview'), h('div', { class: 'cards' },
    card('Store', store, storeSize), card('Requests', metrics), card('Nodes and Pods', nodes), card('Namespaces', namespaces),
    card('Objects', counts), card('Recent events', events)));
  const byName = (group, resource) => ctx.resources.find((r) => r.group === group && r.resource === resource && r.preferred);

  part(namespaces, async () => {
    const list = await get('/api/v1/namespaces');
    return h('ul', { class: 'plain' }, list.items.map((n) => h('li', {}, n.metadata.name, ' ', h('small', {}, n.status.phase || ''))));
  });
  part(store, async () => {
    const list = await get('/api/v1/namespaces?limit=1');
    const rows = [h('dt', {}, 'revision'), h('dd', {}, list.metadata.resourceVersion)];
    try {
      const lease = await get('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/capstan-controllers');
      rows.push(h('dt', {}, 'controllers\' leader'), h('dd', {}, lease.spec.holderIdentity || 'none'));
    } catch { /* no controllers elected, or not the user's to see */ }
    try {
      const version = await get('/version');
      rows.push(h('dt', {}, 'version'), h('dd', {}, version.gitVersion));
    } catch { /* not the user's to see */ }
    return h('dl', {}, rows);
  });
  part(counts, async () => {
    const listable = ctx.resources.filter((r) => r.preferred && r.verbs.includes('list'));
    const found = [];
    const queue = [...listable];
    await Promise.all([1, 2, 3, 4, 5, 6].map(async () => {
      while (queue.length) {
        const res = queue.shift();
        try {
          const list = await get(`${collectionPath(res, ctx.namespace)}?limit=1`, { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json' });
          const n = (list.items || []).length + ((list.metadata && list.metadata.remainingItemCount) || 0);
          if (n) found.push([res, n]);
        } catch { /* not the user's to list */ }
      }
    }));
    found.sort((a, b) => b[1] - a[1]);
    return h('table', { class: 'grid' }, h('tbody', {}, found.map(([res, n]) => h('tr', {},
      h('td', {}, h('a', { href: `#/r/${res.group || 'core'}/${res.version}/${res.resource}` }, res.resource),
        res.group ? h('small', {}, ` ${res.group}`) : null), h('td', { class: 'num' }, String(n))))));
  });
  part(events, async () => {
    const list = await get(`${ctx.namespace ? `/api/v1/namespaces/${ctx.namespace}` : '/api/v1'}/events?limit=500`);
    const items = list.items.sort((a, b) => Date.parse(b.lastTimestamp || b.eventTime || 0) - Date.parse(a.lastTimestamp || a.eventTime || 0)).slice(0, 15);
    if (!items.length) return h('p', {}, 'No events.');
    return h('ul', { class: 'plain events' }, items.map((e) => h('li', { class: e.type === 'Warning' ? 'warn' : '' },
      h('small', {}, age(e.lastTimestamp || e.eventTime), ' '), h('strong', {}, e.reason || ''), ' ',
      `${e.involvedObject.kind}/${e.involvedObject.name}: ${e.message || ''}`)));
  });
  part(nodes, async () => {
    const nodeList = await get('/api/v1/nodes');
    if (!nodeList.items.length) return h('p', {}, 'No nodes (start the server with --nodes N for simulated ones).');
    const ready = nodeList.items.filter((n) => (n.status.conditions || []).some((c) => c.type === 'Ready' && c.status === 'True')).length;
    const pods = await get(`${ctx.namespace ? `/api/v1/namespaces/${ctx.namespace}` : '/api/v1'}/pods`);
    const phases = {};
    for (const p of pods.items) phases[(p.status && p.status.phase) || 'Unknown'] = (phases[(p.status && p.status.phase) || 'Unknown'] || 0) + 1;
    return h('dl', {}, h('dt', {}, 'nodes ready'), h('dd', {}, `${ready} / ${nodeList.items.length}`),
      Object.entries(phases).map(([phase, n]) => [h('dt', {}, `pods ${phase}`), h('dd', {}, String(n))]));
  });

  const rates = [];
  const latencies = [];
  let last = null;
  async function sample() {
    return sums(await text('/metrics'), ['apiserver_request_total', 'apiserver_request_duration_seconds_sum',
      'apiserver_request_duration_seconds_count', 'apiserver_storage_size_bytes']);
  }
  async function tick() {
    try {
      const now = await sample();
      const at = Date.now();
      if (last) {
        const seconds = (at - last.at) / 1000;
        const count = now.apiserver_request_duration_seconds_count - last.now.apiserver_request_duration_seconds_count;
        rates.push((now.apiserver_request_total - last.now.apiserver_request_total) / seconds);
        latencies.push(count > 0 ? ((now.apiserver_request_duration_seconds_sum - last.now.apiserver_request_duration_seconds_sum) / count) * 1000 : 0);
        if (rates.length > KEEP) { rates.shift(); latencies.shift(); }
      }
      last = { now, at };
      const size = now.apiserver_storage_size_bytes;
      clear(storeSize).append(size ? `store size ${(size / 1048576).toFixed(1)} MiB` : '');
      clear(metrics).append(h('p', { class: 'hint' }, 'requests per second'), chart(rates, 'req/s'),
        h('p', { class: 'hint' }, 'mean latency'), chart(latencies, 'ms'));
    } catch (err) {
      clear(metrics).append(failure(err));
      return;
    }
    if (!ctx.signal.aborted) setTimeout(tick, SAMPLE);
  }
  tick();
}
