// A virtualised table: only the rows in view (plus a margin) are in the DOM, so 10,000 rows scroll as 50 do.
// Rows are {key, cells: [Node|string], state: ''|'new'|'changed'|'deleted'}; the state marks live changes.

import { h, clear } from './dom.js';

const ROW = 28; // px: every row's height (CSS .vrow matches)
const MARGIN = 10; // rows rendered above and below the view

export class VirtualTable {
  constructor(columns) {
    this.columns = columns;
    this.rows = [];
    this.template = columns.map((c) => c.width || 'minmax(6em, 1fr)').join(' ');
    this.head = h('div', { class: 'vhead', role: 'row' }, columns.map((c) => h('div', { role: 'columnheader', title: c.description || '' }, c.name)));
    this.head.style.gridTemplateColumns = this.template;
    this.space = h('div', { class: 'vspace' });
    this.body = h('div', { class: 'vbody', onscroll: () => this.schedule() }, this.space);
    this.el = h('div', { class: 'vtable', role: 'table' }, this.head, this.body);
    this.pending = false;
    new ResizeObserver(() => this.schedule()).observe(this.body);
  }

  setRows(rows) { this.rows = rows; this.schedule(); }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  }

  render() {
    this.space.style.height = `${this.rows.length * ROW}px`;
    const top = this.body.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - MARGIN);
    const last = Math.min(this.rows.length, Math.ceil((top + this.body.clientHeight) / ROW) + MARGIN);
    clear(this.space);
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      const el = h('div', { class: `vrow ${row.state || ''}`, role: 'row', dataset: { key: row.key } },
        row.cells.map((cell) => h('div', { role: 'cell' }, cell)));
      el.style.gridTemplateColumns = this.template;
      el.style.transform = `translateY(${i * ROW}px)`;
      this.space.append(el);
    }
  }
}
