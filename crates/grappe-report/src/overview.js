// The overview strip: the whole run, per rank and time bin, coloured by
// the share of time in point-to-point calls and in collectives.
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

/** The whole run: per rank and time bin, the time in calls. */
GRAPPE.Overview = function (data, canvas, width, labelW) {
  const ov = data.overview, n = Math.max(1, ov.p2p.length);
  this.data = data;
  this.canvas = canvas;
  this.labelW = labelW;
  this.width = width;
  this.rowH = Math.max(1, Math.min(8, Math.floor(64 / n)));
  this.height = Math.max(12, n * this.rowH);
  this.full = Math.max(1, data.end);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(this.height * dpr);
  canvas.style.height = this.height + "px";
  this.ctx = canvas.getContext("2d");
  this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  this.image = this.render(ov);
};

GRAPPE.Overview.prototype.render = function (ov) {
  const bins = Math.max(1, ov.bins), n = ov.p2p.length;
  const off = document.createElement("canvas");
  off.width = bins;
  off.height = Math.max(1, n);
  const g = off.getContext("2d"), img = g.createImageData(bins, Math.max(1, n));
  const rgb = (hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  const base = rgb(GRAPPE.COLOURS.compute), p2p = rgb(GRAPPE.COLOURS.send), coll = rgb(GRAPPE.COLOURS.collective);
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < bins; b++) {
      let fp = (ov.p2p[r][b] || 0) / 1000, fc = (ov.coll[r][b] || 0) / 1000;
      const sum = fp + fc;
      if (sum > 1) {
        fp /= sum;
        fc /= sum;
      }
      const o = (r * bins + b) * 4;
      for (let c = 0; c < 3; c++) img.data[o + c] = base[c] * (1 - fp - fc) + p2p[c] * fp + coll[c] * fc;
      img.data[o + 3] = 255;
    }
  }
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
  const g = this.ctx, ov = this.data.overview;
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, this.width, this.height);
  g.fillStyle = "#5b6470";
  g.font = "10px sans-serif";
  g.fillText("whole run", 4, Math.min(this.height - 2, 10));
  g.imageSmoothingEnabled = false;
  const x0 = this.x(ov.start), x1 = this.x(ov.start + ov.bins * ov.bin_ns);
  g.drawImage(this.image, x0, 0, Math.max(1, x1 - x0), this.height);
  // Veils what the diagram does not embed.
  g.fillStyle = "rgba(255,255,255,0.45)";
  if (this.data.window_end !== null) {
    const xw = this.x(this.data.window_end);
    g.fillRect(xw, 0, this.width - xw, this.height);
  }
  if (this.data.window_start > 0) {
    const xs = this.x(this.data.window_start);
    g.fillRect(this.labelW, 0, xs - this.labelW, this.height);
  }
  g.strokeStyle = "#111";
  g.lineWidth = 1.5;
  const a = this.x(Math.max(0, v0)), b = this.x(Math.min(this.full, v1));
  g.strokeRect(a, 0.75, Math.max(2, b - a), this.height - 1.5);
};
