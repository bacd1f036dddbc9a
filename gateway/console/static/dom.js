// DOM building without innerHTML: every text from the server becomes a text node, so no object's content can
// become markup (the CSP forbids inline script besides).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

export function age(timestamp) {
  if (!timestamp) return '';
  const seconds = Math.max(0, (Date.now() - Date.parse(timestamp)) / 1000);
  if (seconds < 120) return `${Math.floor(seconds)}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

// A failure as the server said it: its reason, message and causes (a Status), forbidden marked as such.
export function failure(err) {
  const status = err.status || {};
  const causes = (status.details && status.details.causes) || [];
  return h('div', { class: err.code === 403 ? 'failure forbidden' : 'failure', role: 'alert' },
    h('strong', {}, err.code === 403 ? 'Forbidden' : (status.reason || `Error ${err.code || ''}`)),
    h('p', {}, err.message || String(err)),
    causes.length ? h('ul', { class: 'causes' }, causes.map((c) =>
      h('li', {}, c.field ? h('code', {}, c.field) : null, ' ', c.message || c.reason || ''))) : null);
}
