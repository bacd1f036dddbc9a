// YAML for display (block style, keys in the object's own order), each line paired with what it is the value
// of, so field ownership (managedFields) can be shown beside it.

const PLAIN = /^[A-Za-z0-9_./-][A-Za-z0-9 _./:-]*$/;
const AMBIGUOUS = /^(true|false|null|yes|no|on|off|~|[-+]?[0-9.]+(e[-+]?[0-9]+)?)$/i;

function scalar(value) {
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const s = String(value);
  if (s === '' || !PLAIN.test(s) || AMBIGUOUS.test(s) || s.endsWith(' ') || s.includes(': ')) return JSON.stringify(s);
  return s;
}

// [{text, path}] where path is the list of keys and list elements (the element itself) leading to the value.
export function lines(value, path = [], indent = '') {
  const out = [];
  if (Array.isArray(value)) {
    for (const item of value) {
      const itemPath = [...path, { item }];
      if (item !== null && typeof item === 'object' && Object.keys(item).length) {
        const inner = lines(item, itemPath, indent + '  ');
        inner[0] = { text: `${indent}- ${inner[0].text.slice(indent.length + 2)}`, path: inner[0].path };
        out.push(...inner);
      } else {
        out.push({ text: `${indent}- ${empty(item) ?? scalar(item)}`, path: itemPath });
      }
    }
    return out;
  }
  for (const [key, item] of Object.entries(value)) {
    const keyPath = [...path, key];
    const k = scalar(key);
    if (item !== null && typeof item === 'object' && empty(item) === undefined) {
      out.push({ text: `${indent}${k}:`, path: keyPath });
      out.push(...lines(item, keyPath, Array.isArray(item) ? indent : indent + '  '));
    } else {
      out.push({ text: `${indent}${k}: ${empty(item) ?? scalar(item)}`, path: keyPath });
    }
  }
  return out;
}

function empty(value) {
  if (Array.isArray(value) && !value.length) return '[]';
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !Object.keys(value).length) return '{}';
  return undefined;
}

export function toYAML(value) { return lines(value).map((l) => l.text).join('\n') + '\n'; }
