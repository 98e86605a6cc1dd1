// ctmc trace viewer: lays out the trace data that checker/traces/html.py inlines.
// No network and no libraries: the page must work opened from disk, years later.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("trace-data").textContent);
  const steps = data.steps;
  const last = steps.length - 1;
  const SVG = "http://www.w3.org/2000/svg";
  const HEAD_H = 34, ROW_MIN = 30, EVENT_H = 24, PAD = 6, MIN_LANE = 84, RIGHT = 44;

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
  fact("steps", String(data.length));
  for (const [k, v] of Object.entries(data.meta)) fact(k, v);
  header.append(facts);
  header.append(el("div", { class: "verdict" + (data.violation ? "" : " none"), id: "verdict" },
    data.violation ? "violation: " + data.violation : "no violation"));
  if (data.cti) header.append(el("div", { class: "cti", id: "cti" }, data.cti));
  if (data.why) header.append(whyPanel(data.why));
  app.append(header);

  // --- why: the failing clause, the values it reads, the steps that set them ---------
  function stepLink(i) {
    if (i === 0) return el("span", { class: "since" }, "(from the first state)");
    const a = el("a", { href: "#step=" + i, class: "step-link", "data-step": String(i) }, "step " + i);
    return el("span", { class: "since" }, "(set at ", a, ")");
  }
  function whyPanel(why) {
    const box = el("details", { class: "why", id: "why", open: "" });
    box.append(el("summary", {}, "why: " + why.clauses[0].headline));
    why.clauses.forEach((c, k) => {
      if (k > 0) box.append(el("div", { class: "headline" }, c.headline));
      box.append(el("ul", { class: "readings" }, ...c.readings.map((r) =>
        el("li", { "data-name": r.name }, r.name + " = " + r.value + " ", stepLink(r.since)))));
    });
    if (why.hidden) box.append(el("div", { class: "more" }, `and ${why.hidden} more failing instances`));
    if (why.doc) box.append(el("p", { class: "doc" }, why.doc));
    if (why.sets.length) {
      box.append(el("ul", { class: "sets", id: "why-sets" }, ...why.sets.map((s) => el("li", {},
        el("a", { href: "#step=" + s.step, class: "step-link", "data-step": String(s.step) }, "step " + s.step),
        " " + s.action + (s.narration ? ": " + s.narration : "") + " \u2014 sets " + s.names.join(", ")))));
    }
    box.append(el("p", { class: "slice", id: "why-slice" }, why.slice));
    return box;
  }

  const controls = el("div", { class: "controls" });
  const prev = el("button", { id: "prev", title: "previous step (left arrow)" }, "\u25c0");
  const next = el("button", { id: "next", title: "next step (right arrow)" }, "\u25b6");
  const slider = el("input", { type: "range", id: "step-slider", min: "0", max: String(last),
    value: "0", "aria-label": "step" });
  const position = el("span", { class: "position", id: "position" });
  controls.append(prev, slider, next, position,
    el("span", { class: "hint" }, "\u2190 \u2192 move, Home/End jump"));
  app.append(controls);

  let current = -1;
  const main = el("main");
  const diagram = el("div", { id: "diagram" });
  const details = el("div", { id: "details" });
  main.append(diagram, details);
  app.append(main);
  app.append(el("footer", {}, "ctmc trace viewer" + (data.source ? " \u00b7 " + data.source : "")));

  // --- swimlanes: laid out to the diagram's width, again when the window changes ------
  const lanes = data.lanes;
  const rows = [];
  let total = 0;
  steps.forEach((step) => {
    const h = Math.max(ROW_MIN, PAD * 2 + EVENT_H * step.events.length);
    rows.push({ y: total, h });
    total += h;
  });
  let stepNodes = [];

  function layout() {  // the lanes share what the diagram shows; below MIN_LANE it scrolls
    const avail = Math.max(320, diagram.clientWidth - 16);
    const gutter = Math.round(Math.min(300, Math.max(150, avail * 0.32)));
    const laneW = Math.max(MIN_LANE, Math.floor((avail - gutter - RIGHT) / lanes.length));
    return { gutter, laneW, width: gutter + laneW * lanes.length + RIGHT,
      labelChars: Math.max(8, Math.floor((laneW * 1.6) / 6.2)),
      actionChars: Math.max(12, Math.floor((gutter - 46) / 6.9)) };
  }

  function draw() {
    const { gutter, laneW, width, labelChars, actionChars } = layout();
    const laneX = {};
    lanes.forEach((lane, i) => { laneX[lane] = gutter + laneW * i + laneW / 2; });
    const headW = Math.min(120, laneW - 10);
    const heads = svg("svg", { class: "heads", width, height: HEAD_H });
    for (const lane of lanes) {
      const g = svg("g", { class: "lane-head", "data-lane": lane });
      g.append(svg("rect", { x: laneX[lane] - headW / 2, y: 4, width: headW, height: HEAD_H - 8, rx: 6 }));
      g.append(svg("text", { x: laneX[lane], y: HEAD_H / 2 + 4, "text-anchor": "middle" },
        clip(lane, Math.floor(headW / 7.5))));
      heads.append(withTitle(g, lane));
    }
    heads.append(svg("text", { x: 10, y: HEAD_H / 2 + 4, class: "num" }, "step \u00b7 action"));

    const body = svg("svg", { class: "lanes", width, height: total + 8 });
    for (const lane of lanes) {
      body.append(svg("line", { class: "lifeline", x1: laneX[lane], x2: laneX[lane], y1: 0, y2: total + 8 }));
    }
    const defs = svg("defs");
    const marker = svg("marker", { id: "head", viewBox: "0 0 10 10", refX: "9", refY: "5",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#0969da" }));
    defs.append(marker);
    body.append(defs);

    stepNodes = steps.map((step, i) => {
      const { y: top, h } = rows[i];
      const classes = ["step"];
      if (data.loop !== null && i >= data.loop) classes.push("in-loop");
      if (i === last && data.violation) classes.push("violating");
      if (step.role === "sets") classes.push("sets");
      if (step.role === "other") classes.push("dim");
      if (i === current) classes.push("selected");
      const g = svg("g", { class: classes.join(" "), "data-step": String(i) });
      g.append(svg("rect", { class: "row-bg", x: 0, y: top, width, height: h }));
      if (step.role === "sets") g.append(svg("rect", { class: "sets-bar", x: 0, y: top + 2, width: 4, height: h - 4 }));
      g.append(svg("text", { class: "num", x: 10, y: top + 19 }, String(i)));
      g.append(withTitle(svg("text", { class: "act", x: 40, y: top + 19 },
        clip(step.action, actionChars)), step.title));
      step.events.forEach((ev, k) => {
        const ey = top + PAD + EVENT_H * k + EVENT_H / 2 + 2;
        const sx = laneX[ev.source];
        if (!ev.targets.length) {
          const w = Math.min(laneW - 12, 12 + 6.2 * Math.min(ev.label.length, labelChars));
          const box = svg("g", { class: "local", "data-source": ev.source });
          box.append(svg("rect", { x: sx - w / 2, y: ey - 10, width: w, height: 19 }));
          box.append(svg("text", { x: sx, y: ey + 3, "text-anchor": "middle" },
            clip(ev.label, Math.floor((w - 12) / 6.2))));
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
        const span = far === sx ? laneW / 2 : Math.abs(far - sx);
        g.append(withTitle(svg("text", { class: "arrow-label", x: mid, y: ey - 4,
          "text-anchor": far === sx ? "start" : "middle" },
          clip(ev.label, Math.max(8, Math.min(labelChars * 2, Math.floor(span / 6.2))))),
          ev.source + " \u2192 " + ev.targets.join(", ") + ": " + ev.label));
      });
      if (i === last && data.violation) {
        g.append(withTitle(svg("text", { class: "violation-mark", x: width - 38, y: top + 19 }, "\u2716"),
          data.violation));
      }
      g.addEventListener("click", () => select(i));
      body.append(g);
      return g;
    });
    if (data.loop !== null) {
      const top = rows[data.loop].y + 4, bottom = rows[last].y + rows[last].h - 4, x = width - 12;
      const bracket = svg("g", { class: "loop", id: "loop" });
      bracket.append(svg("path", { class: "loop-bracket", "marker-end": "url(#head)",
        d: `M${x - 8},${bottom} h8 V${top} h-8` }));
      bracket.append(withTitle(svg("text", { class: "loop-label", x: x - 36, y: top + 14 }, "loop"),
        data.loop_sentence));
      body.append(bracket);
    }
    diagram.replaceChildren(heads, body);
  }

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
    if (data.untouched) {
      raw.append(el("p", { class: "untouched" }, data.untouched + " marks an element this trace " +
        "never touches: it keeps its first value, and no step and not the property reads it"));
    }
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

  draw();
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(draw, 100);
  });

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
