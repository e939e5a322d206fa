// The dashboard's own client module (the page's only script besides htmx, its SSE extension and
// uPlot): it sends the CSRF token with htmx's requests and draws the charts from the JSON data
// the server put in <script type="application/json"> elements (data, never executed).
(() => {
  const COLORS = ["#1a7f37", "#cf222e", "#0969da"];

  document.addEventListener("htmx:configRequest", (event) => {
    const token = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content");
    if (token) event.detail.headers["X-CSRF-Token"] = token;
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
        width: Math.max(200, Math.min(560, el.clientWidth || 280)),
        height: 110,
        cursor: { show: false },
        legend: { show: true },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{ space: 60 }, { size: 30, incrs: [1, 2, 5, 10, 20, 50, 100] }],
        series: [{}, ...series],
      };
      new uPlot(options, [data.x, ...data.series.map((s) => s.values)], el);
    }
  }

  document.addEventListener("DOMContentLoaded", () => drawCharts(document));
  document.addEventListener("htmx:afterSwap", (event) => drawCharts(event.target));
})();
