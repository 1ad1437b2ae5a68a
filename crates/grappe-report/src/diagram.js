// The space-time diagram: ranks as lanes. Where the calls are drawn one
// by one (the detail windows, once zoomed in enough for them to show):
// calls as coloured bars, regions above them, messages as arrows.
// Elsewhere, the summary: per pixel column, the share of each state,
// stacked. An overview of the whole run above it.
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

GRAPPE.COLOURS = {
  compute: "#e3e3e3",
  send: "#1f6fd1",
  isend: "#79b0f2",
  recv: "#e8820c",
  irecv: "#f5bd7a",
  sendrecv: "#14a0a0",
  wait: "#2e9e3e",
  test: "#9fdc8f",
  probe: "#8d5fc2",
  collective: "#c2409f",
  other: "#777777",
  runtime: "#c9b458",
  failed: "#000000",
  waiting: "#d62020",
};

GRAPPE.LEGEND = [
  ["compute", "compute (outside calls)"],
  ["send", "send"],
  ["isend", "isend"],
  ["recv", "recv"],
  ["irecv", "irecv"],
  ["sendrecv", "sendrecv"],
  ["wait", "wait"],
  ["test", "test"],
  ["probe", "probe"],
  ["collective", "collective"],
  ["other", "other call"],
  ["runtime", "init, finalize (clock sampling)"],
  ["failed", "failed call: a peer died or the job was stopped"],
  ["waiting", "waiting: late sender, collective, failed call"],
];

/** A duration or date in ns, with a unit that fits. */
GRAPPE.formatNs = function (ns, digits) {
  const a = Math.abs(ns);
  const d = digits === undefined ? 3 : digits;
  if (a >= 1e9) return (ns / 1e9).toFixed(d) + " s";
  if (a >= 1e6) return (ns / 1e6).toFixed(d) + " ms";
  if (a >= 1e3) return (ns / 1e3).toFixed(d) + " µs";
  return Math.round(ns) + " ns";
};

GRAPPE.grouped = function (n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
};

/** Index of the first element of the sorted array `a` greater than `v`. */
GRAPPE.upperBound = function (a, v) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] <= v) lo = mid + 1; else hi = mid;
  }
  return lo;
};

GRAPPE.buildLegend = function (box) {
  for (const [key, label] of GRAPPE.LEGEND) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = GRAPPE.COLOURS[key];
    item.append(swatch, label);
    box.append(item);
  }
  const region = document.createElement("span");
  const swatch = document.createElement("i");
  swatch.style.background = GRAPPE.regionColour(0, 0);
  region.append(swatch, "user region (above the calls)");
  box.append(region);
};

GRAPPE.regionColour = function (name, depth) {
  const hue = ((name < 0 ? 0 : name) * 137.508 + 40) % 360;
  return "hsl(" + hue.toFixed(0) + ",55%," + Math.max(55, 80 - 8 * depth) + "%)";
};

/** Decodes one lane: absolute (relative to the origin) starts and ends. */
function decodeLane(lane) {
  const n = lane.t.length;
  const start = new Float64Array(n), end = new Float64Array(n), maxEnd = new Float64Array(n);
  let t = 0, m = -Infinity;
  for (let i = 0; i < n; i++) {
    t += lane.t[i];
    start[i] = t;
    end[i] = t + lane.d[i];
    m = Math.max(m, end[i]);
    maxEnd[i] = m;
  }
  const rn = lane.rt.length;
  const rstart = new Float64Array(rn), rend = new Float64Array(rn);
  t = 0;
  for (let i = 0; i < rn; i++) {
    t += lane.rt[i];
    rstart[i] = t;
    rend[i] = t + lane.rd[i];
  }
  return { raw: lane, start, end, maxEnd, rstart, rend };
}

GRAPPE.Diagram = function (data, el, worldSize) {
  this.data = data;
  this.el = el;
  this.lanes = data.lanes.map(decodeLane);
  this.summary = new GRAPPE.Summary(data.summary, this.lanes, worldSize);
  this.detail = data.detail;
  this.colourOf = data.kinds.map((k) => (k.failed ? GRAPPE.COLOURS.failed : GRAPPE.COLOURS[k.category] || GRAPPE.COLOURS.other));
  this.hasRegions = data.lanes.some((l) => l.rt.length > 0);
  // The interval asked for, [w0, w1] (the whole run by default): the
  // view of `reset`.
  this.run = Math.max(1, data.end);
  this.w0 = Math.min(data.interval[0], this.run - 1);
  this.w1 = Math.max(this.w0 + 1, Math.min(this.run, data.interval[1] === null ? this.run : data.interval[1]));
  this.decodeArrows();
  this.reset();
  this.viewFromAddress();
  this.layout();
  this.bind();
  this.draw();
};

GRAPPE.Diagram.prototype.LABEL_W = 64;
GRAPPE.Diagram.prototype.AXIS_H = 22;

GRAPPE.Diagram.prototype.decodeArrows = function () {
  const a = this.data.arrows;
  const n = a.t.length;
  this.arrowEnd = new Float64Array(n);
  this.arrowStart = new Float64Array(n);
  let t = 0;
  this.maxLatency = 0;
  for (let i = 0; i < n; i++) {
    t += a.t[i];
    this.arrowEnd[i] = t;
    this.arrowStart[i] = t - a.l[i];
    this.maxLatency = Math.max(this.maxLatency, a.l[i]);
  }
};

GRAPPE.Diagram.prototype.reset = function () {
  this.v0 = this.w0;
  this.v1 = this.w1;
};

/** The view asked for in the address, `#view=START,END` (ns from the
 * diagram's origin), if any. */
GRAPPE.Diagram.prototype.viewFromAddress = function () {
  const m = /view=([0-9.e+]+),([0-9.e+]+)/.exec(window.location.hash);
  if (m && Number(m[2]) > Number(m[1])) {
    this.v0 = Number(m[1]);
    this.v1 = Number(m[2]);
  }
};

GRAPPE.Diagram.prototype.layout = function () {
  const n = Math.max(1, this.lanes.length);
  this.laneH = Math.max(3, Math.min(64, Math.floor(520 / n)));
  // The canvas' own width (inside its border): a bitmap of another width
  // would be resampled, blending the summary's pixel columns.
  this.width = Math.max(320, this.el.canvas.clientWidth || this.el.box.clientWidth || 1000);
  this.height = Math.min(16000, this.AXIS_H + n * this.laneH + 4);
  const c = this.el.canvas;
  const dpr = window.devicePixelRatio || 1;
  c.width = Math.round(this.width * dpr);
  c.height = Math.round(this.height * dpr);
  c.style.height = this.height + "px";
  this.ctx = c.getContext("2d");
  this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  this.dpr = dpr;
  this.plotW = this.width - this.LABEL_W;
  this.overview = new GRAPPE.Overview(this, this.el.overview, this.width, this.LABEL_W);
};

GRAPPE.Diagram.prototype.x = function (t) {
  return this.LABEL_W + ((t - this.v0) * this.plotW) / (this.v1 - this.v0);
};

GRAPPE.Diagram.prototype.timeAt = function (px) {
  return this.v0 + ((px - this.LABEL_W) * (this.v1 - this.v0)) / this.plotW;
};

/** The vertical bands of lane `i`: regions on top, calls below. */
GRAPPE.Diagram.prototype.bands = function (i) {
  const y = this.AXIS_H + i * this.laneH;
  const gap = this.laneH >= 10 ? 2 : 0;
  const regions = this.hasRegions && this.el.regions.checked ? Math.max(1, Math.round(this.laneH * 0.28)) : 0;
  return { y, regionY: y + gap, regionH: regions, callY: y + gap + regions, callH: this.laneH - 2 * gap - regions };
};

GRAPPE.Diagram.prototype.scheduleDraw = function () {
  if (this.pending) return;
  this.pending = true;
  window.requestAnimationFrame(() => {
    this.pending = false;
    this.draw();
  });
};

GRAPPE.Diagram.prototype.draw = function () {
  const g = this.ctx;
  g.clearRect(0, 0, this.width, this.height);
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, this.width, this.height);
  this.detailed = this.callsFit() ? this.detailColumns() : [];
  this.drawSummary();
  g.save();
  g.beginPath();
  for (const [x0, x1] of this.detailed) g.rect(x0, 0, x1 - x0, this.height);
  g.clip();
  if (this.detailed.length > 0) this.lanes.forEach((lane, i) => this.drawLane(lane, i));
  g.restore();
  g.save();
  g.beginPath();
  g.rect(this.LABEL_W, 0, this.plotW, this.height);
  g.clip();
  this.drawDetailBounds();
  this.drawWindowBounds();
  this.arrowNote = "";
  if (this.el.arrows.checked && this.detailed.length > 0) this.drawArrows();
  g.restore();
  this.drawLabels();
  this.drawAxis();
  this.overview.draw(this.v0, this.v1);
  const span = GRAPPE.formatNs(this.v1 - this.v0);
  this.el.range.textContent = "view " + GRAPPE.formatNs(this.v0) + " to " + GRAPPE.formatNs(this.v1) + " (" + span + ")" +
    (this.arrowNote ? "; " + this.arrowNote : "");
};

GRAPPE.Diagram.prototype.drawLane = function (lane, i) {
  const g = this.ctx, b = this.bands(i), raw = lane.raw;
  const v0 = this.v0, v1 = this.v1, right = this.width;
  const x0 = Math.max(this.LABEL_W, this.x(raw.first)), x1 = Math.min(right, this.x(raw.last));
  if (x1 > x0) {
    g.fillStyle = GRAPPE.COLOURS.compute;
    g.fillRect(Math.floor(x0), b.callY, Math.max(1, Math.ceil(x1 - x0)), b.callH);
  }
  // Calls: merged into runs of one colour; a call overlapping the one
  // before it (a sendrecv's receive) is drawn in the lower half.
  let run = null;
  const flush = () => {
    if (run) {
      g.fillStyle = run.colour;
      g.fillRect(run.x0, b.callY, run.x1 - run.x0, b.callH);
    }
    run = null;
  };
  const waits = [];
  const first = GRAPPE.upperBound(lane.maxEnd, v0 - 1e-9);
  for (let k = first; k < lane.start.length; k++) {
    const s = lane.start[k], e = lane.end[k];
    if (s > v1) break;
    if (e < v0) continue;
    const px0 = Math.floor(this.x(s)), px1 = Math.max(px0 + 1, Math.ceil(this.x(e)));
    const colour = this.colourOf[raw.k[k]] || GRAPPE.COLOURS.other;
    const overlaps = k > 0 && s < lane.maxEnd[k - 1];
    if (overlaps) {
      flush();
      const half = Math.max(1, Math.floor(b.callH / 2));
      g.fillStyle = colour;
      g.fillRect(px0, b.callY + b.callH - half, px1 - px0, half);
    } else if (run && px0 <= run.x1 && (run.colour === colour || (px0 === run.x0 && run.x1 - run.x0 === 1))) {
      // Same colour, or a one-pixel run this call paints over entirely.
      run.colour = colour;
      run.x1 = Math.max(run.x1, px1);
    } else {
      flush();
      run = { colour, x0: px0, x1: px1 };
    }
    if (raw.w[k] > 0) {
      const wx1 = Math.max(px0 + 1, Math.ceil(this.x(s + raw.w[k])));
      const n = waits.length;
      if (n > 0 && px0 <= waits[n - 1]) waits[n - 1] = Math.max(waits[n - 1], wx1);
      else waits.push(px0, wx1);
    }
  }
  flush();
  g.fillStyle = GRAPPE.COLOURS.waiting;
  const wh = Math.max(1, Math.round(b.callH * 0.35));
  for (let k = 0; k < waits.length; k += 2) g.fillRect(waits[k], b.callY, waits[k + 1] - waits[k], wh);
  if (b.regionH > 0) this.drawRegions(lane, b);
};

GRAPPE.Diagram.prototype.drawRegions = function (lane, b) {
  const g = this.ctx, raw = lane.raw;
  for (let k = 0; k < lane.rstart.length; k++) {
    const s = lane.rstart[k], e = lane.rend[k];
    if (s > this.v1) break;
    if (e < this.v0) continue;
    const depth = raw.rz[k];
    const inset = Math.min(b.regionH - 1, depth * 2);
    const px0 = Math.floor(this.x(s)), px1 = Math.max(px0 + 1, Math.ceil(this.x(e)));
    g.fillStyle = GRAPPE.regionColour(raw.rn[k], depth);
    g.fillRect(px0, b.regionY + inset, px1 - px0, b.regionH - inset);
  }
};

/** Whether the calls in view are few enough to draw one by one (at
 * least two pixels each on average in the busiest lane), or the view is
 * finer than the summary's finest bins. */
GRAPPE.Diagram.prototype.callsFit = function () {
  if (this.detail.length === 0) return false;
  if ((this.v1 - this.v0) / this.plotW < this.summary.finest()) return true;
  let most = 0;
  for (const lane of this.lanes) {
    const k0 = GRAPPE.upperBound(lane.maxEnd, this.v0 - 1e-9), k1 = GRAPPE.upperBound(lane.start, this.v1);
    most = Math.max(most, k1 - k0);
  }
  return most <= this.plotW / 2;
};

/** The pixel ranges [x0, x1) of the view inside a detail window. */
GRAPPE.Diagram.prototype.detailColumns = function () {
  const out = [];
  const first = GRAPPE.upperBound(this.detail.map((w) => w[1]), this.v0);
  for (let i = first; i < this.detail.length && this.detail[i][0] < this.v1; i++) {
    const x0 = Math.max(this.LABEL_W, Math.ceil(this.x(this.detail[i][0])));
    const x1 = Math.min(this.width, Math.floor(this.x(this.detail[i][1])));
    if (x1 > x0) out.push([x0, x1]);
  }
  return out;
};

/** The summary, per device pixel column outside the detailed ranges:
 * per row, the states stacked (waiting on top), compute below them,
 * blank where the row's ranks were not running. */
GRAPPE.Diagram.prototype.drawSummary = function () {
  const sm = this.summary, dpr = this.dpr;
  const W = Math.max(1, Math.round(this.plotW * dpr)), H = Math.max(1, Math.round(this.height * dpr));
  const off = this.summaryCanvas || (this.summaryCanvas = document.createElement("canvas"));
  off.width = W;
  off.height = H;
  const g = off.getContext("2d"), img = g.createImageData(W, H), px = new Uint32Array(img.data.buffer);
  const pack = (hex) => {
    const [r, gr, b] = GRAPPE.rgb(hex);
    return ((255 << 24) | (b << 16) | (gr << 8) | r) >>> 0;
  };
  const colours = sm.colours.map(pack), compute = pack(GRAPPE.COLOURS.compute);
  const ns = (this.v1 - this.v0) / W, level = sm.level(ns), shares = new Float64Array(sm.states.length);
  const skip = new Uint8Array(W);
  for (const [x0, x1] of this.detailed) skip.fill(1, Math.round((x0 - this.LABEL_W) * dpr), Math.round((x1 - this.LABEL_W) * dpr));
  const bands = [];
  for (let r = 0; r < sm.rows; r++) {
    const lanes = sm.rowLanes[r];
    if (lanes.length === 0) continue;
    // The whole lanes: regions are drawn only with the calls.
    const top = this.bands(lanes[0]), bottom = this.bands(lanes[lanes.length - 1]), gap = top.regionY - top.y;
    bands.push([r, Math.round(top.regionY * dpr), Math.min(H, Math.round((bottom.y + this.laneH - gap) * dpr))]);
  }
  const fill = (x, y0, y1, colour) => {
    for (let y = y0; y < y1; y++) px[y * W + x] = colour;
  };
  for (let x = 0; x < W; x++) {
    const t0 = this.v0 + x * ns, t1 = t0 + ns;
    if (skip[x] || t1 <= 0 || t0 >= this.run) continue;
    for (const [r, y0, y1] of bands) {
      sm.shares(level, r, t0, t1, shares);
      const alive = sm.alive(r, t0, t1), h = y1 - y0;
      let sum = 0;
      for (let s = 0; s < shares.length; s++) sum += shares[s];
      const scale = sum > alive && sum > 0 ? alive / sum : 1;
      let acc = 0, y = y0;
      for (let s = 0; s < shares.length; s++) {
        if (shares[s] <= 0) continue;
        acc += shares[s] * scale;
        const ye = y0 + Math.round(acc * h);
        fill(x, y, ye, colours[s]);
        y = ye;
      }
      const ye = y0 + Math.round(Math.max(acc, alive) * h);
      fill(x, y, ye, compute);
    }
  }
  g.putImageData(img, 0, 0);
  this.ctx.imageSmoothingEnabled = false;
  this.ctx.drawImage(off, this.LABEL_W, 0, this.plotW, this.height);
};

/** Dashed lines at the edges of the detail windows in view, and a word
 * over the gaps between them, once the calls are drawn. */
GRAPPE.Diagram.prototype.drawDetailBounds = function () {
  if (this.detailed.length === 0) return;
  const g = this.ctx;
  g.strokeStyle = "#555";
  g.setLineDash([4, 3]);
  g.beginPath();
  let from = this.LABEL_W;
  const gaps = [];
  for (const [x0, x1] of this.detailed) {
    if (x0 > this.LABEL_W + 1) g.moveTo(x0 + 0.5, this.AXIS_H), g.lineTo(x0 + 0.5, this.height);
    if (x1 < this.width - 1) g.moveTo(x1 - 0.5, this.AXIS_H), g.lineTo(x1 - 0.5, this.height);
    if (x0 - from > 0) gaps.push([from, x0]);
    from = x1;
  }
  if (this.width - from > 0) gaps.push([from, this.width]);
  g.stroke();
  g.setLineDash([]);
  g.fillStyle = "#333";
  g.font = "11px sans-serif";
  for (const [a, b] of gaps) if (b - a > 190) g.fillText("summary: calls not embedded here", a + 6, this.AXIS_H + 12);
};

/** Shades what lies outside the interval asked for (--from, --to). */
GRAPPE.Diagram.prototype.drawWindowBounds = function () {
  // The option of `grappe trace report` that details a date (ns).
  const arg = (ns) => (ns / 1e6).toFixed(3) + "ms";
  if (this.data.interval[1] !== null && this.w1 <= this.v1) {
    const x = Math.max(this.LABEL_W, this.x(this.w1));
    this.shade(x, this.width, x, "calls not embedded from here (report --from " + arg(this.w1) + ")", x + 6);
  }
  if (this.w0 > 0 && this.w0 >= this.v0) {
    const x = Math.min(this.width, this.x(this.w0));
    this.shade(this.LABEL_W, x, x, "calls not embedded before here (report --to " + arg(this.w0) + ")", this.LABEL_W + 6);
  }
};

/** Greys pixels `from` to `to`, draws a dashed line at `line`, and
 * writes `text` at `textX`. */
GRAPPE.Diagram.prototype.shade = function (from, to, line, text, textX) {
  const g = this.ctx;
  g.fillStyle = "rgba(120,120,120,0.18)";
  g.fillRect(from, this.AXIS_H, Math.max(0, to - from), this.height - this.AXIS_H);
  g.strokeStyle = "#777";
  g.setLineDash([4, 3]);
  g.beginPath();
  g.moveTo(line + 0.5, this.AXIS_H);
  g.lineTo(line + 0.5, this.height);
  g.stroke();
  g.setLineDash([]);
  g.fillStyle = "#444";
  g.font = "11px sans-serif";
  g.fillText(text, textX, this.AXIS_H + 12);
};

/** Messages in view, as arrows from the send's start to the receive's
 * end; none when there are more than a few per pixel column (they would
 * hide the calls): the status line says so. */
GRAPPE.Diagram.prototype.drawArrows = function () {
  const a = this.data.arrows, g = this.ctx;
  const from = GRAPPE.upperBound(this.arrowEnd, this.v0 - 1e-9);
  const visible = [];
  for (let i = from; i < this.arrowEnd.length; i++) {
    if (this.arrowEnd[i] - this.maxLatency > this.v1) break;
    if (Math.min(this.arrowStart[i], this.arrowEnd[i]) <= this.v1 && a.s[i] >= 0) visible.push(i);
  }
  const limit = Math.max(200, Math.round(this.plotW / 2));
  if (visible.length > limit) {
    this.arrowNote = GRAPPE.grouped(visible.length) + " messages in view: zoom in to draw them";
    return;
  }
  const mid = (lane) => this.AXIS_H + lane * this.laneH + this.laneH / 2;
  g.strokeStyle = "rgba(20,20,20,0.6)";
  g.fillStyle = "rgba(20,20,20,0.8)";
  g.lineWidth = 1;
  const lines = new Path2D(), heads = new Path2D();
  for (const i of visible) {
    const xs = this.x(this.arrowStart[i]), ys = mid(a.s[i]), xe = this.x(this.arrowEnd[i]), ye = mid(a.r[i]);
    lines.moveTo(xs, ys);
    lines.lineTo(xe, ye);
    const angle = Math.atan2(ye - ys, xe - xs);
    heads.moveTo(xe, ye);
    heads.lineTo(xe - 6 * Math.cos(angle - 0.4), ye - 6 * Math.sin(angle - 0.4));
    heads.lineTo(xe - 6 * Math.cos(angle + 0.4), ye - 6 * Math.sin(angle + 0.4));
    heads.closePath();
  }
  g.stroke(lines);
  g.fill(heads);
};

GRAPPE.Diagram.prototype.drawLabels = function () {
  const g = this.ctx;
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, this.LABEL_W, this.height);
  g.fillStyle = "#1d232b";
  g.font = "11px sans-serif";
  g.textBaseline = "middle";
  const every = Math.max(1, Math.ceil(12 / this.laneH));
  this.lanes.forEach((lane, i) => {
    if (i % every === 0) g.fillText("rank " + lane.raw.rank, 4, this.AXIS_H + i * this.laneH + this.laneH / 2);
  });
  g.textBaseline = "alphabetic";
};

GRAPPE.Diagram.prototype.drawAxis = function () {
  const g = this.ctx, span = this.v1 - this.v0;
  const rough = span / Math.max(1, this.plotW / 110);
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(rough, 1e-3))));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= rough) || 10 * p;
  g.fillStyle = "#ffffff";
  g.fillRect(this.LABEL_W, 0, this.plotW, this.AXIS_H);
  g.strokeStyle = "#9aa3ad";
  g.fillStyle = "#333";
  g.font = "11px sans-serif";
  g.beginPath();
  for (let t = Math.ceil(this.v0 / step) * step; t <= this.v1; t += step) {
    const x = Math.round(this.x(t)) + 0.5;
    g.moveTo(x, this.AXIS_H - 5);
    g.lineTo(x, this.AXIS_H);
    g.fillText(GRAPPE.formatNs(t, step >= 1e6 ? 1 : 3), x + 3, this.AXIS_H - 8);
  }
  g.moveTo(this.LABEL_W, this.AXIS_H + 0.5);
  g.lineTo(this.width, this.AXIS_H + 0.5);
  g.stroke();
};

/** Zooms by `factor` around the date under pixel `px`. */
GRAPPE.Diagram.prototype.zoom = function (factor, px) {
  const t = this.timeAt(px);
  let v0 = t - (t - this.v0) * factor, v1 = t + (this.v1 - t) * factor;
  if (v1 - v0 < 20) return;
  this.setView(v0, v1);
};

GRAPPE.Diagram.prototype.setView = function (v0, v1) {
  const span = Math.min(v1 - v0, this.run * 1.1);
  const lo = -0.05 * this.run, hi = 1.05 * this.run;
  v0 = Math.max(lo, Math.min(v0, hi - span));
  this.v0 = v0;
  this.v1 = v0 + span;
  this.scheduleDraw();
};

GRAPPE.Diagram.prototype.bind = function () {
  const c = this.el.canvas;
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    this.zoom(Math.exp(ev.deltaY * 0.0015), ev.offsetX);
  }, { passive: false });
  c.addEventListener("mousedown", (ev) => {
    this.drag = { x: ev.clientX, v0: this.v0, v1: this.v1 };
    c.classList.add("dragging");
    this.el.tooltip.hidden = true;
  });
  window.addEventListener("mousemove", (ev) => {
    if (!this.drag) return;
    const dt = ((ev.clientX - this.drag.x) * (this.drag.v1 - this.drag.v0)) / this.plotW;
    this.setView(this.drag.v0 - dt, this.drag.v1 - dt);
  });
  window.addEventListener("mouseup", () => {
    this.drag = null;
    c.classList.remove("dragging");
  });
  c.addEventListener("mousemove", (ev) => {
    if (!this.drag) this.hover(ev.offsetX, ev.offsetY);
  });
  c.addEventListener("mouseleave", () => (this.el.tooltip.hidden = true));
  this.el.reset.addEventListener("click", () => {
    this.reset();
    this.scheduleDraw();
  });
  this.el.arrows.addEventListener("change", () => this.scheduleDraw());
  this.el.regions.addEventListener("change", () => this.scheduleDraw());
  this.el.overview.addEventListener("click", (ev) => {
    const t = this.overview.timeAt(ev.offsetX), half = (this.v1 - this.v0) / 2;
    this.setView(t - half, t + half);
  });
  window.addEventListener("resize", () => {
    this.layout();
    this.draw();
  });
};

/** The tooltip of what is under pixel (px, py). */
GRAPPE.Diagram.prototype.hover = function (px, py) {
  const tip = this.el.tooltip;
  const i = Math.floor((py - this.AXIS_H) / this.laneH);
  const lane = this.lanes[i];
  if (!lane || px < this.LABEL_W) {
    tip.hidden = true;
    return;
  }
  const t = this.timeAt(px), tol = (3 * (this.v1 - this.v0)) / this.plotW, b = this.bands(i);
  const detailed = this.detailed.some(([x0, x1]) => px >= x0 && px < x1);
  const lines = !detailed ? this.summaryAt(lane, px) : py < b.callY ? this.regionAt(lane, t, tol) : this.callAt(lane, t, tol);
  if (!lines) {
    tip.hidden = true;
    return;
  }
  tip.replaceChildren();
  lines.forEach((line, k) => {
    const node = document.createElement(k === 0 ? "b" : "div");
    node.textContent = line;
    tip.append(node);
  });
  tip.hidden = false;
  const left = Math.min(px + 14, this.width - tip.offsetWidth - 4);
  tip.style.left = Math.max(0, left) + "px";
  tip.style.top = py + 16 + "px";
};

/** What the summary says of the pixel column `px` of the row of `lane`. */
GRAPPE.Diagram.prototype.summaryAt = function (lane, px) {
  const sm = this.summary, row = sm.rowOf(lane.raw.rank);
  const t0 = this.timeAt(Math.floor(px)), t1 = this.timeAt(Math.floor(px) + 1);
  if (t1 <= 0 || t0 >= this.run) return null;
  const lanes = sm.rowLanes[row].map((i) => this.lanes[i].raw.rank);
  const who = sm.group === 1 ? "rank " + lane.raw.rank : "ranks " + lanes[0] + "–" + lanes[lanes.length - 1];
  const parts = sm.describe(row, t0, t1, (t1 - t0) / this.dpr);
  return [
    who + ", " + GRAPPE.formatNs(Math.max(0, t0), 6) + " to " + GRAPPE.formatNs(t1, 6),
    ...parts.map(([state, share]) => state + " " + (100 * share).toFixed(1) + "%"),
    "summary: zoom in on a detail window (marked under the overview) for the calls",
  ];
};

GRAPPE.Diagram.prototype.callAt = function (lane, t, tol) {
  let best = -1, distance = Infinity;
  for (let k = GRAPPE.upperBound(lane.start, t + tol) - 1; k >= 0 && lane.maxEnd[k] >= t - tol; k--) {
    const d = t < lane.start[k] ? lane.start[k] - t : t > lane.end[k] ? t - lane.end[k] : 0;
    if (d < distance) {
      best = k;
      distance = d;
    }
  }
  if (best < 0) return null;
  const raw = lane.raw, kind = this.data.kinds[raw.k[best]];
  const peer = raw.p[best];
  const relation = { send: "to", isend: "to", recv: "from", irecv: "from", wait: "from", test: "from", probe: "from" };
  const lines = [kind.name + (kind.failed ? " (failed: a peer died or the job was stopped)" : "") + " on rank " + raw.rank];
  const [source, received] = kind.category === "sendrecv" ? this.receiveOf(raw, best) : [-1, 0];
  const rank = (r) => (r >= 0 ? "rank " + r : "any rank");
  if (kind.category === "collective") lines.push(peer >= 0 ? "root: rank " + peer + " of its communicator" : "no root");
  else if (kind.category === "sendrecv") lines.push("to " + rank(peer) + ", from " + rank(source));
  else if (peer >= 0 && relation[kind.category]) lines.push(relation[kind.category] + " rank " + peer);
  lines.push(
    "start " + GRAPPE.formatNs(lane.start[best], 6) + ", end " + GRAPPE.formatNs(lane.end[best], 6),
    "duration " + GRAPPE.formatNs(lane.end[best] - lane.start[best]),
  );
  if (kind.category === "sendrecv") {
    lines.push("bytes sent " + GRAPPE.grouped(raw.b[best]) + ", received " + GRAPPE.grouped(received));
  } else if (raw.b[best] > 0 || (kind.category !== "wait" && kind.category !== "runtime")) lines.push("bytes " + GRAPPE.grouped(raw.b[best]));
  if (raw.w[best] > 0) lines.push("waiting " + GRAPPE.formatNs(raw.w[best]));
  return lines;
};

/** A sendrecv's receive, [source, bytes]: the lane lists those that
 * differ from their send (`xi`, ascending); the others are the send's. */
GRAPPE.Diagram.prototype.receiveOf = function (raw, k) {
  const xi = raw.xi || [];
  const j = GRAPPE.upperBound(xi, k) - 1;
  return j >= 0 && xi[j] === k ? [raw.xp[j], raw.xb[j]] : [raw.p[k], raw.b[k]];
};

GRAPPE.Diagram.prototype.regionAt = function (lane, t, tol) {
  let best = -1;
  const raw = lane.raw;
  const last = GRAPPE.upperBound(lane.rstart, t + tol) - 1;
  for (let k = last; k >= 0 && k > last - 400; k--) {
    if (lane.rend[k] >= t - tol && (best < 0 || raw.rz[k] > raw.rz[best])) best = k;
  }
  if (best < 0) return null;
  const name = raw.rn[best] >= 0 ? this.data.regions[raw.rn[best]] : "(unnamed region)";
  return [
    "region " + name + " on rank " + raw.rank,
    "start " + GRAPPE.formatNs(lane.rstart[best], 6) + ", end " + GRAPPE.formatNs(lane.rend[best], 6),
    "duration " + GRAPPE.formatNs(lane.rend[best] - lane.rstart[best]) + ", depth " + raw.rz[best],
  ];
};
