// One object: YAML and JSON (managedFields folded, each line's owners beside it), its events, owner and
// dependents, conditions, the changes a watch saw since the page opened (a diff between any two), and edits:
// server-side apply as fieldManager capstan-console, delete with a propagation policy, scale; dry-run first.

import { ApiError, collectionPath, get, objectPath, request, watch } from './api.js';
import { age, clear, failure, h } from './dom.js';
import { owners } from './fields.js';
import { diff } from './diff.js';
import { lines, toYAML } from './yaml.js';

export const MANAGER = 'capstan-console';
const APPLY = 'application/apply-patch+yaml';
const TABS = ['YAML', 'JSON', 'Events', 'Relations', 'Conditions', 'History', 'Edit'];

function withoutManaged(obj) {
  const copy = structuredClone(obj);
  if (copy.metadata) delete copy.metadata.managedFields;
  return copy;
}

function yamlView(obj) {
  const managed = (obj.metadata && obj.metadata.managedFields) || [];
  const rows = lines(withoutManaged(obj)).map(({ text, path }) => {
    const who = owners(managed, path);
    return h('div', { class: 'yline' }, h('code', {}, text), h('span', { class: 'owner' }, who.join(', ')));
  });
  return h('div', {},
    h('div', { class: 'yaml', 'aria-label': 'YAML' }, rows),
    h('details', { class: 'managed' }, h('summary', {}, `managedFields (${managed.length} managers)`),
      h('pre', {}, toYAML({ managedFields: managed }))));
}

function jsonView(obj) {
  const managed = (obj.metadata && obj.metadata.managedFields) || [];
  return h('div', {}, h('pre', { class: 'json' }, JSON.stringify(withoutManaged(obj), null, 2)),
    h('details', { class: 'managed' }, h('summary', {}, `managedFields (${managed.length} managers)`),
      h('pre', {}, JSON.stringify(managed, null, 2))));
}

function conditionsView(obj) {
  const conditions = (obj.status && obj.status.conditions) || [];
  if (!conditions.length) return h('p', {}, 'No conditions.');
  return h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Age'].map((c) => h('th', {}, c)))),
    h('tbody', {}, conditions.map((c) => h('tr', { class: c.status === 'True' ? 'ok' : 'warn' },
      h('td', {}, c.type), h('td', {}, c.status), h('td', {}, c.reason || ''), h('td', {}, c.message || ''),
      h('td', {}, age(c.lastTransitionTime || c.lastUpdateTime))))));
}

async function eventsView(obj, ctx) {
  const meta = obj.metadata;
  const events = ctx.resources.find((r) => r.group === '' && r.resource === 'events');
  if (!events) return h('p', {}, 'No events resource is served.');
  const path = `${collectionPath(events, meta.namespace || '')}?fieldSelector=${encodeURIComponent(`involvedObject.uid=${meta.uid}`)}`;
  const list = await get(path);
  const items = (list.items || []).sort((a, b) => Date.parse(b.lastTimestamp || b.eventTime || 0) - Date.parse(a.lastTimestamp || a.eventTime || 0));
  if (!items.length) return h('p', {}, 'No events.');
  return h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, ['Type', 'Reason', 'Age', 'From', 'Message'].map((c) => h('th', {}, c)))),
    h('tbody', {}, items.map((e) => h('tr', { class: e.type === 'Warning' ? 'warn' : '' },
      h('td', {}, e.type || ''), h('td', {}, e.reason || ''), h('td', {}, age(e.lastTimestamp || e.eventTime)),
      h('td', {}, (e.source && e.source.component) || e.reportingComponent || ''), h('td', {}, e.message || '')))));
}

function linkTo(ctx, apiVersion, kind, namespace, name) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const res = ctx.resources.find((r) => r.group === group && r.version === version && r.kind === kind);
  if (!res) return h('span', {}, `${kind} ${name}`);
  return h('a', { href: `#/o/${group || 'core'}/${version}/${res.resource}/${res.namespaced ? namespace : '_'}/${encodeURIComponent(name)}` }, `${kind} ${name}`);
}

async function relationsView(obj, ctx) {
  const meta = obj.metadata;
  const owned = (meta.ownerReferences || []).map((o) => h('li', {}, linkTo(ctx, o.apiVersion, o.kind, meta.namespace, o.name),
    o.controller ? ' (controller)' : '', o.blockOwnerDeletion ? ' · blocks owner deletion' : ''));
  const candidates = ctx.resources.filter((r) => r.preferred && r.verbs.includes('list') && !r.resource.includes('/')
    && (r.namespaced || !meta.namespace));
  const found = [];
  const queue = [...candidates];
  async function worker() {
    while (queue.length) {
      const res = queue.shift();
      try {
        const list = await get(collectionPath(res, meta.namespace || ''), { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json' });
        for (const item of list.items || []) {
          if ((item.metadata.ownerReferences || []).some((o) => o.uid === meta.uid)) {
            found.push(h('li', {}, linkTo(ctx, res.group ? `${res.group}/${res.version}` : res.version, res.kind, item.metadata.namespace, item.metadata.name)));
          }
        }
      } catch { /* a resource the user may not list shows no dependents */ }
    }
  }
  await Promise.all([1, 2, 3, 4, 5, 6].map(worker));
  return h('div', {}, h('h3', {}, 'Owners'), owned.length ? h('ul', {}, owned) : h('p', {}, 'None.'),
    h('h3', {}, 'Dependents'), found.length ? h('ul', {}, found) : h('p', {}, 'None found.'));
}

function applyBody(obj) {
  const copy = withoutManaged(obj);
  for (const key of ['resourceVersion', 'uid', 'creationTimestamp', 'generation', 'selfLink', 'deletionTimestamp']) {
    delete copy.metadata[key];
  }
  delete copy.status;
  return JSON.stringify(copy, null, 2);
}

function editView(obj, res, ctx, reload) {
  const meta = obj.metadata;
  const path = objectPath(res, meta.namespace, meta.name);
  const text = h('textarea', { class: 'editor', spellcheck: false, 'aria-label': 'apply configuration' }, applyBody(obj));
  const force = h('input', { type: 'checkbox', name: 'force' });
  const result = h('div', { class: 'result', role: 'status' });
  const show = (...nodes) => { clear(result).append(...nodes); };
  async function apply(dryRunOnly) {
    let body;
    try { body = JSON.parse(text.value); } catch (err) { show(h('div', { class: 'failure' }, `Not JSON: ${err.message}`)); return; }
    const q = `fieldManager=${MANAGER}${force.checked ? '&force=true' : ''}`;
    try {
      await request('PATCH', `${path}?${q}&dryRun=All`, { body, contentType: APPLY });
      if (dryRunOnly) { show(h('p', { class: 'ok' }, 'Dry run: the server would accept this.')); return; }
      await request('PATCH', `${path}?${q}`, { body, contentType: APPLY });
      show(h('p', { class: 'ok' }, 'Applied.'));
      reload();
    } catch (err) { show(failure(err)); }
  }
  const policy = h('select', { name: 'propagationPolicy' }, ['Background', 'Foreground', 'Orphan'].map((p) => h('option', {}, p)));
  async function remove() {
    const body = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: policy.value };
    try {
      // kube reads DeleteOptions from the body when there is one, and then ignores the query: dryRun goes in it
      await request('DELETE', path, { body: { ...body, dryRun: ['All'] } });
      show(h('p', {}, `Dry run: the server would delete ${meta.name} (${policy.value}).`),
        h('button', { type: 'button', class: 'danger confirm', onclick: async () => {
          try { await request('DELETE', path, { body }); show(h('p', { class: 'ok' }, 'Deleted.')); reload(); } catch (err) { show(failure(err)); }
        } }, 'Confirm delete'));
    } catch (err) { show(failure(err)); }
  }
  const parts = [h('h3', {}, 'Server-side apply'),
    h('p', { class: 'hint' }, `As fieldManager ${MANAGER}; JSON is YAML. Apply runs a dry run first; a conflict is shown as the server reports it.`),
    text,
    h('div', { class: 'toolbar' },
      h('button', { type: 'button', onclick: () => apply(true) }, 'Dry run'),
      h('button', { type: 'button', class: 'primary', onclick: () => apply(false) }, 'Apply'),
      h('label', {}, force, ' force (take the fields over)')),
    h('h3', {}, 'Delete'),
    h('div', { class: 'toolbar' }, h('label', {}, 'propagation ', policy), h('button', { type: 'button', class: 'danger remove', onclick: remove }, 'Delete…'))];
  if (res.subresources.includes('scale')) {
    const replicas = h('input', { type: 'number', min: 0, name: 'replicas', value: (obj.spec && obj.spec.replicas) ?? 0 });
    async function scale() {
      const body = { spec: { replicas: Number(replicas.value) } };
      try {
        await request('PATCH', `${path}/scale?dryRun=All`, { body, contentType: 'application/merge-patch+json' });
        await request('PATCH', `${path}/scale`, { body, contentType: 'application/merge-patch+json' });
        show(h('p', { class: 'ok' }, `Scaled to ${replicas.value}.`));
        reload();
      } catch (err) { show(failure(err)); }
    }
    parts.push(h('h3', {}, 'Scale'), h('div', { class: 'toolbar' }, h('label', {}, 'replicas ', replicas), h('button', { type: 'button', class: 'scale', onclick: scale }, 'Scale')));
  }
  parts.push(result);
  return h('div', { class: 'edit' }, parts);
}

function historyView(history) {
  if (history.length < 2) return h('p', {}, `${history.length} version seen since the page opened; changes appear here as they happen.`);
  const options = () => history.map((v, i) => h('option', { value: i }, `${v.resourceVersion} · ${v.type} · ${v.seen.toLocaleTimeString()}`));
  const from = h('select', { name: 'from', 'aria-label': 'from' }, options());
  const to = h('select', { name: 'to', 'aria-label': 'to' }, options());
  from.value = String(history.length - 2);
  to.value = String(history.length - 1);
  const out = h('pre', { class: 'diff' });
  const render = () => {
    clear(out);
    for (const d of diff(toYAML(withoutManaged(history[from.value].object)), toYAML(withoutManaged(history[to.value].object)))) {
      out.append(h('span', { class: d.op === '+' ? 'add' : d.op === '-' ? 'del' : '' }, `${d.op} ${d.text}\n`));
    }
  };
  from.addEventListener('change', render);
  to.addEventListener('change', render);
  render();
  return h('div', {}, h('div', { class: 'toolbar' }, h('label', {}, 'from ', from), h('label', {}, 'to ', to)), out);
}

export async function showObject(main, ctx, res, namespace, name) {
  const path = objectPath(res, namespace, name);
  const title = h('h2', {}, res.kind, ' ', h('span', { class: 'name' }, name), namespace ? h('small', {}, ` in ${namespace}`) : null);
  const tabs = h('div', { class: 'tabs', role: 'tablist' });
  const body = h('div', { class: 'tabbody', role: 'tabpanel' });
  main.append(title, tabs, body);
  let obj;
  const history = [];
  let tab = 'YAML';
  try {
    obj = await get(path, { signal: ctx.signal });
  } catch (err) {
    main.append(failure(err));
    return;
  }
  history.push({ resourceVersion: obj.metadata.resourceVersion, type: 'GET', seen: new Date(), object: obj });
  async function show(which) {
    tab = which;
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.textContent === which));
    clear(body).append(h('p', { class: 'hint' }, 'loading'));
    try {
      const view = {
        YAML: () => yamlView(obj), JSON: () => jsonView(obj), Conditions: () => conditionsView(obj),
        Events: () => eventsView(obj, ctx), Relations: () => relationsView(obj, ctx),
        History: () => historyView(history), Edit: () => editView(obj, res, ctx, reload),
      }[which];
      const node = await view();
      if (tab === which) clear(body).append(node);
    } catch (err) { clear(body).append(failure(err)); }
  }
  async function reload() {
    try { obj = await get(path, { signal: ctx.signal }); } catch { /* the watch reports it */ }
  }
  for (const name of TABS) tabs.append(h('button', { type: 'button', role: 'tab', onclick: () => show(name) }, name));
  show('YAML');
  if (!res.verbs.includes('watch')) return;
  const q = new URLSearchParams({ watch: '1', resourceVersion: obj.metadata.resourceVersion, fieldSelector: `metadata.name=${name}` });
  const live = h('span', { class: 'status live' }, 'live');
  title.append(' ', live);
  try {
    await watch(`${collectionPath(res, res.namespaced ? namespace : '')}?${q}`, (event) => {
      if (!event.object || !event.object.metadata || event.type === 'BOOKMARK') return;
      if (event.type === 'ERROR') throw new ApiError(event.object.code || 500, event.object);
      obj = event.object;
      history.push({ resourceVersion: obj.metadata.resourceVersion, type: event.type, seen: new Date(), object: obj });
      live.textContent = event.type === 'DELETED' ? 'deleted' : `live · ${history.length - 1} change${history.length === 2 ? '' : 's'} seen`;
      if (tab !== 'Edit') show(tab);
    }, ctx.signal);
  } catch (err) {
    if (!ctx.signal.aborted) live.textContent = `not live: ${err.message}`;
  }
}
