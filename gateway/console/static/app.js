// The console's shell: login (a one-time code from the URL's fragment, or a pasted token), the resources from
// discovery in the side bar (hiding, unless asked, what the user's rules do not let them list), the namespace
// picker, and the routes: #/overview, #/r/<group>/<version>/<resource>?label=&field=&q=, and
// #/o/<group>/<version>/<resource>/<namespace or _>/<name>.

import { ApiError, discover, get, request, setToken, token } from './api.js';
import { clear, failure, h } from './dom.js';
import { showList } from './list.js';
import { showObject } from './object.js';
import { showOverview } from './overview.js';

const NS_KEY = 'capstan.console.namespace';
const $ = (id) => document.getElementById(id);
const ctx = { resources: [], namespace: sessionStorage.getItem(NS_KEY) ?? 'default', allowed: null };
let current = null;

async function redeem(code) {
  const resp = await fetch('login', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }), cache: 'no-store',
  });
  const doc = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new ApiError(resp.status, doc);
  setToken(doc.token);
}

function showLogin(message) {
  $('shell').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('token').focus();
}

async function start() {
  const code = /^#code=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (code) {
    history.replaceState(null, '', location.pathname); // the code leaves the address bar and the history
    try { await redeem(code[1]); } catch (err) { showLogin(err.message); return; }
  }
  try {
    await get('/api');
  } catch (err) {
    if (err.code === 401 || (err.code === 403 && !token())) {
      showLogin(token() ? 'The server did not accept the token.' : '');
      return;
    }
  }
  $('login').hidden = true;
  $('shell').hidden = false;
  try {
    ctx.resources = await discover();
  } catch (err) {
    clear($('main')).append(failure(err));
    return;
  }
  whoami();
  namespaces();
  $('namespace').value = ctx.namespace;
  await rules();
  route();
}

async function whoami() {
  try {
    const review = await request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
    $('whoami').textContent = review.status.userInfo.username;
  } catch { $('whoami').textContent = token() ? 'token user' : 'anonymous'; }
}

async function namespaces() {
  try {
    const list = await get('/api/v1/namespaces');
    clear($('namespaces')).append(...list.items.map((n) => h('option', { value: n.metadata.name })));
  } catch { /* the user may not list namespaces: they type one */ }
}

// What the user may list in the namespace: their SelfSubjectRulesReview (null when it cannot be asked).
async function rules() {
  try {
    const review = await request('POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace: ctx.namespace || 'default' } },
    });
    ctx.allowed = review.status.resourceRules || [];
  } catch { ctx.allowed = null; }
  nav();
}

function mayList(res) {
  if (ctx.allowed === null) return true;
  const has = (list, value) => list && (list.includes('*') || list.includes(value));
  return ctx.allowed.some((r) => has(r.verbs, 'list') && has(r.apiGroups, res.group) && has(r.resources, res.resource));
}

function nav() {
  const filter = $('nav-filter').value.trim().toLowerCase();
  const all = $('show-all').checked;
  const groups = new Map();
  let hidden = 0;
  for (const res of ctx.resources) {
    if (!res.preferred || !res.verbs.includes('list')) continue;
    if (filter && !`${res.resource} ${res.kind} ${res.group}`.toLowerCase().includes(filter)) continue;
    const allowed = mayList(res);
    if (!allowed && !all) { hidden++; continue; }
    const key = res.group || 'core';
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(h('li', { class: allowed ? '' : 'denied' },
      h('a', { href: `#/r/${key}/${res.version}/${res.resource}`, dataset: { resource: `${key}/${res.resource}` } }, res.resource)));
  }
  const items = [h('li', {}, h('a', { href: '#/overview' }, 'Overview'))];
  for (const [group, links] of [...groups.entries()].sort(([a], [b]) => (a === 'core' ? -1 : b === 'core' ? 1 : a.localeCompare(b)))) {
    items.push(h('li', { class: 'group' }, h('span', {}, group), h('ul', {}, links)));
  }
  if (hidden) items.push(h('li', { class: 'hint', id: 'hidden-count' }, `${hidden} resources hidden: not yours to list`));
  clear($('resources')).append(...items);
}

function find(group, version, resource) {
  const g = group === 'core' ? '' : group;
  return ctx.resources.find((r) => r.group === g && r.version === version && r.resource === resource);
}

async function route() {
  if (current) current.abort();
  current = new AbortController();
  const view = { ...ctx, signal: current.signal, watching: false }; // this view's own: a later route aborts it
  const main = clear($('main'));
  const [path, query] = location.hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll('#resources a')) a.classList.toggle('current', a.getAttribute('href') === `#${path}`);
  if (parts[0] === 'r' && parts.length === 4) {
    const res = find(parts[1], parts[2], parts[3]);
    if (!res) { main.append(h('p', { class: 'failure' }, `${parts[3]} is not served.`)); return; }
    await showList(main, view, res, new URLSearchParams(query || ''));
  } else if (parts[0] === 'o' && parts.length === 6) {
    const res = find(parts[1], parts[2], parts[3]);
    if (!res) { main.append(h('p', { class: 'failure' }, `${parts[3]} is not served.`)); return; }
    await showObject(main, view, res, parts[4] === '_' ? '' : parts[4], parts[5]);
  } else {
    await showOverview(main, view);
  }
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  setToken($('token').value.trim());
  $('token').value = '';
  start();
});
$('logout').addEventListener('click', () => {
  setToken('');
  if (current) current.abort();
  showLogin('Logged out.');
});
$('namespace').addEventListener('change', async () => {
  ctx.namespace = $('namespace').value.trim();
  sessionStorage.setItem(NS_KEY, ctx.namespace);
  await rules();
  route();
});
$('nav-filter').addEventListener('input', nav);
$('show-all').addEventListener('change', nav);
window.addEventListener('hashchange', route);
start();
