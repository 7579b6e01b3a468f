// The live view of a syndicate server (`syndicate ui`). Plain DOM code,
// no framework and nothing fetched from elsewhere. Every string that comes
// from the server (service names, reasons, output, assertions) is put in
// the page as text: el() makes text nodes, and nothing here assigns HTML.
"use strict";

const main = document.getElementById("main");
const conn = document.getElementById("conn");

// el builds an element; string children become text nodes.
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- time ----------------------------------------------------------------

function ago(t, now) {
  if (!t) return "-";
  let s = Math.max(0, Math.floor((now - Date.parse(t)) / 1000));
  if (s < 60) return s + "s";
  let m = Math.floor(s / 60); s %= 60;
  if (m < 60) return m + "m" + s + "s";
  const h = Math.floor(m / 60); m %= 60;
  if (h < 48) return h + "h" + m + "m";
  return Math.floor(h / 24) + "d" + (h % 24) + "h";
}

function clock(t) {
  const d = new Date(Date.parse(t));
  if (isNaN(d)) return String(t);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function secs(x) {
  if (x === null || x === undefined) return "-";
  return x < 1 ? Math.round(x * 1000) + "ms" : x.toFixed(3) + "s";
}

// ---- the status vocabulary (as `syndicate status` renders it) -------------

function stateText(s) {
  const states = (s.states || []).join(",");
  if (states && s.phase) return states + " (" + s.phase + ")";
  if (states) return states;
  if (s.phase) return s.phase;
  if (s.required && !s.running) return "waiting";
  if (s.running) return "starting";
  return "-";
}

function stateClass(s) {
  for (const k of ["failed", "ready", "complete", "started"]) {
    if ((s.states || []).includes(k)) return k;
  }
  return s.running ? "starting" : "other";
}

function since(s) {
  if (s.since) return s.since;
  let best = null;
  for (const p of s.processes || []) if (!best || p.since > best) best = p.since;
  return best;
}

function pids(s) {
  return (s.processes || []).map((p) => String(p.pid)).join(",") || "-";
}

function restarts(s) {
  if (!s.restarts && !s.since && !(s.processes || []).length) return "-";
  return s.recentRestarts ? s.restarts + " (" + s.recentRestarts + " recent)" : String(s.restarts || 0);
}

function lastExit(s, now) {
  if (!s.lastExit) return "-";
  return s.lastExitAt ? s.lastExit + ", " + ago(s.lastExitAt, now) + " ago" : s.lastExit;
}

function reason(s) {
  if ((s.reasons || []).length) {
    let r = s.reasons.join("; ");
    if (s.pos && s.pos !== "-") r += " (" + s.pos + ")";
    return r;
  }
  if ((s.statusText || []).length) return s.statusText.map((t) => JSON.stringify(t)).join(", ");
  if (s.logDropped) return s.logDropped + " log lines dropped (log directory too slow)";
  return "-";
}

function isBuiltin(s) {
  return s.name.startsWith("<builtin ");
}

function serviceLink(name) {
  return "#/service/" + encodeURIComponent(name);
}

// ---- live streams -------------------------------------------------------

let current = null; // the open view: { close() }

function stream(path, handlers) {
  const es = new EventSource(path);
  es.onopen = () => { conn.textContent = "live"; conn.className = "conn up"; };
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      conn.textContent = "disconnected (reload to retry)";
    } else {
      conn.textContent = "reconnecting…";
    }
    conn.className = "conn down";
  };
  for (const [name, fn] of Object.entries(handlers)) {
    es.addEventListener(name, (ev) => fn(JSON.parse(ev.data)));
  }
  es.addEventListener("failure", (ev) => {
    main.append(el("p", { class: "error", text: "view failed: " + JSON.parse(ev.data).error }));
  });
  return es;
}

// ---- services table -----------------------------------------------------

const columns = [
  { key: "name", label: "Service", get: (s) => s.display || s.name },
  { key: "state", label: "State", get: stateText },
  { key: "for", label: "For", get: (s) => since(s) || "" },
  { key: "pid", label: "PID", get: (s) => ((s.processes || [])[0] || {}).pid || 0 },
  { key: "restarts", label: "Restarts", get: (s) => s.restarts || 0 },
  { key: "exit", label: "Last exit", get: (s) => s.lastExitAt || "" },
  { key: "reason", label: "Reason", get: reason },
];

const prefs = { filter: "", builtins: false, sort: "name", desc: false };

function servicesView() {
  let rows = [];
  const shown = new Map(); // name → state text last rendered
  const filter = el("input", { type: "text", id: "filter", placeholder: "filter by name", "aria-label": "filter" });
  filter.value = prefs.filter;
  const builtins = el("input", { type: "checkbox", id: "builtins" });
  builtins.checked = prefs.builtins;
  const count = el("span", { class: "muted", id: "count" });
  const head = el("tr");
  const body = el("tbody");
  const table = el("table", { class: "services", id: "services" }, el("thead", {}, head), body);
  for (const c of columns) {
    head.append(el("th", { "data-key": c.key, onclick: () => {
      prefs.desc = prefs.sort === c.key ? !prefs.desc : false;
      prefs.sort = c.key;
      render();
    } }, c.label));
  }
  main.replaceChildren(
    el("h2", {}, "Services"),
    el("div", { class: "controls" }, filter,
      el("label", {}, builtins, " show built-ins"), count),
    table);
  filter.addEventListener("input", () => { prefs.filter = filter.value; render(); });
  builtins.addEventListener("change", () => { prefs.builtins = builtins.checked; render(); });

  function render() {
    const now = Date.now();
    const f = prefs.filter.toLowerCase();
    const col = columns.find((c) => c.key === prefs.sort) || columns[0];
    const list = rows.filter((s) => (prefs.builtins || !isBuiltin(s)) && (s.display || s.name).toLowerCase().includes(f));
    list.sort((a, b) => {
      const x = col.get(a), y = col.get(b);
      const r = x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
      return prefs.desc ? -r : r;
    });
    for (const th of head.children) {
      th.className = th.dataset.key === prefs.sort ? (prefs.desc ? "sorted-desc" : "sorted-asc") : "";
    }
    const trs = list.map((s) => {
      const st = stateText(s);
      const tr = el("tr", { "data-name": s.name },
        el("td", { "data-label": "Service", class: "name" }, el("a", { href: serviceLink(s.name) }, s.display || s.name)),
        el("td", { "data-label": "State" }, el("span", { class: "state " + stateClass(s) }, st)),
        el("td", { "data-label": "For", class: "for", "data-since": since(s) || "" }, ago(since(s), now)),
        el("td", { "data-label": "PID", class: "pid" }, pids(s).replaceAll(",", ", ")),
        el("td", { "data-label": "Restarts" }, restarts(s)),
        el("td", { "data-label": "Last exit" }, lastExit(s, now)),
        el("td", { "data-label": "Reason" }, reason(s)));
      if (shown.has(s.name) && shown.get(s.name) !== st) tr.classList.add("changed");
      return tr;
    });
    shown.clear();
    for (const s of rows) shown.set(s.name, stateText(s));
    body.replaceChildren(...trs);
    const hidden = rows.length - list.length;
    count.textContent = list.length + " shown" + (hidden ? ", " + hidden + " hidden" : "");
  }

  const es = stream("events/services", { services: (doc) => { rows = doc || []; render(); } });
  const tick = setInterval(() => {
    const now = Date.now();
    for (const td of body.querySelectorAll("td.for")) td.textContent = ago(td.dataset.since, now);
  }, 1000);
  return { close() { es.close(); clearInterval(tick); } };
}

// ---- one service --------------------------------------------------------

function depTree(deps) {
  const ul = el("ul", { class: "deps" });
  for (const d of deps || []) {
    const states = (d.states || []).join(",") || "-";
    const li = d.awaits
      ? el("li", {}, el("a", { href: serviceLink(d.name), class: "name" }, d.name), " " + d.awaits + ": ",
          el("span", { class: d.met ? "met" : "unmet" }, d.met ? "ok" : "waiting"), " (now " + states + ")")
      : el("li", { class: "name" }, d.name);
    if ((d.dependsOn || []).length) li.append(depTree(d.dependsOn));
    ul.append(li);
  }
  return ul;
}

function readiness(s) {
  const st = s.states || [];
  if (st.includes("ready")) return "ready";
  if (st.includes("complete")) return "complete (one-shot)";
  if (st.includes("failed")) return "failed";
  if (s.required && !s.running) return "waiting for its dependencies";
  if (st.includes("started")) return "started, not ready yet";
  return "not running";
}

function serviceView(name) {
  const fields = el("dl", { class: "fields", id: "fields" });
  const actions = el("div", { class: "actions", id: "actions" });
  const note = el("span", { class: "muted", id: "action-note" });
  const deps = el("div", { id: "deps" });
  const events = el("ol", { class: "events", id: "events" });
  const output = el("pre", { class: "output", id: "output" });
  let svc = null;
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/services" }, "← services")),
    el("h2", { class: "name" }, name),
    fields, actions, note,
    el("h3", {}, "Depends on"), deps,
    el("h3", {}, "Output"), output,
    el("h3", {}, "Lifecycle"), events);

  function field(label, value) {
    fields.append(el("dt", {}, label), el("dd", {}, value));
  }
  function renderFields() {
    const now = Date.now();
    fields.replaceChildren();
    if (!svc) { field("state", "no such service (not required, not running)"); return; }
    field("wanted", svc.required ? "required" : svc.running ? "run" : "-");
    field("state", el("span", { class: "state " + stateClass(svc), id: "state" }, stateText(svc)));
    field("for", ago(since(svc), now));
    field("readiness", readiness(svc));
    field("pid", el("span", { id: "pid" }, pids(svc)));
    field("restarts", restarts(svc));
    field("last exit", lastExit(svc, now));
    field("reason", reason(svc));
    if (svc.pos) field("declared at", svc.pos);
  }
  // pending is the action awaiting confirmation. It outlives the
  // re-renders a status update causes, so a busy service cannot snatch
  // the dialog from under the operator's pointer.
  let pending = null;
  function renderActions() {
    if (pending) {
      if (actions.querySelector(".confirm")?.dataset.act === pending) return;
      const act = pending;
      const yes = el("button", { id: "confirm-yes", class: "danger", onclick: () => doAction(act) }, "Yes, " + act);
      const no = el("button", { id: "confirm-no", onclick: () => { pending = null; renderActions(); } }, "Cancel");
      const box = el("div", { class: "confirm" }, act[0].toUpperCase() + act.slice(1) + " ", el("span", { class: "name" }, name), "?", yes, no);
      box.dataset.act = act;
      actions.replaceChildren(box);
      return;
    }
    actions.replaceChildren();
    const stopped = svc && svc.phase === "stopped";
    const can = {
      restart: svc && svc.running,
      stop: svc && (svc.running || svc.required) && !stopped,
      start: svc && (stopped || !svc.running),
    };
    for (const act of ["restart", "stop", "start"]) {
      const b = el("button", { id: act, class: act === "start" ? "" : "danger", onclick: () => confirmAction(act) }, act[0].toUpperCase() + act.slice(1));
      b.disabled = !can[act];
      actions.append(b);
    }
  }
  function confirmAction(act) {
    pending = act;
    renderActions();
  }
  async function doAction(act) {
    pending = null;
    renderActions();
    note.textContent = act + "…";
    try {
      const r = await fetch("api/" + act, { method: "POST", body: new URLSearchParams({ name }) });
      note.textContent = r.ok ? act + " sent" : act + " refused: " + (await r.text());
    } catch (e) {
      note.textContent = act + " failed: " + e;
    }
  }
  function addLine(l) {
    const stick = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
    const label = l.stream === "stdout" || !l.stream ? "" : l.stream + ": ";
    output.append(el("span", { class: ["stderr", "syndicate"].includes(l.stream) ? l.stream : "" }, clock(l.at) + " " + label + l.line + "\n"));
    while (output.childNodes.length > 200) output.firstChild.remove();
    if (stick) output.scrollTop = output.scrollHeight;
  }

  renderFields();
  renderActions();
  const es = stream("events/service?name=" + encodeURIComponent(name), {
    service: (doc) => {
      svc = doc;
      renderFields();
      renderActions();
      deps.replaceChildren((svc && (svc.dependsOn || []).length) ? depTree(svc.dependsOn) : el("p", { class: "muted" }, "nothing"));
    },
    output: (lines) => { output.replaceChildren(); for (const l of lines || []) addLine(l); },
    line: addLine,
    history: (h) => {
      events.replaceChildren(...(h.events || []).map((e) =>
        el("li", {}, el("span", { class: "muted" }, clock(e.at) + " "), (e.asserted ? "+ " : "− ") + e.fact)));
      if (h.dropped && h.dropped !== "0") events.append(el("li", { class: "muted" }, h.dropped + " changes not kept"));
    },
  });
  const tick = setInterval(renderFields, 1000);
  return { close() { es.close(); clearInterval(tick); } };
}

// ---- boot: timeline and dependency graph --------------------------------

const colours = { ready: "#43a047", complete: "#1e88e5", failed: "#e53935", started: "#fb8c00", starting: "#fdd835" };
const colourOf = (s) => colours[s] || "#9e9e9e";

function legend() {
  return el("div", { class: "legend" }, ...["ready", "complete", "failed", "started", "starting", "waiting"].map((s) =>
    el("span", {}, el("span", { class: "state " + s }, s))));
}

// timeline draws one bar per service from its start to up (or failed);
// the scale ends where the last service came up, and a bar still going
// runs off its right end.
function timeline(units) {
  units = units.filter((u) => u.start !== null && u.start !== undefined);
  const labelW = 260, barW = 420, rowH = 20, top = 24;
  const settled = (u) => u.up ?? u.failed ?? u.start;
  const total = Math.max(0.001, ...units.map(settled)) * 1.05;
  const svg = svgEl("svg", { width: labelW + barW + 20, height: top + rowH * units.length + 8, id: "timeline" });
  const x = (t) => labelW + (Math.min(t, total) / total) * barW;
  svg.append(svgEl("text", { x: labelW, y: 14 }, "0"), svgEl("text", { x: labelW + barW - 50, y: 14 }, secs(total)));
  units.forEach((u, i) => {
    const y = top + i * rowH;
    const name = u.name.length > 38 ? u.name.slice(0, 37) + "…" : u.name;
    const label = svgEl("text", { x: 4, y: y + 13 }, name);
    label.append(svgEl("title", {}, u.name));
    const w = Math.max(2, x(u.end) - x(u.start));
    const bar = svgEl("rect", { x: x(u.start), y: y + 3, width: w, height: rowH - 6, fill: colourOf(u.barState), rx: 2 });
    const what = u.up != null ? " up at " + secs(u.up) : u.failed != null ? " failed at " + secs(u.failed) : "";
    bar.append(svgEl("title", {}, u.name + ": " + u.barState + what));
    svg.append(label, bar);
  });
  return el("div", { class: "scroll" }, svg);
}

function graph(units) {
  const byLayer = new Map();
  for (const u of units) {
    const l = u.layer || 0;
    if (!byLayer.has(l)) byLayer.set(l, []);
    byLayer.get(l).push(u);
  }
  const colW = 220, rowH = 34, nodeW = 190, nodeH = 24;
  const pos = new Map();
  let rows = 0;
  for (const [l, us] of byLayer) {
    us.forEach((u, i) => pos.set(u.key, { x: 10 + l * colW, y: 10 + i * rowH }));
    rows = Math.max(rows, us.length);
  }
  const layers = Math.max(1, ...[...byLayer.keys()].map((l) => l + 1));
  const svg = svgEl("svg", { width: 20 + layers * colW, height: 20 + rows * rowH, id: "graph" });
  for (const u of units) {
    const to = pos.get(u.key);
    for (const d of u.deps || []) {
      const from = pos.get(d.key);
      if (!from || !to) continue;
      svg.append(svgEl("line", { x1: from.x + nodeW, y1: from.y + nodeH / 2, x2: to.x, y2: to.y + nodeH / 2, stroke: "#8a96a3" }));
    }
  }
  for (const u of units) {
    const p = pos.get(u.key);
    const g = svgEl("g", {});
    g.append(svgEl("rect", { x: p.x, y: p.y, width: nodeW, height: nodeH, rx: 4, fill: "#fff", stroke: colourOf(u.barState), "stroke-width": 2 }));
    const name = u.name.length > 26 ? u.name.slice(0, 25) + "…" : u.name;
    g.append(svgEl("text", { x: p.x + 6, y: p.y + 16 }, name), svgEl("title", {}, u.name + " (" + u.state + ")"));
    svg.append(g);
  }
  return el("div", { class: "scroll" }, svg);
}

function bootView() {
  const box = el("div", { id: "boot" }, el("p", { class: "muted" }, "loading…"));
  const builtins = el("input", { type: "checkbox", id: "boot-builtins" });
  builtins.checked = prefs.builtins;
  main.replaceChildren(el("h2", {}, "Boot"),
    el("div", { class: "controls" }, legend(), el("label", {}, builtins, " show built-ins")), box);
  let doc = null;
  function render() {
    if (!doc) return;
    if (doc.error) { box.replaceChildren(el("p", { class: "error" }, doc.error)); return; }
    const units = (doc.units || []).filter((u) => prefs.builtins || !u.name.startsWith("<builtin "));
    box.replaceChildren(
      el("h3", {}, "Timeline (seconds since the server started)"), timeline(units),
      el("h3", {}, "Dependencies (dependees left of their dependents)"), graph(units));
  }
  builtins.addEventListener("change", () => { prefs.builtins = builtins.checked; render(); });
  const es = stream("events/boot", { boot: (d) => { doc = d; render(); } });
  return { close() { es.close(); } };
}

// ---- dataspace browser --------------------------------------------------

function dataspaceView(pat) {
  const input = el("input", { type: "text", id: "pattern", placeholder: "<service-state _ _>", "aria-label": "pattern" });
  input.value = pat;
  const go = el("button", { id: "observe", type: "submit" }, "Observe");
  const status = el("p", { class: "muted", id: "observe-status" });
  const matches = el("ul", { class: "matches", id: "matches" });
  const messages = el("ul", { class: "messages", id: "messages" });
  const form = el("form", { class: "controls", onsubmit: (e) => {
    e.preventDefault();
    location.hash = "#/dataspace?p=" + encodeURIComponent(input.value);
  } }, input, go);
  main.replaceChildren(el("h2", {}, "Dataspace"),
    el("p", { class: "muted" }, "A pattern as for syndicate observe: _ matches anything, records match extensibly."),
    form, status, el("h3", {}, "Assertions"), matches, el("h3", {}, "Messages"), messages);
  if (!pat) return { close() {} };
  const items = new Map(); // id → li
  let es = null;
  function count() { status.textContent = items.size + " matching assertion" + (items.size === 1 ? "" : "s"); }
  function add(a) {
    const li = el("li", { class: "name new", "data-id": String(a.id) }, a.text);
    items.set(a.id, li);
    matches.append(li);
  }
  fetch("api/pattern?pattern=" + encodeURIComponent(pat)).then(async (r) => {
    if (!r.ok) { status.textContent = ""; status.append(el("span", { class: "error" }, await r.text())); return; }
    es = stream("events/observe?pattern=" + encodeURIComponent(pat), {
      matches: (doc) => {
        items.clear();
        matches.replaceChildren();
        for (const a of doc.assertions || []) add(a);
        count();
      },
      change: (c) => {
        if (c.op === "+") add(c);
        else if (c.op === "-") {
          const li = items.get(c.id);
          items.delete(c.id);
          if (li) { li.classList.remove("new"); li.classList.add("gone"); setTimeout(() => li.remove(), 600); }
        } else if (c.op === "!") {
          messages.prepend(el("li", { class: "name" }, c.text));
          while (messages.childNodes.length > 50) messages.lastChild.remove();
        }
        count();
      },
    });
  });
  return { close() { if (es) es.close(); } };
}

// ---- routing ------------------------------------------------------------

function route() {
  if (current) current.close();
  const h = location.hash || "#/services";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", h.startsWith(a.getAttribute("href")));
  if (h.startsWith("#/service/")) current = serviceView(decodeURIComponent(h.slice("#/service/".length)));
  else if (h.startsWith("#/boot")) current = bootView();
  else if (h.startsWith("#/dataspace")) {
    const q = h.indexOf("?p=");
    current = dataspaceView(q < 0 ? "" : decodeURIComponent(h.slice(q + 3)));
  } else current = servicesView();
}

window.addEventListener("hashchange", route);
route();
