// Strata's lineage web UI (docs/ui.md). Plain DOM plus Cytoscape.js with the dagre layout;
// bundled by esbuild (`make ui`) into strata/serve/static/app.js.
import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";

cytoscape.use(dagre);

const API = "/api/strata/v1";
const $ = (id) => document.getElementById(id);
const state = {
  level: "dataset", start: null, selected: null, depth: 1, direction: "both", asOf: null, compare: null,
  newest: null, owners: new Map(), expanded: new Set(), nodes: new Map(), edges: new Map(),
  pathFrom: null, pathTo: null, path: new Set(), removed: new Set(), added: new Set(),
  run: null, item: null, traced: null, limit: 25,
};
window.strataUi = state; // for tests, benchmarks and the browser's console

// ------------------------------------------------------------------ HTTP
let apiKey = sessionStorage.getItem("strata-key");
async function api(path, params = {}, options = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  if (state.asOf && !("as_of" in params)) q.set("as_of", state.asOf);
  const headers = { ...(options.headers || {}) };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  const r = await fetch(`${path}${q.toString() ? "?" + q : ""}`, { ...options, headers });
  if (r.status === 401) {
    const key = window.prompt("This server needs its API key:");
    if (key) { apiKey = key; sessionStorage.setItem("strata-key", key); return api(path, params, options); }
  }
  const body = await r.json();
  if (!r.ok) throw new Error(body.error + (body.hint ? ` (${body.hint})` : ""));
  return body;
}
function status(text, error = false) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", error);
}
const fmt = (n) => n.toLocaleString("en-US");
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

// ------------------------------------------------------------------ the graph
const cy = cytoscape({
  container: $("graph"),
  // pan and zoom move a cached picture of the graph, redrawn when they stop: a 2,000-node view
  // stays interactive
  textureOnViewport: true,
  hideEdgesOnViewport: true,
  minZoom: 0.05,
  maxZoom: 3,
  style: [
    { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "center", "text-halign": "center",
      "text-wrap": "ellipsis", "text-max-width": 150, width: 160, height: 34, shape: "round-rectangle",
      "background-color": "#dbe6fb", "border-width": 1, "border-color": "#3b6fd6",
      "min-zoomed-font-size": 7 } },  // labels too small to read are not drawn (a large view stays fast)
    { selector: "node.plain", style: { "text-wrap": "none" } }, // a large view: no per-label ellipsis fitting
    { selector: "node[kind = 'job']", style: { "background-color": "#fbe9d3", "border-color": "#e08a1e", shape: "rectangle" } },
    { selector: "node[kind = 'run']", style: { "background-color": "#f4ece0", "border-color": "#9a6b2a", height: 22, width: 150, "font-size": 9 } },
    { selector: "node[kind = 'field']", style: { "background-color": "#dff3e7", "border-color": "#2f9a62", height: 24, width: 130 } },
    { selector: "node[kind = 'item']", style: { "background-color": "#eee2fa", "border-color": "#8a4fc9", height: 40, width: 190, "text-wrap": "wrap" } },
    { selector: "node[kind = 'element']", style: { "background-color": "#d8f0f0", "border-color": "#17818a", width: 170 } },
    { selector: "node[kind = 'process']", style: { "background-color": "#fbe9d3", "border-color": "#e08a1e", shape: "rectangle", height: 26, width: 120 } },
    { selector: "node[kind = 'more']", style: { "background-color": "#fff", "border-style": "dashed", "border-color": "#889", color: "#445" } },
    { selector: ":parent", style: { "text-valign": "top", "text-halign": "center", "padding": 10, "background-opacity": 0.35 } },
    { selector: "node[?start]", style: { "border-width": 3 } },
    { selector: "node.selected", style: { "border-width": 3, "border-color": "#1d2330" } },
    { selector: "node.added", style: { "background-color": "#c9f0d2", "border-color": "#1a9e3a" } },
    { selector: "node.removed", style: { "background-color": "#fbd3d3", "border-color": "#d33", "border-style": "dashed" } },
    { selector: "edge", style: { width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle",
      "line-color": "#8892a6", "target-arrow-color": "#8892a6" } },
    { selector: "edge[kind = 'direct'], edge[kind = 'contributing']", style: { "line-color": "#2f9a62", "target-arrow-color": "#2f9a62", width: 2 } },
    { selector: "edge[kind = 'indirect'], edge[kind = 'influencing']", style: { "line-style": "dashed", "line-color": "#c07a2a", "target-arrow-color": "#c07a2a" } },
    { selector: "edge[kind = 'more']", style: { "line-style": "dotted", "target-arrow-shape": "none" } },
    { selector: "node.path", style: { "border-color": "#e0b000", "border-width": 4 } },
    { selector: "edge.path", style: { "line-color": "#e0b000", "target-arrow-color": "#e0b000", width: 4 } },
  ],
});
state.cy = cy;
cy.on("tap", "node", (e) => activate(e.target.id()));
cy.on("dbltap", "node", (e) => toggle(e.target.id()));

// dagre up to 800 nodes; past that, columns by distance from the start node (upstream to the
// left), computed in one pass: dagre takes seconds there, and so does a grid of compound nodes
function layout() {
  const n = cy.nodes().length;
  if (state.layout === "dagre" || state.layout !== "columns" && n <= 800) {
    cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 12, rankSep: 70, animate: false, fit: true, padding: 20 }).run();
    return;
  }
  const l0 = performance.now();
  // plain maps over state's nodes and edges (cheaper than collection traversals at this size)
  const drawnParent = (id) => { const p = state.nodes.get(id)?.parent; return p && state.nodes.has(p) ? p : null; };
  const topOf = (id) => drawnParent(id) ?? id;
  const out = new Map(), inc = new Map();
  for (const e of state.edges.values()) {
    if (!state.nodes.has(e.source) || !state.nodes.has(e.target)) continue;
    const a = topOf(e.source), b = topOf(e.target);
    if (!out.has(a)) out.set(a, []);
    if (!inc.has(b)) inc.set(b, []);
    out.get(a).push(b);
    inc.get(b).push(a);
  }
  const children = new Map();
  const top = [];
  for (const id of state.nodes.keys()) {
    const p = drawnParent(id);
    if (p) { if (!children.has(p)) children.set(p, []); children.get(p).push(id); } else top.push(id);
  }
  const first = state.nodes.has(state.start) ? topOf(state.start) : top[0];
  const rank = new Map([[first, 0]]);
  const queue = [first];
  for (let i = 0; i < queue.length; i++) {
    const u = queue[i], r = rank.get(u);
    for (const v of out.get(u) ?? []) if (!rank.has(v)) { rank.set(v, r + 1); queue.push(v); }
    for (const v of inc.get(u) ?? []) if (!rank.has(v)) { rank.set(v, r - 1); queue.push(v); }
  }
  const columns = new Map();
  for (const id of top) {
    const r = rank.get(id) ?? 0;
    if (!columns.has(r)) columns.set(r, []);
    columns.get(r).push(id);
  }
  const pos = {};
  for (const [r, ids] of columns) {
    let y = 0;
    for (const id of ids) {
      const kids = children.get(id) ?? [];
      if (kids.length) {
        kids.forEach((k, j) => { pos[k] = { x: r * 260, y: y + 30 + j * 30 }; });
        y += 50 + kids.length * 30;
      } else {
        pos[id] = { x: r * 260, y: y + 17 };
        y += 44;
      }
    }
  }
  const l1 = performance.now();
  cy.batch(() => cy.nodes().forEach((x) => { if (!x.isParent()) x.position(pos[x.id()] ?? { x: 0, y: 0 }); }));
  const l2 = performance.now();
  fit();
  state.layoutParts = { ranks: l1 - l0, positions: l2 - l1, fit: performance.now() - l2 };
}

// The whole graph in the pane. A large view is fitted to its nodes' positions: cy.fit() measures
// every label first (seconds at 2,000 nodes).
function fit() {
  if (cy.nodes().length <= 800) { cy.fit(undefined, 20); return; }
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  cy.nodes().forEach((n) => {
    if (n.isParent()) return;
    const p = n.position();
    x0 = Math.min(x0, p.x - 100); x1 = Math.max(x1, p.x + 100); y0 = Math.min(y0, p.y - 40); y1 = Math.max(y1, p.y + 40);
  });
  const zoom = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), cy.width() / (x1 - x0), cy.height() / (y1 - y0)));
  cy.viewport({ zoom, pan: { x: (cy.width() - zoom * (x0 + x1)) / 2, y: (cy.height() - zoom * (y0 + y1)) / 2 } });
}

function shown(n) { return state.runsShown !== false || n.kind !== "run"; }

function kindOf(node) { return node.kind; }
function labelOf(n) {
  if (n.kind === "more") return `+${fmt(n.count)} more`;
  if (n.kind === "job") return `${n.label}${n.runs ? ` (${fmt(n.runs)} run${n.runs === 1 ? "" : "s"})` : ""}`;
  return n.label ?? n.name ?? n.id;
}

// Elements: state.nodes / state.edges hold the data; owners: node id -> the set of what put it there
// ("view" or the id of the node whose expansion added it).
function addGraph(g, owner) {
  const added = [];
  for (const n of g.nodes) {
    if (!state.nodes.has(n.id)) { state.nodes.set(n.id, { ...n, start: owner === "view" && n.start }); added.push(n.id); }
    else state.nodes.set(n.id, { ...state.nodes.get(n.id), ...n, start: state.nodes.get(n.id).start });
    if (!state.owners.has(n.id)) state.owners.set(n.id, new Set());
    state.owners.get(n.id).add(owner);
  }
  for (const e of g.edges) state.edges.set(e.id, e);
  for (const m of g.more || []) {
    const id = `more:${m.direction}:${m.node}`;
    state.nodes.set(id, { id, kind: "more", label: "", count: m.count, of: m.node, direction: m.direction, offset: m.offset,
      parent: undefined });
    if (!state.owners.has(id)) state.owners.set(id, new Set());
    state.owners.get(id).add(owner);
    const [s, t] = m.direction === "up" ? [id, m.node] : [m.node, id];
    state.edges.set(`${s}->${t}`, { id: `${s}->${t}`, source: s, target: t, kind: "more" });
  }
  return added;
}

function removeNode(id) {
  state.nodes.delete(id);
  state.owners.delete(id);
  for (const [eid, e] of state.edges) if (e.source === id || e.target === id) state.edges.delete(eid);
  for (const [cid, c] of state.nodes) if (c.parent === id) removeNode(cid);
}

function collapse(id) {
  state.expanded.delete(id);
  let changed = true;
  const drop = new Set([id]);
  while (changed) {
    changed = false;
    for (const [nid, owners] of state.owners) {
      for (const o of drop) if (owners.delete(o)) changed = true;
      if (owners.size === 0 && !drop.has(nid)) {
        drop.add(nid);
        state.expanded.delete(nid);
        changed = true;
      }
    }
  }
  for (const nid of drop) if (nid !== id && state.owners.get(nid)?.size === 0) removeNode(nid);
}

function draw() {
  const t0 = performance.now();
  cy.startBatch();
  cy.elements().remove();
  const els = [];
  // a large view leaves out the runs inside jobs (a job's label counts them): compound nodes are
  // what costs most to draw, and the runs are in the job's details
  state.runsShown = state.nodes.size <= 800;
  for (const n of state.nodes.values()) {
    if (!shown(n)) continue;
    const parent = n.parent && state.nodes.has(n.parent) ? n.parent : undefined;
    els.push({ group: "nodes", data: { ...n, id: n.id, parent, label: labelOf(n) } });
  }
  for (const e of state.edges.values())
    if (state.nodes.has(e.source) && state.nodes.has(e.target)) els.push({ group: "edges", data: { ...e } });
  const added = cy.add(els);
  if (els.length > 1600) added.nodes().addClass("plain");
  for (const id of state.added) cy.getElementById(id).addClass("added");
  for (const id of state.removed) cy.getElementById(id).addClass("removed");
  if (state.selected) cy.getElementById(state.selected).addClass("selected");
  cy.endBatch();
  const t1 = performance.now();
  layout();
  const t2 = performance.now();
  highlightPath(false);
  renderList();
  renderIql();
  state.lastDrawMs = performance.now() - t0;
  state.drawParts = { add: t1 - t0, layout: t2 - t1, list: performance.now() - t2 }; // where a redraw's time goes
  document.body.dataset.drawn = String(Date.now());
}

// ------------------------------------------------------------------ views
function viewParams(extra = {}) {
  return { level: state.level, depth: state.depth, direction: state.direction, limit: state.limit, ...extra };
}

async function fetchView(asOf) {
  const g = await api(`${API}/graph`, { node: state.start, ...viewParams(), as_of: asOf ?? state.asOf });
  return g;
}

async function openView(nodeId, keepExpanded = false) {
  const expanded = keepExpanded ? [...state.expanded] : [];
  state.start = nodeId;
  state.nodes = new Map(); state.edges = new Map(); state.owners = new Map(); state.expanded = new Set();
  state.added = new Set(); state.removed = new Set();
  $("rows-section").hidden = state.level !== "row";
  if (state.level === "row") return openRows(nodeId);
  try {
    const t0 = performance.now();
    const g = await fetchView();
    state.lastFetchMs = performance.now() - t0;
    state.start = g.start;
    if (!state.selected || !keepExpanded) state.selected = g.start;
    addGraph(g, "view");
    for (const id of expanded) if (state.nodes.has(id)) await expand(id, false);
    if (state.compare) await applyDiff();
    draw();
    state.lastPaintMs = performance.now() - t0;
    state.painted = false; // the first frame drawn after it (two animation frames on): the paint itself
    requestAnimationFrame(() => requestAnimationFrame(() => { state.lastFrameMs = performance.now() - t0; state.painted = true; }));
    status(`${labelFor(state.start)}: ${levelName()} level, depth ${state.depth}, ${state.direction}` +
      `${state.asOf ? `, version ${state.asOf}` : ""} — ${fmt(cy.nodes().length)} nodes, ${fmt(cy.edges().length)} edges`);
    await showDetails(state.selected);
  } catch (err) { status(err.message, true); }
}

// an item's (or a process's) view is the same at every level: the page calls it the item level
const isItem = (n) => n?.kind === "element" || n?.kind === "process";
function levelName() { return isItem(state.nodes.get(state.start)) ? "item" : state.level; }

function labelFor(id) {
  const n = state.nodes.get(id);
  return n ? `${n.kind} ${n.name ?? n.label}` : id;
}

async function expand(id, redraw = true) {
  const n = state.nodes.get(id);
  if (!n) return;
  if (n.kind === "more") return expandMore(n, redraw);
  if (n.kind === "item" || n.kind === "run" && state.level !== "dataset") return;
  const t0 = performance.now();
  const g = await api(`${API}/graph`, { node: id, level: state.level, depth: 1, direction: state.direction,
    limit: state.limit });
  addGraph(g, id);
  state.expanded.add(id);
  if (redraw) {
    draw();
    state.lastExpandMs = performance.now() - t0;
    status(`expanded ${labelFor(id)}: ${fmt(cy.nodes().length)} nodes`);
  }
}

async function expandMore(m, redraw = true) {
  const g = await api(`${API}/graph`, { node: m.of, level: state.level, depth: 1, direction: m.direction,
    offset: m.offset, limit: 200 });
  removeNode(m.id);
  g.more = (g.more || []).filter((x) => x.node === m.of && x.direction === m.direction);
  addGraph(g, m.of);
  if (redraw) { draw(); status(`showing more ${m.direction === "up" ? "upstream" : "downstream"} of ${labelFor(m.of)}`); }
}

async function toggle(id) {
  if (state.expanded.has(id)) {
    collapse(id);
    draw();
    status(`collapsed ${labelFor(id)}: ${fmt(cy.nodes().length)} nodes`);
  } else {
    try { await expand(id); } catch (err) { status(err.message, true); }
  }
}

async function activate(id) {
  const n = state.nodes.get(id);
  if (n?.kind === "more") return toggle(id);
  if (n?.kind === "outitem") return traceItem(n);
  state.selected = id;
  cy.nodes().removeClass("selected");
  cy.getElementById(id).addClass("selected");
  renderList();
  await showDetails(id);
}

// ------------------------------------------------------------------ diff (two versions)
async function applyDiff() {
  const other = await api(`${API}/graph`, { node: state.start, ...viewParams(), as_of: state.compare })
    .catch(() => ({ nodes: [], edges: [] }));
  const mine = new Set(state.nodes.keys());
  const theirs = new Set(other.nodes.map((n) => n.id));
  // the view shows the newer of the two versions; what only the other has was removed (or added)
  const newer = (state.asOf ?? state.newest) >= state.compare;
  for (const n of other.nodes) if (!mine.has(n.id)) {
    state.nodes.set(n.id, n); state.owners.set(n.id, new Set(["diff"]));
    (newer ? state.removed : state.added).add(n.id);
  }
  for (const e of other.edges) if (!state.edges.has(e.id)) state.edges.set(e.id, e);
  for (const id of mine) if (!theirs.has(id) && !id.startsWith("more:")) (newer ? state.added : state.removed).add(id);
}

// ------------------------------------------------------------------ path
function highlightPath(announce = true) {
  cy.elements().removeClass("path");
  state.path = new Set();
  if (!state.pathFrom || !state.pathTo) return;
  const a = cy.getElementById(state.pathFrom), b = cy.getElementById(state.pathTo);
  let found = null;
  for (const [s, t] of [[a, b], [b, a]]) {
    if (!s.length || !t.length) break;
    const graph = cy.elements().filter((el) => el.isEdge() || !["run", "more"].includes(el.data("kind")));
    const r = graph.aStar({ root: s, goal: t, directed: true });
    if (r.found) { found = r; break; }
  }
  if (!found) {
    if (announce) status(`no path between ${labelFor(state.pathFrom)} and ${labelFor(state.pathTo)} in the drawn graph`, true);
    return;
  }
  found.path.addClass("path");
  found.path.nodes().forEach((n) => state.path.add(n.id()));
  if (announce) status(`path from ${labelFor(found.path.nodes()[0].id())} to ${labelFor(found.path.nodes().last().id())}: ` +
    `${found.path.edges().length} step${found.path.edges().length === 1 ? "" : "s"}, ${found.path.nodes().length} nodes`);
}

function pathEnd(id) {
  if (!state.pathFrom || state.pathTo) { state.pathFrom = id; state.pathTo = null; status(`path from ${labelFor(id)}: choose its other end`); }
  else { state.pathTo = id; }
  highlightPath();
  renderList();
}

// ------------------------------------------------------------------ the accessible list
let degree = new Map(); // node id -> [drawn upstream neighbours, drawn downstream ones], per renderList
function stateOf(n) {
  const s = [];
  if (n.start) s.push("start");
  if (n.id === state.selected) s.push("selected");
  if (state.expanded.has(n.id)) s.push("expanded");
  else if (n.up !== undefined) {
    const [drawnUp, drawnDown] = degree.get(n.id) ?? [0, 0];
    const up = n.up - drawnUp, down = n.down - drawnDown;
    if (up + down > 0) s.push(`collapsed: ${up} up, ${down} down hidden`);
  }
  if (state.path.has(n.id)) s.push("on path");
  if (state.added.has(n.id)) s.push("added");
  if (state.removed.has(n.id)) s.push("removed");
  if (n.state) s.push(n.state.toLowerCase());
  return s.join(", ");
}

function renderList() {
  degree = new Map();
  for (const e of state.edges.values()) {
    if (e.kind === "more" || !state.nodes.has(e.source) || !state.nodes.has(e.target)) continue;
    if (!degree.has(e.target)) degree.set(e.target, [0, 0]);
    if (!degree.has(e.source)) degree.set(e.source, [0, 0]);
    degree.get(e.target)[0]++;
    degree.get(e.source)[1]++;
  }
  const list = $("node-list");
  const focused = document.activeElement?.closest?.("#node-list li")?.dataset.id;
  list.replaceChildren();
  const nodes = [...state.nodes.values()].filter((n) => n.kind !== "outitem" && shown(n));
  for (const n of nodes) {
    const li = document.createElement("li");
    li.dataset.id = n.id;
    li.dataset.kind = n.kind;
    li.classList.toggle("selected", n.id === state.selected);
    li.classList.toggle("on-path", state.path.has(n.id));
    const b = document.createElement("button");
    b.type = "button";
    b.className = "node";
    b.tabIndex = n.id === (focused ?? state.selected) ? 0 : -1;
    const where = n.parent && state.nodes.get(n.parent) ? ` in ${state.nodes.get(n.parent).name ?? ""}`
      : n.kind === "element" && n.table ? ` in ${n.table}` : n.kind === "process" ? ` deriving ${n.output}` : "";
    b.innerHTML = `<span class="kind">${esc(n.kind)}</span> <span class="name">${esc(labelOf(n))}</span>${esc(where)}` +
      ` <span class="state">${esc(stateOf(n))}</span>`;
    b.setAttribute("aria-label", `${n.kind} ${labelOf(n)}${where}, ${isItem(n) ? "item" : state.level} level${stateOf(n) ? ", " + stateOf(n) : ""}`);
    b.addEventListener("click", () => activate(n.id));
    li.append(b);
    if (state.level !== "row" && n.kind !== "more" && n.kind !== "item" && n.kind !== "run") {
      const t = document.createElement("button");
      t.type = "button";
      t.className = "toggle";
      t.tabIndex = -1;
      t.textContent = state.expanded.has(n.id) ? "Collapse" : "Expand";
      t.setAttribute("aria-label", `${t.textContent} ${labelOf(n)}`);
      t.addEventListener("click", () => toggle(n.id));
      li.append(t);
    }
    list.append(li);
  }
  if (!list.querySelector('button.node[tabindex="0"]') && list.querySelector("button.node"))
    list.querySelector("button.node").tabIndex = 0;
  if (focused) list.querySelector(`li[data-id="${CSS.escape(focused)}"] button.node`)?.focus();
  $("node-count").textContent = `(${fmt(nodes.length)})`;
  const edges = $("edge-list");
  edges.replaceChildren();
  let count = 0;
  for (const e of state.edges.values()) {
    if (!state.nodes.has(e.source) || !state.nodes.has(e.target)) continue;
    count++;
    const li = document.createElement("li");
    li.dataset.kind = e.kind;
    li.textContent = `${labelFor(e.source)} → ${labelFor(e.target)} (${e.kind}${e.label ? " " + e.label : ""})`;
    edges.append(li);
  }
  $("edge-count").textContent = `(${fmt(count)})`;
}

// the output items: ↑/↓ move, Enter (the button's click) traces one
$("rows").addEventListener("keydown", (ev) => {
  if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
  ev.preventDefault();
  const items = [...$("rows").querySelectorAll("button")];
  const i = items.indexOf(document.activeElement);
  items[Math.max(0, Math.min(items.length - 1, i + (ev.key === "ArrowDown" ? 1 : -1)))]?.focus();
});

$("node-list").addEventListener("keydown", async (ev) => {
  const li = ev.target.closest("li");
  if (!li) return;
  const id = li.dataset.id;
  const move = (d) => {
    const items = [...$("node-list").querySelectorAll("button.node")];
    const i = items.indexOf(li.querySelector("button.node"));
    const next = items[Math.max(0, Math.min(items.length - 1, i + d))];
    items.forEach((b) => (b.tabIndex = -1));
    next.tabIndex = 0;
    next.focus();
  };
  if (ev.key === "ArrowDown") { ev.preventDefault(); move(1); }
  else if (ev.key === "ArrowUp") { ev.preventDefault(); move(-1); }
  else if (ev.key === "e") { ev.preventDefault(); await toggle(id); }
  else if (ev.key === "p") { ev.preventDefault(); pathEnd(id); }
});

// ------------------------------------------------------------------ details
function dl(pairs) {
  return `<dl>${pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("")}</dl>`;
}
function buttons(id) {
  return `<div class="row"><button type="button" data-act="toggle">${state.expanded.has(id) ? "Collapse" : "Expand"}</button>` +
    `<button type="button" data-act="path">Path end</button><button type="button" data-act="open">Start here</button></div>`;
}
async function showDetails(id) {
  const box = $("details");
  const n = state.nodes.get(id);
  if (!n) { box.innerHTML = ""; return; }
  if (n.kind === "item") {
    box.innerHTML = `<h3>Input item</h3>${dl([["dataset", esc(n.dataset)], ["item", esc(n.name)], ["source", `<code>${esc(n.source)}</code>`]])}` +
      `<table><thead><tr><th>path</th><th>role</th><th>value</th></tr></thead><tbody>${n.paths.map((p) =>
        `<tr><td>${esc(p.path)}</td><td>${esc(p.role)}</td><td><code>${esc(p.value)}</code></td></tr>`).join("")}</tbody></table>`;
    return;
  }
  if (n.id.startsWith("out:") || n.id.startsWith("in:")) {
    box.innerHTML = `<h3>${n.id.startsWith("out:") ? "Output of a captured run" : "Input dataset"}</h3>` +
      dl([["name", esc(n.name)], ["captured run", esc(state.run)]]);
    return;
  }
  if (n.kind === "more") { box.innerHTML = `<p>${fmt(n.count)} more ${n.direction === "up" ? "upstream" : "downstream"} neighbours of ${esc(labelFor(n.of))}: Enter or click to draw them.</p>`; return; }
  try {
    const d = await api(`${API}/node`, { node: n.kind === "outitem" ? n.parent : id });
    let html = `<h3>${esc(d.kind)} ${esc(n.name ?? n.label)}</h3>${buttons(id)}`;
    if (d.kind === "dataset") {
      const ds = d.dataset;
      html += dl([["namespace", esc(ds.namespace)], ["name", esc(ds.name)], ["updated", esc(ds.updatedAt)],
        ["captured by", d.captured.map(esc).join("<br>")]]);
      html += ds.fields.length
        ? `<h4>Schema</h4><table><tbody>${ds.fields.map((f) => `<tr><td>${esc(f.name)}</td><td>${esc(f.type)}</td></tr>`).join("")}</tbody></table>`
        : "<h4>Schema</h4><p>(no schema facet)</p>";
      html += `<h4>Versions (${d.versions.length})</h4><ul>${d.versions.map((v) => `<li>${esc(v.createdAt)} <small>${esc(v.version)}</small></li>`).join("")}</ul>`;
      html += `<h4>Facets</h4><ul>${Object.keys(ds.facets).map((k) => `<li>${esc(k)}</li>`).join("")}</ul>`;
      if (d.versions.length >= 2) {
        const k = d.versions.length;
        const options = d.versions.map((v, i) => [`${ds.name}@${k - i}`, `${k - i} (${v.createdAt})`]);
        html += `<h4>Compare two versions (strata diff)</h4>${diffControls(options, `${ds.name}@${k - 1}`, `${ds.name}@${k}`)}`;
      }
    } else if (d.kind === "job") {
      html += dl([["namespace", esc(d.job.namespace)], ["runs", fmt(d.runCount)], ["location", esc(d.job.location)]]);
      html += `<h4>Runs</h4><ul>${d.runs.map((r) => `<li>${esc(r.state)} ${esc(r.endedAt ?? r.updatedAt)} <small>${esc(r.id)}</small></li>`).join("")}</ul>`;
      if (d.runs.length >= 2) {
        const options = d.runs.map((r) => [r.id, `${r.state.toLowerCase()} ${r.endedAt ?? r.updatedAt}`]);
        html += `<h4>Compare two runs (strata diff)</h4>${diffControls(options, d.runs[1].id, d.runs[0].id)}`;
      }
    } else if (d.kind === "run") {
      html += dl([["state", esc(d.run.state)], ["started", esc(d.run.startedAt)], ["ended", esc(d.run.endedAt)],
        ["job", esc(d.run.jobVersion.name)], ["captured run", esc(d.captured)], ["facets", esc(Object.keys(d.run.facets).join(", "))]]);
    } else if (d.kind === "element") {
      const near = (xs) => xs.map((x) => `<li>${esc(x.item)} <small>${esc(x.process)}</small></li>`).join("");
      html += dl([["item", `<code>${esc(d.item)}</code>`], ["table", esc(d.table)], ["component", esc(d.component)],
        ["connected set", esc(d.set)]]);
      html += `<h4>Direct sources (${fmt(d.sourceCount)})</h4><ul>${near(d.sources) || "<li>(none: an input)</li>"}</ul>`;
      html += `<h4>Direct consumers (${fmt(d.consumerCount)})</h4><ul>${near(d.consumers) || "<li>(none)</li>"}</ul>`;
      html += `<p><small>Its whole lineage: <code>strata lineage ${esc(d.item)}</code> or GET ${esc(API)}/lineage?item=</small></p>`;
    } else if (d.kind === "process") {
      html += dl([["process", `<code>${esc(d.process)}</code>`], ["output", `<code>${esc(d.output)}</code>`]]);
      html += `<h4>Sources (${fmt(d.sourceCount)})</h4><ul>${d.sources.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>`;
    } else if (d.kind === "field") {
      html += dl([["dataset", esc(d.dataset)], ["type", esc(d.field.type)]]);
      html += `<h4>Derived from</h4><ul>${d.inputs.map((i) => `<li>${esc(i.field)} <small>${esc(i.type)} ${esc(i.subtype)}</small></li>`).join("") || "<li>(no column lineage)</li>"}</ul>`;
    }
    box.innerHTML = html;
    box.querySelector('[data-act="toggle"]').addEventListener("click", () => toggle(id));
    box.querySelector('[data-act="path"]').addEventListener("click", () => pathEnd(id));
    box.querySelector('[data-act="open"]').addEventListener("click", () => { state.selected = id; openView(id); });
    box.querySelector('[data-act="diff"]')?.addEventListener("click", () => {
      const a = $("diff-a"), b = $("diff-b");
      showDiff(a.value, b.value, `${a.selectedOptions[0].textContent} → ${b.selectedOptions[0].textContent}`);
    });
  } catch (err) { box.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
}

// What changed between two runs, or two versions of a dataset (`strata diff A B`), coloured.
function diffControls(options, a, b) {
  const opts = (sel) => options.map(([value, text]) => `<option value="${esc(value)}"${value === sel ? " selected" : ""}>${esc(text)}</option>`).join("");
  return `<div class="row"><label>from <select id="diff-a">${opts(a)}</select></label>` +
    `<label>to <select id="diff-b">${opts(b)}</select></label>` +
    `<button type="button" data-act="diff">Diff</button></div><div id="diff-out" aria-live="polite"></div>`;
}
async function showDiff(a, b, label) {
  const out = $("diff-out");
  try {
    const r = await api(`${API}/diff`, { a, b });
    const line = (x) => esc(typeof x === "string" ? x : JSON.stringify(x));
    const list = (xs, cls, sign) => xs.map((x) => `<li class="${cls}">${sign} ${line(x)}</li>`).join("");
    const shared = Object.entries(r.shared || {}).map(([k, v]) => `${v} ${k}`).join(", ");
    out.innerHTML = `<p>${esc(label)}: ${r.only_a.length} only in the first, ${r.only_b.length} only in the second, ` +
      `${r.changed.length} changed; shared: ${esc(shared)}</p><ul>${list(r.only_a, "removed", "−")}${list(r.only_b, "added", "+")}` +
      `${list(r.changed, "changed", "~")}</ul>`;
  } catch (err) { out.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
}

// ------------------------------------------------------------------ row level
function capturedRunOf(n) {
  if (!n) return null;
  if (n.kind === "run" && n.captured) return n.captured;
  if (n.kind === "job") for (const c of state.nodes.values()) if (c.parent === n.id && c.captured) return c.captured;
  if (n.captured && n.captured.length) return n.captured[0];
  return null;
}

async function openRows(nodeId) {
  const n = state.nodes.get(nodeId) ?? (await nodeInfo(nodeId));
  let run = state.run;
  const own = capturedRunOf(n);
  if (own) run = own;
  const list = $("rows");
  list.replaceChildren();
  if (!run) {
    status("row level: no captured run wrote this node (strata capture records rows); pick a captured dataset", true);
    draw();
    return;
  }
  state.run = run;
  if (n && n.kind === "dataset" && !nodeId.startsWith("out:")) state.rowDataset = nodeId;
  try {
    const r = await api(`${API}/rows`, { run, limit: 200 });
    const outId = `out:${run}`;
    state.nodes.set(outId, { id: outId, kind: "dataset", label: `output of ${run}`, name: run, start: true });
    state.owners.set(outId, new Set(["view"]));
    for (const it of r.items) {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = Object.entries(it.values).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ");
      b.dataset.item = it.item;
      b.setAttribute("aria-label", `trace output item ${b.textContent}`);
      b.addEventListener("click", () => traceItem({ id: it.item, values: it.values }));
      li.append(b);
      list.append(li);
    }
    status(`row level: ${fmt(r.totalCount)} output items of captured run ${run}; choose one to trace it to its input records`);
    draw();
    const a = document.activeElement;
    if (!a || a === document.body || a.closest("#node-list")) list.querySelector("button")?.focus();
    if (state.item) {
      const again = r.items.find((i) => i.item === state.item.id);
      if (again) await traceItem({ id: again.item, values: again.values });
    }
  } catch (err) { status(err.message, true); }
}

async function nodeInfo(id) {
  try {
    const d = await api(`${API}/node`, { node: id });
    return { id, kind: d.kind, captured: d.kind === "run" ? d.captured : d.captured };
  } catch { return null; }
}

function quote(v) { return typeof v === "string" ? `'${v.replace(/'/g, "''")}'` : String(v); }
// A tree pattern that picks an output item by its first scalar value, looked for depth first
// through nested structs (not arrays): {"user": {"id_str": "lp"}} -> /user/id_str = 'lp'.
function patternOf(values) {
  const leaf = (obj, path) => {
    for (const [k, v] of Object.entries(obj)) {
      if (v !== null && typeof v !== "object") return `${path}/${k} = ${quote(v)}`;
      if (v && typeof v === "object" && !Array.isArray(v)) { const found = leaf(v, `${path}/${k}`); if (found) return found; }
    }
    return null;
  };
  return leaf(values, "") ?? "//*";
}

// "dir/tweets.json:12" before "dir/tweets.json:101": the file, then the number after its last : or #
function bySource(a, b) {
  const split = (it) => {
    const m = /^(.*)[:#](\d+)$/.exec(it.source || "");
    return m ? [it.dataset, m[1], Number(m[2])] : [it.dataset, it.source || "", -1];
  };
  const [x, y] = [split(a), split(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return a.item < b.item ? -1 : a.item > b.item ? 1 : 0;
}

async function traceItem(item) {
  state.item = item;
  const pattern = patternOf(item.values);
  try {
    const t = await api(`${API}/trace`, { run: state.run, pattern, limit: 1 });
    const outId = `out:${state.run}`;
    state.nodes = new Map([[outId, state.nodes.get(outId)]]);
    state.owners = new Map([[outId, new Set(["view"])]]);
    state.edges = new Map();
    const itemId = `outitem:${item.id}`;
    const label = Object.entries(item.values).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
    state.nodes.set(itemId, { id: itemId, kind: "item", label: `output ${label}`, name: item.id, parent: outId,
      dataset: state.run, source: "(output)", paths: Object.entries(item.values).map(([k, v]) => ({ path: k, role: "output", value: JSON.stringify(v) })) });
    const found = new Map();
    for (const row of t.rows) {
      if (!found.has(row.item)) found.set(row.item, { ...row, paths: [] });
      found.get(row.item).paths.push({ path: row.path, role: row.role, value: row.value });
    }
    // input records in the order of their sources (file, then line or row number), not of their ids
    const byItem = new Map([...found].sort(([, a], [, b]) => bySource(a, b)));
    for (const [iid, it] of byItem) {
      const dsId = `in:${it.dataset}`;
      if (!state.nodes.has(dsId)) state.nodes.set(dsId, { id: dsId, kind: "dataset", label: it.dataset.split("/").pop(), name: it.dataset });
      const contributing = it.paths.some((p) => p.role === "contributing");
      const shown = it.paths.filter((p) => p.role === "contributing").map((p) => `${p.path}=${p.value}`).slice(0, 2).join(" ");
      state.nodes.set(iid, { id: iid, kind: "item", parent: dsId, name: iid, dataset: it.dataset, source: it.source,
        label: `${(it.source || "").split("/").pop()}\n${shown}`, paths: it.paths });
      state.edges.set(`${iid}->${itemId}`, { id: `${iid}->${itemId}`, source: iid, target: itemId,
        kind: contributing ? "contributing" : "influencing" });
    }
    state.selected = itemId;
    state.traced = { pattern, items: byItem.size };
    draw();
    status(`traced output item ${label} to ${byItem.size} input record${byItem.size === 1 ? "" : "s"}`);
    await showDetails(byItem.size ? [...byItem.keys()][0] : itemId);
  } catch (err) { status(err.message, true); }
}

// ------------------------------------------------------------------ IQL
function viewIql() {
  const n = state.nodes.get(state.start);
  if (state.level === "row") {
    return state.traced ? `TRACE ${quote(state.run)} MATCH ${quote(state.traced.pattern)} LIMIT 1` : state.run ? `TRACE ${quote(state.run)} MATCH '//*'` : "";
  }
  if (!n || n.kind === "element" || n.kind === "process") return "";
  const hops = state.depth > 0 ? `influences(${2 * state.depth})` : "influences(0)";
  const name = quote(n.kind === "field" ? n.dataset : n.name);
  if (state.level === "column") {
    const side = state.direction === "down" ? "f" : "g";
    const field = n.kind === "field" ? ` and ${side}.name = ${quote(n.name)}` : "";
    return "select f.id, t.type, t.subtype, g.id from Field f, Transformation t, Field g, DatasetVersion d " +
      `where f feeds t and t emits g and ${side} under d and d.name = ${name}${field}`;
  }
  if (n.kind === "job") return `select distinct r.runId, r.state from Run r, Job j where r under j and j.name = ${name}`;
  const up = `select distinct x.name, x.version from DatasetVersion x, DatasetVersion v where x ${hops} v and v.name = ${name}`;
  const down = `select distinct x.name, x.version from DatasetVersion v, DatasetVersion x where v ${hops} x and v.name = ${name}`;
  return state.direction === "down" ? down : up;
}
function renderIql() { $("view-iql").textContent = viewIql(); }

$("copy-iql").addEventListener("click", async () => {
  const text = $("view-iql").textContent;
  $("console").value = text;
  try { await navigator.clipboard.writeText(text); status("copied the view's IQL (and put it in the console)"); }
  catch { status("put the view's IQL in the console (the clipboard is not available here)"); }
});

let lastResult = null;
async function runIql() {
  const out = $("console-out");
  try {
    const r = await api(`${API}/query`, {}, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: $("console").value, as_of: state.asOf ?? undefined }) });
    lastResult = r;
    out.innerHTML = `<p>${fmt(r.rows.length)} row${r.rows.length === 1 ? "" : "s"}</p><table><thead><tr>${r.columns.map((c) => `<th>${esc(c)}</th>`).join("")}</tr></thead>` +
      `<tbody>${r.rows.slice(0, 200).map((row) => `<tr>${row.map((v) => `<td>${esc(typeof v === "object" ? JSON.stringify(v) : v)}</td>`).join("")}</tr>`).join("")}</tbody></table>` +
      (r.warnings?.length ? `<p>${r.warnings.map(esc).join("<br>")}</p>` : "");
  } catch (err) { out.innerHTML = `<p class="error">${esc(err.message)}</p>`; lastResult = null; }
}
$("run-iql").addEventListener("click", runIql);
$("console").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runIql(); } });

// Draw a result: every value of its rows that names a dataset, job or field (by id or by exact
// name) becomes a node of a new view, with the edges among them.
$("draw-iql").addEventListener("click", async () => {
  if (!lastResult) await runIql();
  if (!lastResult) return;
  // a stored field version (dataset:<ns>:<name>@<version>#<field>) is drawn as its field
  const values = new Set(lastResult.rows.flat().filter((v) => typeof v === "string")
    .map((v) => v.replace(/^dataset:(.*)@[^#@]*#(.*)$/, "datasetField:$1:$2")));
  const g = { nodes: [], edges: [] };
  const level = state.level === "column" ? "column" : "dataset";
  for (const v of [...values].slice(0, 200)) {
    let id = null;
    if (/^(dataset|job|datasetField|run):/.test(v)) id = v;
    else {
      const s = await api(`${API}/search`, { q: v, limit: 5 });
      id = s.results.find((h) => h.name === v && h.kind !== "field")?.id ?? null;
    }
    if (!id) continue;
    const one = await api(`${API}/graph`, { node: id, level, depth: 0 }).catch(() => null);
    const hit = one?.nodes.find((n) => n.id === id);
    if (hit) g.nodes.push(...one.nodes.filter((n) => n.id === id || n.id === hit.parent));
  }
  if (!g.nodes.length) { status("the result names no dataset, job or field to draw", true); return; }
  state.nodes = new Map(); state.edges = new Map(); state.owners = new Map(); state.expanded = new Set();
  addGraph(g, "view");
  // the edges among the drawn nodes: each one's neighbourhood at depth 1, kept where both ends are drawn
  for (const n of g.nodes.slice(0, 50)) {
    const nb = await api(`${API}/graph`, { node: n.id, level, depth: 1 });
    for (const e of nb.edges) if (state.nodes.has(e.source) && state.nodes.has(e.target)) state.edges.set(e.id, e);
    for (const m of nb.nodes) if (m.kind === "job" && nb.edges.some((e) => e.source === m.id || e.target === m.id)) {
      const ins = nb.edges.filter((e) => e.target === m.id && state.nodes.has(e.source));
      const outs = nb.edges.filter((e) => e.source === m.id && state.nodes.has(e.target));
      if (ins.length && outs.length) { addGraph({ nodes: [m], edges: [...ins, ...outs] }, "view"); }
    }
  }
  state.start = g.nodes[0].id;
  draw();
  status(`drew ${fmt(g.nodes.length)} node${g.nodes.length === 1 ? "" : "s"} named by the query's result`);
});

// ------------------------------------------------------------------ search
let hits = [], active = -1, searchSeq = 0;
const input = $("search"), box = $("search-results");
function renderHits() {
  box.replaceChildren();
  hits.forEach((h, i) => {
    const li = document.createElement("li");
    li.id = `hit-${i}`;
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", String(i === active));
    li.dataset.id = h.id;
    const extra = h.kind === "field" ? ` in ${h.dataset}` : h.kind === "run" ? ` (${h.job}, ${h.state.toLowerCase()})` : "";
    li.innerHTML = `<span class="kind">${esc(h.kind)}</span> ${esc(h.name)}${esc(extra)} <small>${esc(h.namespace)}</small>`;
    li.addEventListener("mousedown", (e) => { e.preventDefault(); choose(i); });
    box.append(li);
  });
  box.hidden = hits.length === 0;
  input.setAttribute("aria-expanded", String(!box.hidden));
  input.setAttribute("aria-activedescendant", active >= 0 ? `hit-${active}` : "");
}
input.addEventListener("input", async () => {
  const q = input.value.trim();
  const seq = ++searchSeq;
  if (!q) { hits = []; renderHits(); return; }
  try {
    const r = await api(`${API}/search`, { q, limit: 20 });
    if (seq !== searchSeq) return;
    hits = r.results; active = hits.length ? 0 : -1;
    renderHits();
    status(`${fmt(r.totalCount)} match${r.totalCount === 1 ? "" : "es"} for “${q}”`);
  } catch (err) { status(err.message, true); }
});
input.addEventListener("keydown", (e) => {
  if (e.key === "ArrowDown" && hits.length) { e.preventDefault(); active = (active + 1) % hits.length; renderHits(); }
  else if (e.key === "ArrowUp" && hits.length) { e.preventDefault(); active = (active - 1 + hits.length) % hits.length; renderHits(); }
  else if (e.key === "Enter" && active >= 0) { e.preventDefault(); choose(active); }
  else if (e.key === "Escape") { hits = []; renderHits(); }
});
input.addEventListener("blur", () => setTimeout(() => { box.hidden = true; input.setAttribute("aria-expanded", "false"); }, 100));
async function choose(i) {
  const h = hits[i];
  hits = []; renderHits();
  input.value = h.name;
  state.selected = h.id;
  state.pathFrom = state.pathTo = null;
  if (h.kind === "field" && state.level === "dataset") setLevel("column", false);
  if (h.captured && typeof h.captured === "string") state.run = h.captured;
  await openView(h.id);
  focusList();
}

// ------------------------------------------------------------------ controls
// after a redraw the keyboard user is put back in the list, unless they went elsewhere meanwhile
function focusListUnlessMoved() {
  const a = document.activeElement;
  if (!a || a === document.body || a.closest("#node-list")) focusList();
}
function focusList() {
  const b = $("node-list").querySelector('button.node[tabindex="0"]') || $("node-list").querySelector("button.node");
  b?.focus();
}

// The level toggle keeps the selection: a field's view at dataset level is its dataset's; a
// dataset's at row level is the captured run that wrote it.
async function setLevel(level, reopen = true) {
  const sel = state.nodes.get(state.selected) ?? state.nodes.get(state.start);
  document.querySelector(`input[name="level"][value="${level}"]`).checked = true;
  const from = state.level;
  state.level = level;
  if (!reopen || !sel) return;
  let target = sel.id;
  if (sel.kind === "field" && level === "dataset") target = sel.parent;
  if (sel.kind === "item" && !sel.id.startsWith("outitem:") || sel.id.startsWith("in:")) {
    // an input record (or its dataset): that dataset, as OpenLineage names it
    const name = sel.kind === "item" ? sel.dataset : sel.name;
    const s = await api(`${API}/search`, { q: name, limit: 5 });
    target = s.results.find((h) => h.kind === "dataset" && h.name === name)?.id ?? state.rowDataset ?? state.lastNonRow;
  } else if (sel.id.startsWith("outitem:") || sel.id.startsWith("out:")) {
    target = state.rowDataset ?? state.lastNonRow;
  }
  if (level === "row") { state.lastNonRow = state.start; state.run = capturedRunOf(sel) ?? state.run; }
  if (from === "row" && level !== "row") state.item = null;
  state.selected = target;
  await openView(target);
}
document.querySelectorAll('input[name="level"]').forEach((r) => r.addEventListener("change", () => setLevel(r.value)));
$("depth").addEventListener("change", () => { state.depth = Math.max(0, Number($("depth").value) || 0); if (state.start) openView(state.start); });
$("direction").addEventListener("change", () => { state.direction = $("direction").value; if (state.start) openView(state.start); });
$("version").addEventListener("change", () => {
  const v = Number($("version").value);
  state.asOf = v === state.newest ? null : v;
  if (state.start) openView(state.start, true);
});
$("compare").addEventListener("change", () => {
  state.compare = $("compare").value ? Number($("compare").value) : null;
  if (state.start) openView(state.start, true);
});
$("fit").addEventListener("click", fit);

document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (t.closest && (t.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey)) return;
  if (e.key === "/") { e.preventDefault(); input.focus(); input.select(); }
  else if (e.key === "g") { e.preventDefault(); focusList(); }
  else if (e.key === "v") { e.preventDefault(); $("version").focus(); }
  else if (["1", "2", "3"].includes(e.key)) { e.preventDefault(); setLevel(["dataset", "column", "row"][Number(e.key) - 1]).then(focusListUnlessMoved); }
});
// Enter on a focused list button selects (the button's click); selecting keeps focus in the list.

async function init() {
  try {
    const v = await api(`${API}/versions`, { as_of: null });
    state.newest = v.version;
    for (const sel of [$("version"), $("compare")]) {
      for (const h of [...v.versions].reverse()) {
        const o = document.createElement("option");
        o.value = h.version;
        o.textContent = `${h.version}${h.version === v.version ? " (newest)" : ""} ${String(h.time ?? "").slice(0, 19)}`;
        sel.append(o);
      }
    }
    $("version").value = String(v.version);
    status(`store version ${v.version}: search for a dataset, job, run, field or item to start`);
    // a view can be linked: ?node=ID&level=&depth=&direction=&limit=&as_of=
    const url = new URLSearchParams(location.search);
    if (url.get("layout")) state.layout = url.get("layout"); // dagre or columns (default: by size)
    if (url.get("limit")) state.limit = Math.max(1, Number(url.get("limit")) || 25);
    if (url.get("depth")) { state.depth = Number(url.get("depth")) || 0; $("depth").value = state.depth; }
    if (url.get("direction")) { state.direction = url.get("direction"); $("direction").value = state.direction; }
    if (url.get("as_of")) { state.asOf = Number(url.get("as_of")); $("version").value = url.get("as_of"); }
    if (url.get("level")) setLevel(url.get("level"), false);
    const start = url.get("node");
    if (start) { state.selected = start; await openView(start); }
  } catch (err) { status(err.message, true); }
}
init();
