// The console's only way to the server: ordinary API requests as the logged-in user. The bearer token lives in
// this tab's sessionStorage and goes in the Authorization header, never in a URL; no cookie carries it, so a
// request another site forges arrives without credentials (CSRF-safe by construction).

const KEY = 'capstan.console.token';
export const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io, application/json';
export const DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList, application/json';

export function token() { return sessionStorage.getItem(KEY) || ''; }
export function setToken(value) { if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY); }

export class ApiError extends Error {
  constructor(code, status) {
    super(status && status.message ? status.message : `HTTP ${code}`);
    this.code = code;
    this.status = status || {};
  }
  get forbidden() { return this.code === 403; }
}

function headers(extra) {
  const out = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) out.Authorization = `Bearer ${t}`;
  return out;
}

export async function request(method, path, { body, contentType, accept, signal } = {}) {
  const h = headers(accept ? { Accept: accept } : {});
  if (body !== undefined) h['Content-Type'] = contentType || 'application/json';
  const resp = await fetch(path, {
    method, headers: h, signal, cache: 'no-store', referrerPolicy: 'no-referrer',
    body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  });
  const text = await resp.text();
  let doc = null;
  try { doc = text ? JSON.parse(text) : null; } catch { doc = { message: text }; }
  if (!resp.ok) throw new ApiError(resp.status, doc);
  return doc;
}

export const get = (path, opts) => request('GET', path, opts);

// A plain-text answer (the /metrics exposition), failing as request() does.
export async function text(path) {
  const resp = await fetch(path, { headers: headers({ Accept: 'text/plain' }), cache: 'no-store' });
  const body = await resp.text();
  if (!resp.ok) {
    let doc = null;
    try { doc = JSON.parse(body); } catch { doc = { message: body }; }
    throw new ApiError(resp.status, doc);
  }
  return body;
}

// A watch: calls onEvent(event) for each JSON line until the signal aborts or the server ends the stream;
// resolves with the last resourceVersion seen.
export async function watch(path, onEvent, signal, accept) {
  const resp = await fetch(path, { headers: headers(accept ? { Accept: accept } : {}), signal, cache: 'no-store' });
  if (!resp.ok) {
    let doc = null;
    try { doc = await resp.json(); } catch { doc = null; }
    throw new ApiError(resp.status, doc);
  }
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}

// The path of a resource's collection (namespace '' for all namespaces or a cluster-scoped resource).
export function collectionPath(res, namespace) {
  const root = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  return res.namespaced && namespace ? `${root}/namespaces/${encodeURIComponent(namespace)}/${res.resource}`
    : `${root}/${res.resource}`;
}

export function objectPath(res, namespace, name) {
  return `${collectionPath(res, res.namespaced ? namespace : '')}/${encodeURIComponent(name)}`;
}

// Every served resource from aggregated discovery: [{group, version, resource, kind, namespaced, verbs,
// subresources}], the preferred version of each group first.
export async function discover() {
  const lists = await Promise.all([get('/api', { accept: DISCOVERY }), get('/apis', { accept: DISCOVERY })]);
  const out = [];
  for (const list of lists) {
    for (const group of list.items || []) {
      const name = group.metadata.name || '';
      for (const [index, version] of (group.versions || []).entries()) {
        for (const r of version.resources || []) {
          out.push({
            group: name, version: version.version, resource: r.resource,
            kind: (r.responseKind && r.responseKind.kind) || r.resource, namespaced: r.scope === 'Namespaced',
            verbs: r.verbs || [], subresources: (r.subresources || []).map((s) => s.subresource),
            preferred: index === 0,
          });
        }
      }
    }
  }
  return out;
}
