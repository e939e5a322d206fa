// The dashboard's own client module (the page's only script besides htmx, its SSE extension and
// uPlot): it sends the CSRF token with htmx's requests and draws the charts from the JSON data
// the server put in <script type="application/json"> elements (data, never executed).
(() => {
  const COLORS = ["#1a7f37", "#cf222e", "#0969da"];

  document.addEventListener("htmx:configRequest", (event) => {
    const token = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content");
    if (token) event.detail.headers["X-CSRF-Token"] = token;
  });

  // The live stream's state, for people (the "live" badge) and tests: open, or reconnecting.
  document.addEventListener("htmx:sseOpen", (event) => {
    event.target.setAttribute("data-live", "open");
  });
  document.addEventListener("htmx:sseError", (event) => {
    event.target.setAttribute("data-live", "reconnecting");
  });

  function drawCharts(root) {
    if (typeof uPlot !== "function") return;
    for (const el of root.querySelectorAll("[data-chart]")) {
      if (el.dataset.drawn) continue;
      const source = document.getElementById(el.dataset.chart);
      if (!source) continue;
      const data = JSON.parse(source.textContent);
      el.dataset.drawn = "1";
      const series = data.series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2 }));
      const options = {
        width: widthOf(el),
        height: 110,
        cursor: { show: false },
        legend: { show: true, live: false },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{ space: 60 }, { size: 30, incrs: [1, 2, 5, 10, 20, 50, 100] }],
        series: [{}, ...series],
      };
      plots.push({ el, plot: new uPlot(options, [data.x, ...data.series.map((s) => s.values)], el) });
    }
  }

  // Charts follow their container's width (a phone turned, a window resized).
  const plots = [];
  const widthOf = (el) => Math.max(200, Math.min(560, el.clientWidth || 280));
  window.addEventListener("resize", () => {
    for (const { el, plot } of plots) if (el.isConnected) plot.setSize({ width: widthOf(el), height: 110 });
  });

  document.addEventListener("DOMContentLoaded", () => drawCharts(document));
  document.addEventListener("htmx:afterSwap", (event) => drawCharts(event.target));
})();
