// Reads the embedded data and draws everything; says on <body> whether
// it rendered (data-rendered="ok") or failed (data-error).
"use strict";
(function () {
  const GRAPPE = window.GRAPPE;

  function fail(error) {
    const message = String((error && (error.stack || error.message)) || error || "unknown error");
    document.body.dataset.error = message;
    delete document.body.dataset.rendered;
    const banner = document.createElement("div");
    banner.className = "error-banner";
    banner.textContent = "The report could not be drawn: " + message;
    document.body.prepend(banner);
  }

  window.addEventListener("error", (ev) => fail(ev.error || ev.message));
  window.addEventListener("unhandledrejection", (ev) => fail(ev.reason));

  try {
    const data = JSON.parse(document.getElementById("report-data").textContent);
    const byId = (id) => document.getElementById(id);
    GRAPPE.buildLegend(byId("legend"));
    GRAPPE.diagram = new GRAPPE.Diagram(data.diagram, {
      canvas: byId("diagram"),
      box: byId("diagram-box"),
      overview: byId("overview"),
      tooltip: byId("tooltip"),
      reset: byId("reset"),
      arrows: byId("show-arrows"),
      regions: byId("show-regions"),
      range: byId("view-range"),
    }, data.world_size);
    GRAPPE.renderTables(data.profile, data.sites_total, byId("profile-tables"));
    GRAPPE.matrix = new GRAPPE.Matrix(byId("matrix"), byId("matrix-tip"), data.matrix);
    document.body.dataset.rendered = "ok";
    if (window.location.hash.includes("selftest")) GRAPPE.selfTest();
  } catch (error) {
    fail(error);
  }
})();
