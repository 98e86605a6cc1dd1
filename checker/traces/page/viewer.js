// ctmc trace viewer: lays out the trace data that checker/traces/html.py inlines.
// No network and no libraries: the page must work opened from disk, years later.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("trace-data").textContent);
  const steps = data.steps;
  const last = steps.length - 1;
  const SVG = "http://www.w3.org/2000/svg";
  const LANE_W = 210, GUTTER = 300, HEAD_H = 34, ROW_MIN = 30, EVENT_H = 24, PAD = 6;
  const LABEL_CHARS = 34, ACTION_CHARS = 40;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) node.append(c);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  function withTitle(node, full) { node.append(svg("title", {}, full)); return node; }

  // --- header and controls -------------------------------------------------
  const app = document.getElementById("app");
  const header = el("header");
  header.append(el("h1", {}, data.title));
  const facts = el("div", { class: "facts" });
  const fact = (k, v) => facts.append(el("span", {}, el("b", {}, k + " "), v));
  fact("spec", data.spec);
  fact("params", data.params);
  fact("mutations", data.mutations);
  fact("steps", String(last));
  for (const [k, v] of Object.entries(data.meta)) fact(k, v);
  header.append(facts);
  header.append(el("div", { class: "verdict" + (data.violation ? "" : " none"), id: "verdict" },
    data.violation ? "violation: " + data.violation : "no violation"));
  if (data.cti) header.append(el("div", { class: "cti", id: "cti" }, data.cti));
  app.append(header);

  const controls = el("div", { class: "controls" });
  const prev = el("button", { id: "prev", title: "previous step (left arrow)" }, "\u25c0");
  const next = el("button", { id: "next", title: "next step (right arrow)" }, "\u25b6");
  const slider = el("input", { type: "range", id: "step-slider", min: "0", max: String(last),
    value: "0", "aria-label": "step" });
  const position = el("span", { class: "position", id: "position" });
  controls.append(prev, slider, next, position,
    el("span", { class: "hint" }, "\u2190 \u2192 move, Home/End jump"));
  app.append(controls);

  const main = el("main");
  const diagram = el("div", { id: "diagram" });
  const details = el("div", { id: "details" });
  main.append(diagram, details);
  app.append(main);
  app.append(el("footer", {}, "ctmc trace viewer" + (data.source ? " \u00b7 " + data.source : "")));

  // --- swimlanes -------------------------------------------------------------
  const lanes = data.lanes;
  const laneX = {};
  lanes.forEach((lane, i) => { laneX[lane] = GUTTER + LANE_W * i + LANE_W / 2; });
  const width = GUTTER + LANE_W * lanes.length + 60;

  const heads = svg("svg", { class: "heads", width, height: HEAD_H });
  for (const lane of lanes) {
    const g = svg("g", { class: "lane-head", "data-lane": lane });
    g.append(svg("rect", { x: laneX[lane] - 60, y: 4, width: 120, height: HEAD_H - 8, rx: 6 }));
    g.append(svg("text", { x: laneX[lane], y: HEAD_H / 2 + 4, "text-anchor": "middle" }, lane));
    heads.append(g);
  }
  heads.append(svg("text", { x: 10, y: HEAD_H / 2 + 4, class: "num" }, "step \u00b7 action"));

  const rows = [];
  let y = 0;
  steps.forEach((step) => {
    const h = Math.max(ROW_MIN, PAD * 2 + EVENT_H * step.events.length);
    rows.push({ y, h });
    y += h;
  });
  const body = svg("svg", { class: "lanes", width, height: y + 8 });
  for (const lane of lanes) {
    body.append(svg("line", { class: "lifeline", x1: laneX[lane], x2: laneX[lane], y1: 0, y2: y + 8 }));
  }
  const defs = svg("defs");
  const marker = svg("marker", { id: "head", viewBox: "0 0 10 10", refX: "9", refY: "5",
    markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#0969da" }));
  defs.append(marker);
  body.append(defs);

  const stepNodes = steps.map((step, i) => {
    const { y: top, h } = rows[i];
    const classes = ["step"];
    if (data.loop !== null && i >= data.loop) classes.push("in-loop");
    if (i === last && data.violation) classes.push("violating");
    const g = svg("g", { class: classes.join(" "), "data-step": String(i) });
    g.append(svg("rect", { class: "row-bg", x: 0, y: top, width, height: h }));
    g.append(svg("text", { class: "num", x: 10, y: top + 19 }, String(i)));
    g.append(withTitle(svg("text", { class: "act", x: 40, y: top + 19 },
      clip(step.action, ACTION_CHARS)), step.title));
    step.events.forEach((ev, k) => {
      const ey = top + PAD + EVENT_H * k + EVENT_H / 2 + 2;
      const sx = laneX[ev.source];
      if (!ev.targets.length) {
        const w = Math.min(LANE_W - 12, 12 + 6.2 * Math.min(ev.label.length, LABEL_CHARS));
        const box = svg("g", { class: "local", "data-source": ev.source });
        box.append(svg("rect", { x: sx - w / 2, y: ey - 10, width: w, height: 19 }));
        box.append(svg("text", { x: sx, y: ey + 3, "text-anchor": "middle" }, clip(ev.label, LABEL_CHARS)));
        g.append(withTitle(box, ev.source + ": " + ev.label));
        return;
      }
      const far = ev.targets.reduce((a, t) => Math.abs(laneX[t] - sx) > Math.abs(a - sx) ? laneX[t] : a, sx);
      for (const t of ev.targets) {
        const tx = laneX[t];
        if (tx === sx) {  // a message to itself: a small loop
          g.append(svg("path", { class: "arrow", "marker-end": "url(#head)",
            d: `M${sx},${ey - 6} h22 v12 h-20` }));
        } else {
          const dir = tx > sx ? 1 : -1;
          g.append(svg("line", { class: "arrow", "marker-end": "url(#head)", "data-source": ev.source,
            "data-target": t, x1: sx + dir * 4, y1: ey, x2: tx - dir * 4, y2: ey }));
        }
      }
      const mid = far === sx ? sx + 28 : (sx + far) / 2;
      g.append(withTitle(svg("text", { class: "arrow-label", x: mid, y: ey - 4,
        "text-anchor": far === sx ? "start" : "middle" }, clip(ev.label, LABEL_CHARS)),
        ev.source + " \u2192 " + ev.targets.join(", ") + ": " + ev.label));
    });
    if (i === last && data.violation) {
      g.append(withTitle(svg("text", { class: "violation-mark", x: width - 48, y: top + 19 }, "\u2716"),
        data.violation));
    }
    g.addEventListener("click", () => select(i));
    body.append(g);
    return g;
  });
  if (data.loop !== null) {
    const top = rows[data.loop].y + 4, bottom = rows[last].y + rows[last].h - 4, x = width - 22;
    const bracket = svg("g", { class: "loop", id: "loop" });
    bracket.append(svg("path", { class: "loop-bracket", "marker-end": "url(#head)",
      d: `M${x - 8},${bottom} h8 V${top} h-8` }));
    bracket.append(withTitle(svg("text", { class: "loop-label", x: x - 36, y: top + 14 }, "loop"),
      data.loop_sentence));
    body.append(bracket);
  }
  diagram.append(heads, body);

  // --- the selected step ---------------------------------------------------------
  function table(t) {
    const changed = new Set(t.changed.map(([r, c]) => r + ":" + c));
    const node = el("table", { "data-table": t.title });
    node.append(el("caption", {}, t.title));
    node.append(el("tr", {}, ...t.columns.map((c) => el("th", {}, c))));
    t.rows.forEach((row, r) => {
      node.append(el("tr", {}, ...row.map((cell, c) =>
        el("td", changed.has(r + ":" + c) ? { class: "changed" } : {}, cell))));
    });
    return node;
  }

  function showStep(i) {
    const step = steps[i];
    details.replaceChildren();
    const bad = i === last && data.violation;
    details.append(el("h2", { class: bad ? "bad" : "", id: "step-title" }, step.title));
    if (step.narration) details.append(el("p", { class: "narration", id: "narration" }, step.narration));
    if (data.has_view && step.events.length) {
      details.append(el("ul", { class: "events" }, ...step.events.map((ev) => el("li", {},
        ev.source + (ev.targets.length ? " \u2192 " + ev.targets.join(", ") : "") + ": " + ev.label))));
    }
    if (data.loop !== null && i === data.loop) {
      details.append(el("div", { class: "box loop" }, "the loop starts here"));
    }
    if (i === last) {
      if (data.loop_sentence) details.append(el("div", { class: "box loop" }, "then: " + data.loop_sentence));
      if (data.violation) {
        const box = el("div", { class: "box bad", id: "violation" }, "violation: " + data.violation);
        if (data.reads.length) box.append(el("div", { class: "reads" }, "it reads: " + data.reads.join("; ")));
        details.append(box);
      }
    }
    if (step.note) details.append(el("p", { class: "note" }, step.note));
    for (const lane of [...lanes, ""]) {
      const tables = step.tables[lane] || [];
      if (!tables.length) continue;
      const card = el("section", { class: "lane-card", "data-lane": lane || "whole system" });
      card.append(el("h3", {}, lane || "whole system"));
      tables.forEach((t) => card.append(table(t)));
      details.append(card);
    }
    const changedVars = step.vars.filter((v) => v.changed).length;
    const raw = el("details", { class: "raw", id: "raw" });
    if (!data.has_view) raw.setAttribute("open", "");
    raw.append(el("summary", {}, `whole state: ${step.vars.length} variables, ${changedVars} changed`));
    const vars = el("table", {});
    vars.append(el("tr", {}, el("th", {}, "variable"), el("th", {}, "value")));
    for (const v of step.vars) {
      const value = el("td", v.changed ? { class: "changed" } : {});
      if (v.changed) value.append(el("span", { class: "was" }, v.was));
      value.append(v.value);
      vars.append(el("tr", {}, el("td", v.ghost ? { class: "ghost" } : {}, v.name + (v.ghost ? " (ghost)" : "")), value));
    }
    raw.append(vars);
    details.append(raw);
  }

  let current = -1;
  function select(i) {
    i = Math.max(0, Math.min(last, i));
    if (i === current) return;
    if (current >= 0) stepNodes[current].classList.remove("selected");
    current = i;
    stepNodes[i].classList.add("selected");
    slider.value = String(i);
    position.textContent = `step ${i} of ${last}`;
    prev.disabled = i === 0;
    next.disabled = i === last;
    showStep(i);
    const { y: top, h } = rows[i];
    if (top < diagram.scrollTop || top + h + HEAD_H > diagram.scrollTop + diagram.clientHeight) {
      diagram.scrollTop = Math.max(0, top - diagram.clientHeight / 3);
    }
    try { history.replaceState(null, "", "#step=" + i); } catch (e) { /* some file:// pages */ }
  }

  slider.addEventListener("input", () => select(Number(slider.value)));
  prev.addEventListener("click", () => select(current - 1));
  next.addEventListener("click", () => select(current + 1));
  document.addEventListener("keydown", (e) => {
    if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) return;  // the slider moves itself
    const to = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: last }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(to);
  });
  function linked() {  // #step=K in the address selects step K
    const m = /#step=(\d+)/.exec(location.hash);
    return m ? Number(m[1]) : null;
  }
  window.addEventListener("hashchange", () => { if (linked() !== null) select(linked()); });
  select(linked() ?? 0);
})();
