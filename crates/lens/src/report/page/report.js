// lens report: draws the run's data (the JSON block above) with canvas and SVG, no library.
// What a test reads back is in data-* attributes: lanes, step bars, flags, counts, state.
"use strict";
(function () {
  const errors = [];
  function fail(message) {
    errors.push(String(message));
    document.body.dataset.errors = String(errors.length);
    const banner = document.getElementById("error-banner");
    banner.hidden = false;
    banner.textContent = "The report could not draw everything: " + errors.join("; ");
  }
  window.addEventListener("error", (e) => fail(e.message));
  const consoleError = console.error.bind(console);
  console.error = (...args) => { fail(args.join(" ")); consoleError(...args); };
  const started = performance.now();
  const D = JSON.parse(document.getElementById("lens-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function fmtMs(ms) {
    if (ms >= 60000) return (ms / 60000).toFixed(2) + " min";
    if (ms >= 1000) return (ms / 1000).toFixed(3) + " s";
    if (ms >= 1) return ms.toFixed(2) + " ms";
    return (ms * 1000).toFixed(1) + " µs";
  }
  function fmtNum(n) {
    if (n === null || n === undefined) return "–";
    if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return Number.isInteger(n) ? String(n) : n.toPrecision(4);
  }
  function ranksText(list) {
    if (!list.length) return "none";
    const shown = list.slice(0, 8).join(", ") + (list.length > 8 ? " … (" + list.length + ")" : "");
    return (list.length === 1 ? "rank " : "ranks ") + shown;
  }
  function hue(i) { return (i * 137.508) % 360; }

  // ---- overview ---------------------------------------------------------------------------
  function overview() {
    const m = D.meta, box = document.getElementById("overview");
    const dropped = D.health.totals ? D.health.totals[D.health.columns.indexOf("dropped")] : null;
    const skipped = D.skipped.reduce((a, s) => a + s.count, 0);
    const cards = [
      ["run", m.run_id || "–"], ["ranks", m.ranks], ["nodes", m.nodes], ["spans", fmtNum(m.spans)],
      ["duration", fmtMs(m.duration_ms)], ["job median step", D.distribution.rows.length ? fmtMs(D.distribution.job_median_ms) : "–"],
      ["stragglers", ranksText(D.distribution.stragglers), D.distribution.stragglers.length ? "warn" : ""],
      ["crashed", ranksText(m.crashed), m.crashed.length ? "bad" : ""],
      ["dropped", dropped === null ? "unknown" : fmtNum(dropped), dropped ? "warn" : ""],
      ["lines skipped", fmtNum(skipped), skipped ? "warn" : ""],
    ];
    for (const [k, v, cls] of cards) {
      const c = el("div", { class: "card " + (cls || ""), "data-card": k });
      c.append(el("b", {}, String(v)), el("span", {}, k));
      box.append(c);
    }
  }

  // ---- timeline ---------------------------------------------------------------------------
  const ROW = 9, MAX_LEVELS = 8, GROUP_H = 22, NODE_H = 16, AXIS_H = 22;
  const layout = []; // {lane, y, h, levels, byDepth}
  let plotH = 0, view = [0, Math.max(D.meta.duration_ms, 0.001)];
  const full = view.slice();

  function buildLayout() {
    const labels = document.getElementById("tl-labels");
    let y = 0, node = null;
    for (const lane of D.lanes) {
      const n = lane.node || "";
      if (n !== node) {
        node = n;
        const head = el("div", { class: "node-label", "data-node": n }, n || "–");
        head.style.top = (y + AXIS_H) + "px"; head.style.height = NODE_H + "px";
        labels.append(head);
        y += NODE_H;
      }
      let h, levels = 1, byDepth = [];
      if (lane.kind === "rank") {
        for (const s of lane.spans) levels = Math.max(levels, Math.min(s[2], MAX_LEVELS - 1) + 1);
        for (let d = 0; d < levels; d++) byDepth.push([]);
        for (const s of lane.spans) byDepth[Math.min(s[2], MAX_LEVELS - 1)].push(s);
        h = levels * ROW + 6;
      } else {
        h = GROUP_H;
      }
      h = Math.max(h, 18);
      const stepBars = lane.kind === "rank" ? lane.spans.filter((s) => s[5] === 1).length : lane.bands.length;
      const label = el("div", {
        class: "lane-label" + (lane.straggler ? " straggler" : ""),
        "data-kind": lane.kind, "data-node": n, "data-steps": String(stepBars),
        "data-straggler": String(!!lane.straggler), "data-crashed": String(lane.kind === "rank" ? !!lane.crashed : lane.crashed > 0),
      });
      if (lane.kind === "rank") label.dataset.rank = String(lane.rank);
      else label.dataset.ranks = lane.ranks.join(",");
      label.title = lane.kind === "rank"
        ? lane.label + ": " + lane.steps + " steps, median " + fmtMs(lane.median_ms) + (lane.crashed ? "; crashed: " + lane.crashed : "")
        : lane.label + ": " + lane.ranks.length + " ranks aggregated";
      label.append(document.createTextNode(lane.label + (lane.kind === "group" ? " (" + lane.ranks.length + ")" : "")));
      if (lane.straggler) label.append(el("span", { class: "tag straggler" }, "straggler"));
      if (lane.kind === "rank" ? lane.crashed : lane.crashed > 0) label.append(el("span", { class: "tag crashed" }, "crashed"));
      label.style.top = (y + AXIS_H) + "px"; label.style.height = h + "px"; label.style.lineHeight = Math.min(h, 18) + "px";
      labels.append(label);
      layout.push({ lane, y, h, levels, byDepth });
      y += h;
    }
    plotH = Math.max(y, 30);
    labels.style.height = (plotH + AXIS_H) + "px";
    document.getElementById("tl").dataset.lanes = String(D.lanes.length);
  }

  const canvas = document.getElementById("tl-canvas"), axis = document.getElementById("tl-axis");
  let width = 800;
  function sizeCanvases() {
    const dpr = window.devicePixelRatio || 1;
    width = Math.max(canvas.parentElement.clientWidth, 200);
    for (const [c, h] of [[canvas, plotH], [axis, 22]]) {
      c.width = Math.round(width * dpr); c.height = Math.round(h * dpr);
      c.style.height = h + "px";
      c.getContext("2d").setTransform(dpr, 0, 0, dpr, 0, 0);
    }
  }
  const X = (t) => (t - view[0]) / (view[1] - view[0]) * width;
  function firstFrom(list, t) { // first index whose start + dur >= t (lists sorted by start)
    let lo = 0, hi = list.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (list[mid][0] < t) lo = mid + 1; else hi = mid; }
    // Back up over spans that started earlier and still run at t (bounded walk).
    let i = lo;
    for (let k = 0; k < 64 && i > 0; k++) { if (list[i - 1][0] + list[i - 1][1] >= t) i--; else if (k > 8) break; }
    return i;
  }
  function ticks(a, b) {
    const span = b - a, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) out.push(t);
    return out;
  }
  function draw() {
    const g = canvas.getContext("2d"), ga = axis.getContext("2d");
    g.clearRect(0, 0, width, plotH); ga.clearRect(0, 0, width, 22);
    ga.fillStyle = "#5b6475"; ga.font = "10px system-ui, sans-serif";
    g.strokeStyle = "#eef0f4"; g.lineWidth = 1;
    for (const t of ticks(view[0], view[1])) {
      const x = Math.round(X(t)) + 0.5;
      g.beginPath(); g.moveTo(x, 0); g.lineTo(x, plotH); g.stroke();
      ga.fillRect(x, 14, 1, 8); ga.fillText(fmtMs(t), x + 3, 11);
    }
    for (const L of layout) {
      const lane = L.lane;
      if (lane.straggler && lane.kind === "rank") { g.fillStyle = "#fde8e8"; g.fillRect(0, L.y, width, L.h); }
      g.fillStyle = "#d8dce4"; g.fillRect(0, L.y + L.h - 1, width, 1);
      if (lane.kind === "rank") {
        L.byDepth.forEach((list, d) => {
          let lastX = -1;
          for (let i = firstFrom(list, view[0]); i < list.length; i++) {
            const s = list[i];
            if (s[0] > view[1]) break;
            const x0 = X(s[0]), x1 = X(s[0] + s[1]);
            if (x1 < 0) continue;
            const w = Math.max(x1 - x0, 1);
            if (w < 1.5 && Math.floor(x0) === lastX) continue; // one bar per pixel when crowded
            lastX = Math.floor(x0);
            g.fillStyle = s[5] === 1 ? "#3b6fd6" : "hsl(" + hue(s[3]) + ",55%,58%)";
            g.fillRect(x0, L.y + 3 + d * ROW, w, ROW - 1);
          }
        });
      } else {
        for (const b of lane.bands) {
          if (b[0] > view[1] || b[0] + b[1] < view[0]) continue;
          const slow = b[3] > b[2] * 1.1;
          g.fillStyle = slow ? "#e08a00" : "#3b6fd6";
          g.fillRect(X(b[0]), L.y + 4, Math.max(X(b[0] + b[1]) - X(b[0]), 1), L.h - 9);
        }
      }
      for (const f of lane.faults) {
        const x = X(f[0]);
        if (x < -5 || x > width + 5) continue;
        const crash = f[1].indexOf("crashed") !== -1;
        g.fillStyle = crash ? "#c62828" : "#e08a00";
        g.beginPath(); g.moveTo(x - 5, L.y + 1); g.lineTo(x + 5, L.y + 1); g.lineTo(x, L.y + (crash ? L.h - 2 : 9)); g.closePath(); g.fill();
      }
    }
    document.getElementById("view-range").textContent = fmtMs(view[0]) + " – " + fmtMs(view[1]);
  }
  let pending = false;
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }
  function zoom(factor, at) {
    const span = view[1] - view[0], min = 0.001;
    const nspan = Math.min(Math.max(span * factor, min), (full[1] - full[0]) * 1.05);
    const c = at === undefined ? (view[0] + view[1]) / 2 : at;
    const r = (c - view[0]) / span;
    view = [c - r * nspan, c - r * nspan + nspan];
    redraw();
  }
  function hit(mx, my) {
    const t = view[0] + mx / width * (view[1] - view[0]), tol = 3 / width * (view[1] - view[0]);
    const L = layout.find((l) => my >= l.y && my < l.y + l.h);
    if (!L) return null;
    for (const f of L.lane.faults) if (Math.abs(f[0] - t) <= tol * 2 && my - L.y < 12) return { text: f[1] + "\nat " + fmtMs(f[0]) };
    if (L.lane.kind === "rank") {
      const d = Math.floor((my - L.y - 3) / ROW);
      const list = L.byDepth[d];
      if (!list) return null;
      for (let i = firstFrom(list, t - tol); i < list.length && list[i][0] <= t + tol; i++) {
        const s = list[i];
        if (s[0] - tol <= t && t <= s[0] + s[1] + tol) {
          let text = D.names[s[3]] + "  " + fmtMs(s[1]) + "\n" + L.lane.label + ", at " + fmtMs(s[0]);
          if (s[4] >= 0) {
            const attrs = JSON.parse(D.attrs[s[4]]);
            for (const k in attrs) text += "\n" + k + " = " + (typeof attrs[k] === "string" ? attrs[k] : JSON.stringify(attrs[k]));
          }
          return { text };
        }
      }
    } else {
      for (const b of L.lane.bands) {
        if (b[0] - tol <= t && t <= b[0] + b[1] + tol) {
          const i = L.lane.bands.indexOf(b);
          return { text: L.lane.label + ": step " + (i + 1) + " on " + b[5] + " ranks\nmedian " + fmtMs(b[2]) + ", slowest " + fmtMs(b[3]) + " (rank " + b[4] + ")" };
        }
      }
    }
    return null;
  }
  function timeline() {
    buildLayout();
    sizeCanvases();
    draw();
    const tip = document.getElementById("tooltip");
    let drag = null;
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      zoom(e.deltaY > 0 ? 1.25 : 0.8, view[0] + (e.clientX - r.left) / width * (view[1] - view[0]));
    }, { passive: false });
    canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, v: view.slice() }; canvas.style.cursor = "grabbing"; });
    window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
    canvas.addEventListener("mousemove", (e) => {
      const r = canvas.getBoundingClientRect();
      if (drag) {
        const dt = (e.clientX - drag.x) / width * (drag.v[1] - drag.v[0]);
        view = [drag.v[0] - dt, drag.v[1] - dt];
        tip.hidden = true; redraw(); return;
      }
      const h = hit(e.clientX - r.left, e.clientY - r.top);
      if (!h) { tip.hidden = true; return; }
      tip.textContent = h.text; tip.hidden = false;
      tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 470) + "px";
      tip.style.top = (e.clientY + 14) + "px";
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("dblclick", () => { view = full.slice(); redraw(); });
    document.getElementById("zoom-in").onclick = () => zoom(0.5);
    document.getElementById("zoom-out").onclick = () => zoom(2);
    document.getElementById("zoom-reset").onclick = () => { view = full.slice(); redraw(); };
    window.addEventListener("resize", () => { sizeCanvases(); draw(); });
  }

  // ---- step-time distribution ---------------------------------------------------------------
  function distribution() {
    const box = document.getElementById("dist"), rows = D.distribution.rows;
    if (!rows.length) { box.append(el("p", { class: "hint" }, "No step spans (a span named `step` or `…_step`, or with `dl.iteration`).")); return; }
    const med = D.distribution.job_median_ms, thr = med * (1 + D.distribution.threshold);
    box.append(el("p", { class: "hint" }, "Box: 25th to 75th percentile, whiskers 5th to 95th, tick the median. A straggler's median is more than " +
      Math.round(D.distribution.threshold * 100) + " % above the job's median (" + fmtMs(med) + ", dashed); stragglers: " +
      (D.distribution.stragglers.length ? "ranks " + D.distribution.stragglers.join(", ") : "none") + "."));
    const W = 900, left = 110, rh = 14, H = rows.length * rh + 36;
    const max = Math.max(...rows.map((r) => r.p95), thr) * 1.08 || 1;
    const x = (v) => left + v / max * (W - left - 20);
    const s = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, id: "dist-svg" });
    rows.forEach((r, i) => {
      const y = 4 + i * rh, g = svg("g", { class: "dist-row" + (r.straggler ? " straggler" : ""), "data-rank": r.rank, "data-straggler": String(r.straggler), "data-median-ms": r.p50, "data-steps": r.n });
      const t = svg("text", { x: 4, y: y + 10, class: "rank" }); t.textContent = "rank " + r.rank + (r.straggler ? " ▲ straggler" : "");
      const col = r.straggler ? "#c62828" : "#3b6fd6";
      g.append(t,
        svg("line", { x1: x(r.p5), x2: x(r.p95), y1: y + 6, y2: y + 6, stroke: col }),
        svg("rect", { x: x(r.p25), y: y + 1, width: Math.max(x(r.p75) - x(r.p25), 1), height: 10, fill: col, "fill-opacity": 0.35, stroke: col }),
        svg("rect", { x: x(r.p50) - 1, y: y, width: 2, height: 12, fill: col }));
      const tip = svg("title", {}); tip.textContent = "rank " + r.rank + ": " + r.n + " steps, median " + fmtMs(r.p50) + ", p95 " + fmtMs(r.p95) + ", max " + fmtMs(r.max);
      g.append(tip);
      s.append(g);
    });
    for (const [v, dash, label, y] of [[med, "4 3", "job median", H - 18], [thr, "1 3", "straggler line", H - 5]]) {
      s.append(svg("line", { x1: x(v), x2: x(v), y1: 0, y2: y - 9, stroke: "#1d2330", "stroke-dasharray": dash }));
      const t = svg("text", { x: x(v) + 3, y }); t.textContent = label + " " + fmtMs(v); s.append(t);
    }
    box.append(s);
  }

  // ---- small line charts --------------------------------------------------------------------
  function chart(title, t, mid, lo, hi, unit) {
    const W = 300, H = 120, l = 44, b = 18, c = el("div", { class: "chart", "data-chart": title });
    c.append(el("h3", {}, title + (unit ? " (" + unit + ")" : "")));
    const s = svg("svg", { width: W, height: H });
    const tmax = D.meta.duration_ms || 1;
    const vals = (hi || mid).concat(lo || mid);
    let vmin = Math.min(...vals), vmax = Math.max(...vals);
    if (!isFinite(vmin)) { vmin = 0; vmax = 1; }
    if (vmax === vmin) { vmax += 1; vmin -= vmin === 0 ? 0 : 1; }
    const X = (v) => l + v / tmax * (W - l - 6), Y = (v) => 6 + (1 - (v - vmin) / (vmax - vmin)) * (H - b - 8);
    if (lo && hi && t.length) {
      const pts = t.map((v, i) => X(v) + "," + Y(hi[i])).concat(t.map((v, i) => X(v) + "," + Y(lo[i])).reverse());
      s.append(svg("polygon", { points: pts.join(" "), fill: "#3b6fd6", "fill-opacity": 0.18 }));
    }
    s.append(svg("polyline", { points: t.map((v, i) => X(v) + "," + Y(mid[i])).join(" "), fill: "none", stroke: "#3b6fd6", "stroke-width": 1.5 }));
    for (const [v, y] of [[vmax, 12], [vmin, H - b]]) { const tx = svg("text", { x: 2, y }); tx.textContent = fmtNum(v); s.append(tx); }
    const tx = svg("text", { x: l, y: H - 4 }); tx.textContent = "0"; s.append(tx);
    const te = svg("text", { x: W - 50, y: H - 4 }); te.textContent = fmtMs(tmax); s.append(te);
    s.append(svg("line", { x1: l, x2: W - 6, y1: H - b + 2, y2: H - b + 2, stroke: "#d8dce4" }));
    c.append(s);
    return c;
  }
  function throughput() {
    const box = document.getElementById("tp"), T = D.throughput;
    const t = T.steps_per_s.map((_, i) => (i + 0.5) * T.bin_ms);
    const row = el("div", { id: "charts-tp", style: "display:flex;gap:10px;flex-wrap:wrap" });
    row.append(chart("steps per second, all ranks", t, T.steps_per_s, null, null, "steps/s"), chart("spans per second, all ranks", t, T.spans_per_s, null, null, "spans/s"));
    box.append(row);
  }
  function metrics() {
    const box = document.getElementById("charts");
    if (!D.metrics.length) { box.append(el("p", { class: "hint" }, "No metric points in the run folder.")); return; }
    for (const m of D.metrics) box.append(chart(m.name, m.t, m.median, m.min, m.max, m.unit));
  }

  // ---- exporter health ----------------------------------------------------------------------
  function health() {
    const box = document.getElementById("health-table"), H = D.health;
    if (H.note) box.append(el("p", { class: "hint" }, H.note));
    if (!H.rows.length) return;
    const names = { produced: "spans produced", exported: "spans exported", data_points_exported: "points exported", log_records_exported: "logs exported",
      dropped: "dropped", spooled: "spooled", in_spool: "still spooled", retries: "retries", restarts: "restarts", reloads: "reloads", latency_p99_us: "p99 export µs" };
    const t = el("table", { id: "health-rows" }), head = el("tr");
    head.append(el("th", {}, "rank"), el("th", { class: "text" }, "node"), el("th", { class: "text" }, "status"));
    for (const c of H.columns) head.append(el("th", {}, names[c] || c));
    head.append(el("th", { class: "text" }, "dropped by reason"));
    t.append(head);
    const di = H.columns.indexOf("dropped");
    const reasons = (r) => r ? Object.entries(r).filter(([, v]) => v > 0).map(([k, v]) => k + " " + v).join(", ") : "";
    for (const r of H.rows) {
      const tr = el("tr", { "data-rank": r.rank, "data-dropped": String(r.values[di] ?? ""), "data-crashed": String(r.crashed) });
      if (r.crashed) tr.classList.add("crashed");
      if (r.values[di] > 0) tr.classList.add("dropped");
      tr.append(el("td", {}, String(r.rank)), el("td", { class: "text node" }, r.node), el("td", { class: "text" }, r.status));
      r.values.forEach((v, i) => tr.append(el("td", { class: H.columns[i] }, fmtNum(v))));
      tr.append(el("td", { class: "text" }, reasons(r.dropped_by_reason)));
      if (r.notes && r.notes.length) tr.title = r.notes.join("\n");
      t.append(tr);
    }
    const tot = el("tr", { class: "totals", id: "health-totals", "data-dropped": String(H.totals[di]) });
    tot.append(el("td", {}, "all"), el("td", {}), el("td", { class: "text" }, D.meta.ranks + " ranks"));
    H.totals.forEach((v, i) => tot.append(el("td", {}, H.columns[i] === "latency_p99_us" ? "" : fmtNum(v))));
    tot.append(el("td", { class: "text" }, reasons(H.dropped_by_reason)));
    t.append(tot);
    box.append(t);
  }

  // ---- logs ---------------------------------------------------------------------------------
  const ORDER = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
  function logs() {
    const L = D.logs, box = document.getElementById("log-table");
    document.getElementById("log-counts").textContent = L.total + " records: " +
      ORDER.filter((s) => L.counts[s]).map((s) => s + " " + L.counts[s]).join(", ") + (L.rows.length < L.total ? " (first " + L.rows.length + " listed)" : "");
    if (!L.rows.length) { box.append(el("p", { class: "hint" }, "No log records in the run folder.")); return; }
    const t = el("table", { id: "log-rows" }), head = el("tr");
    for (const h of ["time", "rank", "severity", "body", "scope"]) head.append(el("th", { class: h === "body" || h === "scope" ? "text" : "" }, h));
    t.append(head);
    for (const r of L.rows) {
      const tr = el("tr", { "data-severity": r[2] });
      tr.append(el("td", {}, fmtMs(r[0])), el("td", {}, String(r[1])), el("td", {}, r[2]), el("td", { class: "text" }, r[3]), el("td", { class: "text" }, r[4]));
      t.append(tr);
    }
    box.append(t);
    const sel = document.getElementById("severity");
    sel.addEventListener("change", () => {
      const min = ORDER.indexOf(sel.value);
      let shown = 0;
      for (const tr of t.querySelectorAll("tr[data-severity]")) {
        const keep = ORDER.indexOf(tr.dataset.severity) >= min;
        tr.hidden = !keep; if (keep) shown++;
      }
      t.dataset.shown = String(shown);
    });
  }

  function config() {
    document.getElementById("config-text").textContent = D.config || D.config_note || "";
  }
  function skipped() {
    const box = document.getElementById("skipped-table");
    if (!D.skipped.length) box.append(el("p", { class: "hint", id: "nothing-skipped" }, "Every line of the run folder's " + D.meta.files + " JSON-lines file(s) was used (" + D.meta.lines + " lines)."));
    else {
      const t = el("table", { id: "skipped-rows" }), head = el("tr");
      head.append(el("th", { class: "text" }, "skipped"), el("th", {}, "count"), el("th", { class: "text" }, "first seen in"));
      t.append(head);
      for (const s of D.skipped) {
        const tr = el("tr", { "data-count": s.count });
        tr.append(el("td", { class: "text" }, s.reason), el("td", {}, String(s.count)), el("td", { class: "text" }, s.first_file));
        t.append(tr);
      }
      box.append(t);
    }
    const ul = document.getElementById("notes");
    for (const n of D.notes) ul.append(el("li", {}, n));
    document.getElementById("tl-notes").append(...D.notes.filter((n) => /lane|spans/.test(n)).map((n) => el("p", { class: "hint" }, n)));
  }

  for (const [name, f] of [["overview", overview], ["timeline", timeline], ["step times", distribution], ["throughput", throughput],
    ["exporter health", health], ["metrics", metrics], ["logs", logs], ["configuration", config], ["skipped", skipped]]) {
    try { f(); } catch (e) { fail(name + ": " + (e && e.message ? e.message : e)); }
  }
  // `report.html#probe-rank=N` (the browser tests): real events on the drawn page: hover the
  // middle of rank N's first step, zoom in with the wheel there, filter the logs to WARN; what
  // each did is left in data-* attributes of the body.
  const probe = /^#probe-rank=(\d+)$/.exec(location.hash);
  if (probe) {
    try {
      const L = layout.find((l) => l.lane.kind === "rank" && l.lane.rank === Number(probe[1]));
      const s = L.lane.spans.find((x) => x[5] === 1);
      const r = canvas.getBoundingClientRect();
      const at = { clientX: r.left + X(s[0] + s[1] / 2), clientY: r.top + L.y + 3 + Math.min(s[2], MAX_LEVELS - 1) * ROW + 4, bubbles: true };
      canvas.dispatchEvent(new MouseEvent("mousemove", at));
      const tip = document.getElementById("tooltip");
      document.body.dataset.probeHover = tip.hidden ? "" : tip.textContent;
      const before = view[1] - view[0];
      canvas.dispatchEvent(new WheelEvent("wheel", Object.assign({ deltaY: -100, cancelable: true }, at)));
      document.body.dataset.probeZoom = String((view[1] - view[0]) / before);
      const sel = document.getElementById("severity");
      sel.value = "WARN";
      sel.dispatchEvent(new Event("change"));
      const rows = document.getElementById("log-rows");
      document.body.dataset.probeLogs = rows ? rows.dataset.shown : "0";
    } catch (e) { fail("probe: " + e.message); }
  }
  document.body.dataset.drawnMs = String(Math.round(performance.now() - started));
  document.body.dataset.pageMs = String(Math.round(performance.now()));
  document.body.dataset.state = errors.length ? "failed" : "drawn";
})();
