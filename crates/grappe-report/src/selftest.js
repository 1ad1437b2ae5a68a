// With "#selftest" in the address, the page drives its own controls as a
// user would (wheel, drag, hover, reset, matrix hover) and says on <body>
// that they worked (data-selftest="ok"); the browser tests load it so.
"use strict";
var GRAPPE = (window.GRAPPE = window.GRAPPE || {});

GRAPPE.selfTest = function () {
  const d = GRAPPE.diagram, c = d.el.canvas, box = c.getBoundingClientRect();
  const at = (x, y, extra) => Object.assign({ clientX: box.left + x, clientY: box.top + y, bubbles: true }, extra);
  const check = (ok, what) => {
    if (!ok) throw new Error("self-test: " + what);
  };
  const y = d.bands(0).callY + 2;
  const span = d.v1 - d.v0;
  c.dispatchEvent(new WheelEvent("wheel", at(d.LABEL_W + 200, y, { deltaY: -400, cancelable: true })));
  d.draw();
  // Views under 20 ns are not zoomed into (a trace of one instant).
  if (span > 100) {
    check(d.v1 - d.v0 < span, "the wheel did not zoom in");
    const v0 = d.v0;
    c.dispatchEvent(new MouseEvent("mousedown", at(400, y)));
    window.dispatchEvent(new MouseEvent("mousemove", at(300, y)));
    window.dispatchEvent(new MouseEvent("mouseup", at(300, y)));
    d.draw();
    check(d.v0 > v0, "dragging did not pan");
  }
  // Hovers call k of lane i, zoomed in on it; returns its tooltip.
  const hover = (i, k) => {
    const lane = d.lanes[i], s = lane.start[k], e = lane.end[k];
    d.setView(s - 4 * (e - s + 1), e + 4 * (e - s + 1));
    d.draw();
    c.dispatchEvent(new MouseEvent("mousemove", at(d.x((s + e) / 2), d.bands(i).callY + d.bands(i).callH - 2)));
    return d.el.tooltip.hidden ? "" : d.el.tooltip.textContent;
  };
  const lane = d.lanes.find((l) => l.start.length > 0);
  if (lane) {
    const tip = hover(d.lanes.indexOf(lane), Math.floor(lane.start.length / 2));
    check(tip.includes("rank " + lane.raw.rank), "no tooltip on a call");
  }
  // The first sendrecv's tooltip, on <body> for the tests to read.
  for (const [i, l] of d.lanes.entries()) {
    const k = l.raw.k.findIndex((kind) => d.data.kinds[kind].category === "sendrecv");
    if (k >= 0) {
      document.body.dataset.sendrecvTip = hover(i, k);
      break;
    }
  }
  d.el.reset.click();
  d.draw();
  check(d.v0 === d.w0 && d.v1 === d.w1, "reset did not go back to the window");
  const m = GRAPPE.matrix, mbox = m.canvas.getBoundingClientRect();
  const mx = { clientX: mbox.left + m.margin + 1, clientY: mbox.top + m.margin + 1, bubbles: true };
  m.canvas.dispatchEvent(new MouseEvent("mousemove", mx));
  check(!m.tip.hidden && m.tip.textContent.includes("messages"), "no matrix tooltip");
  document.body.dataset.selftest = "ok";
};
