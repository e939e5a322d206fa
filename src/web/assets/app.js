// The dashboard's own client module (the page's only script besides htmx, its SSE extension and
// uPlot): it sends the CSRF token with htmx's requests and draws the charts from the JSON data
// the server put in <script type="application/json"> elements (data, never executed).
(() => {
  const COLORS = ["#1a7f37", "#cf222e", "#0969da"];
  const HEIGHT = 130;

  document.addEventListener("htmx:configRequest", (event) => {
    const token = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content");
    if (token) event.detail.headers["X-CSRF-Token"] = token;
  });

  // The live stream's state, for people (the badge, and a notice when signed out) and tests
  // (data-live on the stream's element): open; reconnecting (the stream broke, the server
  // answers); disconnected (the server does not answer); signed-out (the stream answers 401:
  // the session ended, with a restart under a new session key or a revoked token: the server
  // ends such a stream at its next heartbeat); refused (the stream answers 403: a proxy or the
  // server will not serve it). An EventSource cannot see why it failed, so on an error the page
  // asks the stream's address itself, and reads only the status. Signed out and refused are
  // final: the page stops reconnecting and says so.
  const LIVE_WORDS = { open: "live", reconnecting: "reconnecting", disconnected: "disconnected", "signed-out": "signed out", refused: "refused" };
  const REFUSED_WORDS = {
    "signed-out": "You are signed out: this page no longer updates. ",
    refused: "The server refused this page's live updates (403): it no longer updates. ",
  };

  function setLive(stream, state) {
    stream.setAttribute("data-live", state);
    for (const badge of stream.querySelectorAll(".live-badge")) badge.textContent = LIVE_WORDS[state];
  }

  function refused(stream, source, state) {
    // No more attempts: the extension reconnects only while the element names a stream.
    stream.removeAttribute("sse-connect");
    source?.close();
    setLive(stream, state);
    if (document.getElementById("signed-out")) return;
    const notice = document.createElement("p");
    notice.id = "signed-out";
    notice.className = "signed-out";
    notice.setAttribute("role", "alert");
    const link = document.createElement("a");
    link.href = `/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`;
    link.textContent = "Sign in again";
    notice.append(REFUSED_WORDS[state], link, " to see it live.");
    stream.before(notice);
  }

  const probing = new WeakSet();
  document.addEventListener("htmx:sseOpen", (event) => {
    setLive(event.target, "open");
  });
  document.addEventListener("htmx:sseError", (event) => {
    const stream = event.target;
    const url = stream.getAttribute("sse-connect");
    if (!url || stream.getAttribute("data-live") === "signed-out" || stream.getAttribute("data-live") === "refused") return;
    if (stream.getAttribute("data-live") === "open" || !stream.hasAttribute("data-live")) setLive(stream, "reconnecting");
    if (probing.has(stream)) return;
    probing.add(stream);
    const asking = new AbortController();
    fetch(url, { headers: { accept: "text/event-stream" }, cache: "no-store", signal: asking.signal })
      .then(
        (response) => {
          asking.abort(); // the status is all it wanted
          if (response.status === 401) refused(stream, event.detail?.source, "signed-out");
          else if (response.status === 403) refused(stream, event.detail?.source, "refused");
          else if (stream.getAttribute("data-live") !== "open") setLive(stream, "reconnecting");
        },
        () => {
          if (stream.getAttribute("data-live") !== "open") setLive(stream, "disconnected");
        },
      )
      .finally(() => probing.delete(stream));
  });

  function drawCharts(root) {
    if (typeof uPlot !== "function") return;
    for (const el of root.querySelectorAll("[data-chart]")) {
      if (el.dataset.drawn) continue;
      // The data: in the element's data-series (content the live stream swaps in), or in the
      // <script type="application/json"> it names.
      const source = el.dataset.series ?? document.getElementById(el.dataset.chart)?.textContent;
      if (!source) continue;
      const data = JSON.parse(source);
      el.dataset.drawn = "1";
      const series = data.series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2 }));
      // Counts: whole-number ticks only, and the axis says what it counts.
      const yValues = (_u, splits) => {
        const labels = splits.map((v) => (Number.isInteger(v) ? String(v) : ""));
        // What the axis says, as text (uPlot draws it on a canvas, which nothing can read).
        el.dataset.yAxis = `${data.unit ?? ""}: ${labels.filter(Boolean).join(" ")}`;
        return labels;
      };
      const options = {
        width: widthOf(el),
        height: HEIGHT,
        cursor: { show: false },
        legend: { show: true, live: false },
        // x: times (seconds since the epoch), or plain numbers (hours of the day) when time is false.
        scales: { x: { time: data.time !== false }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { space: 60 },
          {
            size: 36,
            space: 24,
            incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
            values: yValues,
            label: data.unit,
            labelSize: 16,
            labelFont: "12px system-ui, sans-serif",
            font: "12px system-ui, sans-serif",
          },
        ],
        series: [{}, ...series],
      };
      plots.push({ el, plot: new uPlot(options, [data.x, ...data.series.map((s) => s.values)], el) });
    }
  }

  // Charts follow their container's width (a phone turned, a window resized).
  const plots = [];
  const widthOf = (el) => Math.max(200, Math.min(560, el.clientWidth || 280));
  window.addEventListener("resize", () => {
    for (const { el, plot } of plots) if (el.isConnected) plot.setSize({ width: widthOf(el), height: HEIGHT });
  });

  // "3 s ago" stays true while the page is open: each <time data-elapsed> counts on from the
  // seconds the server gave when this browser first saw it (no clock of the browser's compared
  // with the server's). Said as duration() in src/web/pages/format.ts says it.
  const firstSeen = new WeakMap();
  function duration(seconds) {
    if (seconds < 60) return `${Math.round(seconds)} s`;
    const minutes = Math.round(seconds / 60);
    if (minutes < 60) return `${minutes} min`;
    const hours = Math.floor(minutes / 60);
    return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
  }
  // An ETA (<time data-remaining>) counts down the same way, said as etaText() in
  // src/web/pages/queue-rows.ts says it.
  function eta(seconds) {
    if (seconds <= 0) return "due";
    if (seconds < 60) return "< 1 min";
    return `~${duration(Math.round(seconds / 60) * 60)}`;
  }
  function tick() {
    const now = Date.now();
    for (const el of document.querySelectorAll("time[data-elapsed]")) {
      if (!firstSeen.has(el)) firstSeen.set(el, now - Number(el.dataset.elapsed) * 1000);
      const text = duration(Math.floor((now - firstSeen.get(el)) / 1000));
      if (el.textContent !== text) el.textContent = text;
    }
    for (const el of document.querySelectorAll("time[data-remaining]")) {
      if (!firstSeen.has(el)) firstSeen.set(el, now + Number(el.dataset.remaining) * 1000);
      const text = eta(Math.round((firstSeen.get(el) - now) / 1000));
      if (el.textContent !== text) el.textContent = text;
    }
  }
  setInterval(tick, 1000);

  // A row's "⋯" menu (a <details>) closes on Escape (focus back on its "⋯"), on a click elsewhere,
  // and when another opens; its action's answer closes it too.
  const openMenus = () => document.querySelectorAll("details.row-menu[open]");
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const menu of openMenus()) {
      menu.open = false;
      if (menu.contains(document.activeElement)) menu.querySelector("summary")?.focus();
    }
  });
  document.addEventListener("click", (event) => {
    for (const menu of openMenus()) if (!menu.contains(event.target)) menu.open = false;
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    event.target.closest?.("details.row-menu")?.removeAttribute("open");
  });

  document.addEventListener("DOMContentLoaded", () => {
    drawCharts(document);
    tick();
  });
  document.addEventListener("htmx:afterSwap", (event) => {
    drawCharts(event.target);
    tick();
  });
  // The live stream's updates are out-of-band swaps (a new queue card brings a chart to draw).
  document.addEventListener("htmx:oobAfterSwap", () => {
    drawCharts(document);
    tick();
  });
})();
