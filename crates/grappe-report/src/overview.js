// The overview strip: the whole run, per row of the summary and bin of
// its coarsest level, the colours of its states blended by share; below
// it, where the calls are drawn one by one (the detail windows).
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

/** The height of the marks of the detail windows, px. */
const DETAIL_MARK_H = 4;

/** The whole run: per row and time bin, the states blended. */
GRAPPE.Overview = function (diagram, canvas, width, labelW) {
  const sm = diagram.summary, n = Math.max(1, sm.rowLanes.filter((l) => l.length > 0).length);
  this.diagram = diagram;
  this.canvas = canvas;
  this.labelW = labelW;
  this.width = width;
  this.rowH = Math.max(1, Math.min(8, Math.floor(64 / n)));
  this.stripH = Math.max(12, n * this.rowH);
  this.height = this.stripH + DETAIL_MARK_H + 2;
  this.full = diagram.run;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(this.height * dpr);
  canvas.style.height = this.height + "px";
  this.ctx = canvas.getContext("2d");
  this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  this.image = this.render(sm);
};

GRAPPE.Overview.prototype.render = function (sm) {
  const level = sm.levels[0];
  const bins = level ? level.bins : 1, rows = sm.rowLanes.map((l, r) => r).filter((r) => sm.rowLanes[r].length > 0);
  const off = document.createElement("canvas");
  off.width = bins;
  off.height = Math.max(1, rows.length);
  const g = off.getContext("2d"), img = g.createImageData(bins, Math.max(1, rows.length));
  const colours = sm.colours.map(GRAPPE.rgb), compute = GRAPPE.rgb(GRAPPE.COLOURS.compute), shares = new Float64Array(sm.states.length);
  rows.forEach((r, y) => {
    for (let b = 0; b < bins; b++) {
      const t0 = b * (level ? level.bin : 1), t1 = t0 + (level ? level.bin : 1);
      sm.shares(level, r, t0, t1, shares);
      const alive = sm.alive(r, t0, t1);
      let sum = 0;
      for (const v of shares) sum += v;
      const scale = sum > alive && sum > 0 ? alive / sum : 1;
      const mix = [0, 0, 0];
      shares.forEach((v, s) => colours[s].forEach((c, k) => (mix[k] += c * v * scale)));
      const rest = Math.max(0, alive - sum * scale);
      const o = (y * bins + b) * 4;
      for (let k = 0; k < 3; k++) img.data[o + k] = mix[k] + compute[k] * rest + 255 * (1 - alive);
      img.data[o + 3] = 255;
    }
  });
  g.putImageData(img, 0, 0);
  return off;
};

GRAPPE.Overview.prototype.x = function (t) {
  return this.labelW + (t * (this.width - this.labelW)) / this.full;
};

GRAPPE.Overview.prototype.timeAt = function (px) {
  return ((px - this.labelW) * this.full) / (this.width - this.labelW);
};

GRAPPE.Overview.prototype.draw = function (v0, v1) {
  const g = this.ctx, d = this.diagram, level = d.summary.levels[0];
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, this.width, this.height);
  g.fillStyle = "#5b6470";
  g.font = "10px sans-serif";
  g.fillText("whole run", 4, Math.min(this.stripH - 2, 10));
  g.fillText("calls", 4, this.height - 1);
  g.imageSmoothingEnabled = false;
  const x0 = this.x(0), x1 = this.x(level ? level.bins * level.bin : this.full);
  g.drawImage(this.image, x0, 0, Math.max(1, x1 - x0), this.stripH);
  // Where the calls are drawn one by one.
  g.fillStyle = "#1d232b";
  for (const [a, b] of d.detail) g.fillRect(this.x(a), this.stripH + 2, Math.max(1, this.x(b) - this.x(a)), DETAIL_MARK_H);
  g.strokeStyle = "#111";
  g.lineWidth = 1.5;
  const a = this.x(Math.max(0, v0)), b = this.x(Math.min(this.full, v1));
  g.strokeRect(a, 0.75, Math.max(2, b - a), this.height - 1.5);
};
