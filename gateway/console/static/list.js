// One resource as the server's own Table (its printer columns), paged with limit/continue, then followed by a
// watch from the list's resourceVersion: new, changed and deleted rows are marked where they are.

import { ApiError, TABLE, collectionPath, get, watch } from './api.js';
import { failure, h } from './dom.js';
import { VirtualTable } from './table.js';

const PAGE = 500;

function cellText(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export async function showList(main, ctx, res, params) {
  const allNamespaces = res.namespaced && !ctx.namespace;
  const label = h('input', { type: 'search', name: 'labelSelector', placeholder: 'label selector (app=web,tier!=db)', value: params.get('label') || '' });
  const field = h('input', { type: 'search', name: 'fieldSelector', placeholder: 'field selector (status.phase=Running)', value: params.get('field') || '' });
  const search = h('input', { type: 'search', name: 'search', placeholder: 'name contains', value: params.get('q') || '' });
  const status = h('span', { class: 'status', role: 'status' }, 'loading');
  const problem = h('div');
  const select = () => {
    const q = new URLSearchParams();
    if (label.value) q.set('label', label.value);
    if (field.value) q.set('field', field.value);
    if (search.value) q.set('q', search.value);
    location.hash = `#/r/${res.group || 'core'}/${res.version}/${res.resource}${q.toString() ? `?${q}` : ''}`;
  };
  const form = h('form', { class: 'toolbar', onsubmit: (e) => { e.preventDefault(); select(); } },
    label, field, search, h('button', { type: 'submit' }, 'Apply'), status);
  search.addEventListener('input', () => render());
  // Every served version of the resource, the preferred one first (the side bar lists only that one).
  const versions = ctx.resources.filter((r) => r.group === res.group && r.resource === res.resource);
  const switcher = versions.length > 1 ? h('span', { class: 'versions' }, versions.map((r) => (r.version === res.version
    ? h('strong', {}, r.version) : h('a', { href: `#/r/${r.group || 'core'}/${r.version}/${r.resource}` }, r.version)))) : null;
  main.append(h('h2', {}, res.kind, h('small', {}, ` ${res.group ? `${res.group}/` : ''}${res.version} · ${res.resource}`,
    res.namespaced ? ` · ${ctx.namespace || 'all namespaces'}` : ' · cluster'), switcher), form, problem);

  let table = null;
  const rows = new Map(); // namespace/name -> row
  let revision = '';

  const link = (ns, name) => h('a', { href: `#/o/${res.group || 'core'}/${res.version}/${res.resource}/${ns || '_'}/${encodeURIComponent(name)}` }, name);
  function toRow(def, row, state) {
    const meta = (row.object && row.object.metadata) || {};
    const key = `${meta.namespace || ''}/${meta.name}`;
    const cells = def.map((c, i) => (c.name === 'Name' ? link(meta.namespace, meta.name) : cellText(row.cells[i])));
    return { key, name: meta.name || '', state, cells: allNamespaces ? [meta.namespace || '', ...cells] : cells };
  }
  let chosen = null; // [definition, index] of the columns shown: priority 0, as kubectl without -o wide
  function ensureTable(tableDoc) {
    if (table) return;
    chosen = (tableDoc.columnDefinitions || []).map((c, i) => [c, i]).filter(([c]) => !c.priority);
    const shown = chosen.map(([c]) => ({ name: c.name, description: c.description }));
    table = new VirtualTable(allNamespaces ? [{ name: 'Namespace' }, ...shown] : shown);
    main.append(table.el);
  }
  // A watch's Table carries columnDefinitions in its first event only (as kube's): the list's index them all.
  function rowsOf(doc, state) {
    ensureTable(doc);
    return (doc.rows || []).map((r) => toRow(chosen.map(([c]) => c), { ...r, cells: chosen.map(([, i]) => r.cells[i]) }, state));
  }
  function render() {
    if (!table) return;
    const needle = search.value.trim().toLowerCase();
    const shown = [...rows.values()].filter((r) => !needle || r.name.toLowerCase().includes(needle));
    table.setRows(shown);
    status.textContent = `${shown.length} of ${rows.size} · revision ${revision}${ctx.watching ? ' · live' : ''}`;
  }

  const query = new URLSearchParams();
  if (label.value) query.set('labelSelector', label.value);
  if (field.value) query.set('fieldSelector', field.value);
  const base = collectionPath(res, ctx.namespace);
  try {
    let next = '';
    do {
      const q = new URLSearchParams(query);
      q.set('limit', PAGE);
      if (next) q.set('continue', next);
      const doc = await get(`${base}?${q}`, { accept: TABLE, signal: ctx.signal });
      for (const row of rowsOf(doc, '')) rows.set(row.key, row);
      next = (doc.metadata && doc.metadata.continue) || '';
      revision = (doc.metadata && doc.metadata.resourceVersion) || revision;
      render();
    } while (next && !ctx.signal.aborted);
  } catch (err) {
    if (ctx.signal.aborted) return;
    status.textContent = '';
    problem.append(failure(err));
    return;
  }
  if (!res.verbs.includes('watch')) return;
  follow();

  async function follow() {
    while (!ctx.signal.aborted) {
      const q = new URLSearchParams(query);
      q.set('watch', '1');
      q.set('resourceVersion', revision);
      q.set('allowWatchBookmarks', 'true');
      ctx.watching = true;
      render();
      try {
        await watch(`${base}?${q}`, onEvent, ctx.signal, TABLE);
      } catch (err) {
        if (ctx.signal.aborted) return;
        ctx.watching = false;
        render();
        if (err instanceof ApiError && err.code !== 410) { problem.append(failure(err)); return; }
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  function onEvent(event) {
    const doc = event.object || {};
    if (event.type === 'ERROR') {
      if (doc.code === 410) revision = '';
      throw new ApiError(doc.code || 500, doc);
    }
    const rv = doc.metadata && doc.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') { if (rv) revision = rv; return; }
    for (const row of rowsOf(doc, '')) {
      const meta = (doc.rows[0].object || {}).metadata || {};
      revision = meta.resourceVersion || rv || revision;
      if (event.type === 'DELETED') {
        const old = rows.get(row.key) || row;
        rows.set(row.key, { ...old, state: 'deleted' });
      } else {
        row.state = rows.has(row.key) ? 'changed' : 'new';
        rows.set(row.key, row);
      }
    }
    render();
  }
}
