// Who owns which field: managedFields' fieldsV1 sets (structured-merge-diff's form) walked beside a path of the
// object (keys, and list elements matched by their k:{...} key fields or v: value).

function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

function child(node, step) {
  if (!node || typeof node !== 'object') return undefined;
  if (typeof step === 'string') return node[`f:${step}`];
  const { item } = step;
  for (const [key, value] of Object.entries(node)) {
    if (key.startsWith('k:')) {
      let fields;
      try { fields = JSON.parse(key.slice(2)); } catch { continue; }
      if (item && typeof item === 'object' && Object.entries(fields).every(([f, v]) => same(item[f], v))) return value;
    } else if (key.startsWith('v:')) {
      try { if (same(JSON.parse(key.slice(2)), item)) return value; } catch { continue; }
    }
  }
  return undefined;
}

// The managers (name and operation) whose sets hold the field at `path`.
export function owners(managedFields, path) {
  const out = [];
  for (const entry of managedFields || []) {
    let node = entry.fieldsV1;
    for (const step of path) {
      node = child(node, step);
      if (node === undefined) break;
    }
    if (node !== undefined && path.length) out.push(`${entry.manager} (${entry.operation})`);
  }
  return out;
}
