// The summary of the whole run (src/summary.rs): per row (a rank, or a
// group of ranks) and time bin, the share of each state. The diagram
// draws it per pixel column, the states stacked, where it does not draw
// the calls one by one.
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

GRAPPE.rgb = function (hex) {
  return [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
};

/** Decodes one level: per row, per bin, a share (255ths) per state. */
function decodeLevel(level, states) {
  const cells = new Uint8Array(level.rows.length * level.bins * states);
  level.rows.forEach((text, row) => {
    const bytes = atob(text), base = row * level.bins * states;
    for (let i = 0, bin = 0; i < bytes.length && bin < level.bins; bin++) {
      const n = bytes.charCodeAt(i++);
      for (let k = 0; k < n; k++, i += 2) cells[base + bin * states + bytes.charCodeAt(i)] = bytes.charCodeAt(i + 1);
    }
  });
  return cells;
}

/** The summary of `data` (the diagram's `summary`) over the decoded
 * `lanes` (in rank order) of a job of `worldSize` ranks. */
GRAPPE.Summary = function (data, lanes, worldSize) {
  this.states = data.states;
  this.group = data.group;
  this.rows = data.rows;
  const S = this.states.length;
  this.levels = data.levels.map((l) => ({ bin: l.bin_ns, bins: l.bins, cells: decodeLevel(l, S) }));
  this.colours = this.states.map((s) => GRAPPE.COLOURS[s] || GRAPPE.COLOURS.other);
  this.rowLanes = Array.from({ length: this.rows }, () => []);
  lanes.forEach((lane, i) => this.rowLanes[this.rowOf(lane.raw.rank)].push(i));
  this.members = this.rowLanes.map((_, r) => Math.max(1, Math.min(this.group, Math.max(worldSize, 1) - r * this.group)));
  this.lanes = lanes;
};

GRAPPE.Summary.prototype.rowOf = function (rank) {
  return Math.min(this.rows - 1, Math.floor(rank / this.group));
};

/** The finest bins sent (ns); Infinity without any level. */
GRAPPE.Summary.prototype.finest = function () {
  return this.levels.length ? this.levels[this.levels.length - 1].bin : Infinity;
};

/** The level to draw columns of `ns` ns: the coarsest with bins no wider,
 * else the finest. */
GRAPPE.Summary.prototype.level = function (ns) {
  return this.levels.find((l) => l.bin <= ns) || this.levels[this.levels.length - 1];
};

/** Adds to `out` the share of each state in [t0, t1) of row `row`. */
GRAPPE.Summary.prototype.shares = function (level, row, t0, t1, out) {
  out.fill(0);
  if (!level) return;
  const S = this.states.length, span = t1 - t0, cells = level.cells;
  const b0 = Math.max(0, Math.floor(t0 / level.bin)), b1 = Math.min(level.bins - 1, Math.floor(t1 / level.bin));
  for (let b = b0; b <= b1; b++) {
    const lo = b * level.bin, w = (Math.min(lo + level.bin, t1) - Math.max(lo, t0)) / span;
    if (w <= 0) continue;
    const base = (row * level.bins + b) * S;
    for (let s = 0; s < S; s++) if (cells[base + s]) out[s] += (cells[base + s] / 255) * w;
  }
};

/** The share of [t0, t1) that the ranks of row `row` were running. */
GRAPPE.Summary.prototype.alive = function (row, t0, t1) {
  let sum = 0;
  for (const i of this.rowLanes[row]) {
    const raw = this.lanes[i].raw;
    sum += Math.max(0, Math.min(t1, raw.last) - Math.max(t0, raw.first)) / (t1 - t0);
  }
  return Math.min(1, sum / this.members[row]);
};

/** The row's states in [t0, t1), largest first, as [name, share]
 * (compute included). */
GRAPPE.Summary.prototype.describe = function (row, t0, t1, ns) {
  const S = this.states.length, shares = new Float64Array(S);
  this.shares(this.level(ns), row, t0, t1, shares);
  const alive = this.alive(row, t0, t1);
  const inCalls = shares.reduce((a, b) => a + b, 0);
  const parts = this.states.map((s, k) => [s, shares[k]]).filter((p) => p[1] > 0);
  if (alive > inCalls) parts.push(["compute", alive - inCalls]);
  return parts.sort((a, b) => b[1] - a[1]);
};
