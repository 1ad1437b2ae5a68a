// The profile tables and the communication matrix's heat map.
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

/** An element with text or children. */
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

const ms = (ns) => (ns / 1e6).toFixed(3);
const us = (ns) => (ns / 1e3).toFixed(3);
const pct = (part, whole) => (whole > 0 ? ((100 * part) / whole).toFixed(2) : "0.00");

/** A table: `columns` are [title, numeric?], `rows` arrays of cells. */
function table(columns, rows) {
  const head = h("tr", {}, ...columns.map(([title]) => h("th", {}, title)));
  const body = rows.map((row) =>
    h("tr", {}, ...row.map((cell, i) => h("td", columns[i][1] ? { class: "n" } : {}, cell))),
  );
  return h("table", { class: "data" }, h("thead", {}, head), h("tbody", {}, ...body));
}

/** A stacked bar of fractions, each [fraction, colour, label]. */
function bar(parts) {
  const node = h("span", { class: "bar" });
  for (const [fraction, colour, label] of parts) {
    const piece = h("i", { title: label });
    piece.style.width = (100 * Math.max(0, Math.min(1, fraction))).toFixed(2) + "%";
    piece.style.background = colour;
    node.append(piece);
  }
  return node;
}

const STATS_COLUMNS = [
  ["Count", true],
  ["Total (ms)", true],
  ["Mean (µs)", true],
  ["Min (µs)", true],
  ["Max (µs)", true],
  ["Run %", true],
  ["Calls %", true],
  ["Bytes", true],
];

function statsCells(s, profile, inCalls) {
  const mean = s.count > 0 ? s.total_ns / s.count : 0;
  return [
    GRAPPE.grouped(s.count),
    ms(s.total_ns),
    us(mean),
    us(s.min_ns),
    us(s.max_ns),
    pct(s.total_ns, profile.aggregate_ns),
    pct(s.total_ns, inCalls),
    GRAPPE.grouped(s.bytes),
  ];
}

GRAPPE.renderTables = function (profile, sitesTotal, box) {
  const C = GRAPPE.COLOURS;
  box.append(
    h("h3", {}, "Time per rank"),
    h("p", {}, "Total: first to last event. Waiting: the part of a receive before its matching send started (late " +
      "sender), and in a collective the time until the last rank entered it. Communication: the rest of the time in " +
      "calls. Compute: outside calls."),
  );
  box.append(table(
    [["Rank", true], ["Total (ms)", true], ["In calls (ms)", true], ["Waiting (ms)", true], ["Comm. (ms)", true],
      ["Compute (ms)", true], ["Waiting %", true], ["Comm. %", true], ["Compute %", true], ["Breakdown", false]],
    profile.ranks.map((r) => [
      r.rank, ms(r.total_ns), ms(r.calls_ns), ms(r.waiting_ns), ms(r.communication_ns), ms(r.compute_ns),
      pct(r.waiting_ns, r.total_ns), pct(r.communication_ns, r.total_ns), pct(r.compute_ns, r.total_ns),
      bar([
        [r.total_ns ? r.compute_ns / r.total_ns : 0, C.compute, "compute"],
        [r.total_ns ? r.communication_ns / r.total_ns : 0, C.send, "communication"],
        [r.total_ns ? r.waiting_ns / r.total_ns : 0, C.waiting, "waiting"],
      ]),
    ]),
  ));
  const callsTotal = profile.calls.reduce((a, c) => a + c.total_ns, 0);
  box.append(
    h("h3", {}, "Calls by type"),
    table([["Call", false], ...STATS_COLUMNS], profile.calls.map((c) => [c.call, ...statsCells(c, profile, callsTotal)])),
  );
  const shown = profile.sites.slice(0, 50);
  box.append(
    h("h3", {}, "Call sites"),
    h("p", {}, "A call site, as mpiP's: a call type at the source location where the program made the call, " +
      "in its innermost enclosing user region (<runtime>: a call the runtime made itself)."),
    table(
      [["Site", true], ["Call", false], ["Location", false], ["Region", false], ...STATS_COLUMNS],
      shown.map((s, i) => [i + 1, s.call, s.site === null ? "<runtime>" : s.site,
        s.region === null ? "<no region>" : s.region, ...statsCells(s, profile, callsTotal)]),
    ),
  );
  if (sitesTotal > shown.length) box.append(h("p", {}, sitesTotal - shown.length + " more sites (the longest are shown)."));
  box.append(h("h3", {}, "Message sizes"));
  box.append(sizes("Point-to-point messages sent", profile.p2p_sizes), sizes("Collective calls, bytes contributed",
    profile.collective_sizes));
  box.append(
    h("h3", {}, "User regions by inclusive time"),
    profile.regions.length === 0
      ? h("p", {}, "No user region in the trace (Communicator::region).")
      : table(
        [["Region", false], ["Location", false], ["Count", true], ["Inclusive (ms)", true], ["Mean (µs)", true],
          ["Run %", true], ["Unclosed", true]],
        profile.regions.map((r) => [r.name, r.location, GRAPPE.grouped(r.count), ms(r.inclusive_ns),
          us(r.count ? r.inclusive_ns / r.count : 0), pct(r.inclusive_ns, profile.aggregate_ns), r.unclosed]),
      ),
  );
  if (profile.region_count > profile.regions.length) {
    box.append(h("p", {}, profile.region_count - profile.regions.length + " more regions (the longest are shown)."));
  }
};

function sizes(title, bins) {
  const most = Math.max(1, ...bins.map((b) => b.count));
  return h(
    "div", {}, h("b", {}, title),
    bins.length === 0 ? h("p", {}, "none") : table(
      [["Bytes", true], ["Count", true], ["Total bytes", true], ["", false]],
      bins.map((b) => [b.min + "–" + b.max, GRAPPE.grouped(b.count), GRAPPE.grouped(b.bytes),
        bar([[b.count / most, GRAPPE.COLOURS.send, b.count + " messages"]])]),
    ),
  );
}

/** The communication matrix as a heat map (ranks pooled in blocks past
 * 200, by the Rust side). */
GRAPPE.Matrix = function (canvas, tip, matrix) {
  this.block = matrix.block;
  this.m = matrix.size;
  this.n = matrix.ranks;
  this.messages = matrix.messages;
  this.bytes = matrix.bytes;
  this.cell = Math.max(2, Math.min(36, Math.floor(480 / this.m)));
  this.margin = 44;
  this.canvas = canvas;
  this.tip = tip;
  const size = this.margin + this.m * this.cell + 4;
  canvas.width = size;
  canvas.height = size;
  canvas.style.width = size + "px";
  canvas.style.height = size + "px";
  this.mode = "messages";
  document.querySelectorAll("input[name=matrix-mode]").forEach((input) =>
    input.addEventListener("change", () => {
      this.mode = input.value;
      this.draw();
    }),
  );
  canvas.addEventListener("mousemove", (ev) => this.hover(ev.offsetX, ev.offsetY));
  canvas.addEventListener("mouseleave", () => (tip.hidden = true));
  this.draw();
};

GRAPPE.Matrix.prototype.ranks = function (i) {
  const lo = i * this.block, hi = Math.min(this.n, lo + this.block) - 1;
  return lo === hi ? "rank " + lo : "ranks " + lo + "–" + hi;
};

GRAPPE.Matrix.prototype.draw = function () {
  const g = this.canvas.getContext("2d"), values = this[this.mode], m = this.m, c = this.cell, o = this.margin;
  const max = values.reduce((a, v) => Math.max(a, v), 1);
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, this.canvas.width, this.canvas.height);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < m; j++) {
      const v = values[i * m + j];
      const f = v > 0 ? 0.12 + (0.88 * Math.log1p(v)) / Math.log1p(max) : 0;
      const r = Math.round(247 - f * (247 - 8)), gr = Math.round(251 - f * (251 - 48)), b = Math.round(255 - f * (255 - 107));
      g.fillStyle = "rgb(" + r + "," + gr + "," + b + ")";
      g.fillRect(o + j * c, o + i * c, c, c);
    }
  }
  g.strokeStyle = "#c8ced6";
  g.strokeRect(o - 0.5, o - 0.5, m * c + 1, m * c + 1);
  g.fillStyle = "#333";
  g.font = "10px sans-serif";
  const every = Math.max(1, Math.ceil(14 / c));
  for (let i = 0; i < m; i += every) {
    g.fillText(String(i * this.block), 4, o + i * c + c / 2 + 3);
    g.save();
    g.translate(o + i * c + c / 2 + 3, o - 4);
    g.rotate(-Math.PI / 2);
    g.fillText(String(i * this.block), 0, 0);
    g.restore();
  }
  g.fillText("to →", o, 10);
};

GRAPPE.Matrix.prototype.hover = function (px, py) {
  const i = Math.floor((py - this.margin) / this.cell), j = Math.floor((px - this.margin) / this.cell);
  if (i < 0 || j < 0 || i >= this.m || j >= this.m) {
    this.tip.hidden = true;
    return;
  }
  const k = i * this.m + j;
  this.tip.replaceChildren(
    h("b", {}, this.ranks(i) + " → " + this.ranks(j)),
    h("div", {}, GRAPPE.grouped(this.messages[k]) + " messages"),
    h("div", {}, GRAPPE.grouped(this.bytes[k]) + " bytes"),
  );
  this.tip.hidden = false;
  this.tip.style.left = px + 14 + "px";
  this.tip.style.top = py + 14 + "px";
};
