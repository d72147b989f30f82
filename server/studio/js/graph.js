// A graph drawn from `/assistants/{id}/graph` (LangGraph's JSON: nodes and edges, routes as
// conditional edges, an xray's subgraph nodes as `outer:inner`): a layered layout (longest path
// from the start, back edges of loops left out of the layering), drawn as SVG whose nodes a live
// run lights up by name.

const NODE_H = 34, GAP_X = 28, GAP_Y = 58, PAD = 24, CHAR_W = 7.4, MIN_W = 84;
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, parent) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.append(node);
  return node;
}

/** The edges that close a loop (found by a depth-first walk from the start), as "a→b" keys. */
function backEdges(ids, out) {
  const state = new Map(); // 1 = on the walk's path, 2 = finished
  const back = new Set();
  const visit = (start) => {
    const stack = [[start, 0]];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const next = (out.get(top[0]) || [])[top[1]++];
      if (next === undefined) { state.set(top[0], 2); stack.pop(); continue; }
      const s = state.get(next);
      if (s === 1) back.add(top[0] + "→" + next);
      else if (!s) { state.set(next, 1); stack.push([next, 0]); }
    }
  };
  if (ids.includes("__start__")) visit("__start__");
  for (const id of ids) if (!state.has(id)) visit(id);
  return back;
}

/** Positions for every node: `{x, y, w}` by id, and the drawing's size. */
export function layout(graph) {
  const ids = graph.nodes.map((n) => n.id);
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of graph.edges) if (out.has(e.source) && out.has(e.target)) out.get(e.source).push(e.target);
  const back = backEdges(ids, out);
  // Longest-path layers over the forward edges, in topological order.
  const indeg = new Map(ids.map((id) => [id, 0]));
  for (const [s, ts] of out) for (const t of ts) if (!back.has(s + "→" + t)) indeg.set(t, indeg.get(t) + 1);
  const layer = new Map(ids.map((id) => [id, 0]));
  const queue = ids.filter((id) => indeg.get(id) === 0);
  while (queue.length) {
    const s = queue.shift();
    for (const t of out.get(s)) {
      if (back.has(s + "→" + t)) continue;
      layer.set(t, Math.max(layer.get(t), layer.get(s) + 1));
      indeg.set(t, indeg.get(t) - 1);
      if (indeg.get(t) === 0) queue.push(t);
    }
  }
  const end = ids.includes("__end__") ? Math.max(...layer.values()) : 0;
  if (ids.includes("__end__")) layer.set("__end__", Math.max(end, 1));
  const rows = [];
  for (const id of ids) (rows[layer.get(id)] ||= []).push(id);
  // Order each row by the mean position of its parents (one sweep down), keeping ties stable.
  const order = new Map();
  const parents = new Map(ids.map((id) => [id, []]));
  for (const [s, ts] of out) for (const t of ts) if (!back.has(s + "→" + t)) parents.get(t).push(s);
  rows.forEach((row, r) => {
    if (r > 0) {
      const key = (id) => { const p = parents.get(id); return p.length ? p.reduce((a, b) => a + order.get(b), 0) / p.length : 0; };
      row.sort((a, b) => key(a) - key(b));
    }
    row.forEach((id, i) => order.set(id, i));
  });
  const label = (n) => (n.data && n.data.name) || n.id;
  const widths = new Map(graph.nodes.map((n) => [n.id, Math.max(MIN_W, label(n).length * CHAR_W + 24)]));
  const rowWidth = (row) => row.reduce((a, id) => a + widths.get(id), 0) + GAP_X * (row.length - 1);
  const width = Math.max(...rows.filter(Boolean).map(rowWidth)) + 2 * PAD;
  const pos = new Map();
  rows.forEach((row, r) => {
    if (!row) return;
    let x = (width - rowWidth(row)) / 2;
    for (const id of row) {
      pos.set(id, { x, y: PAD + r * (NODE_H + GAP_Y), w: widths.get(id) });
      x += widths.get(id) + GAP_X;
    }
  });
  return { pos, back, width, height: PAD * 2 + rows.length * (NODE_H + GAP_Y) - GAP_Y, label };
}

/** Draws `graph` into an SVG element; returns it with `light(name, state)` and `reset()`. */
export function draw(graph) {
  const { pos, back, width, height, label } = layout(graph);
  const svg = el("svg", { class: "graph", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "graph" });
  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8c8c88" }, marker);
  drawClusters(svg, graph, pos);
  for (const e of graph.edges) {
    const a = pos.get(e.source), b = pos.get(e.target);
    if (!a || !b) continue;
    const loop = back.has(e.source + "→" + e.target);
    const x1 = a.x + a.w / 2, y1 = loop ? a.y + NODE_H / 2 : a.y + NODE_H;
    const x2 = b.x + b.w / 2, y2 = loop ? b.y + NODE_H / 2 : b.y;
    const d = loop
      ? `M${a.x + a.w},${y1} C${Math.max(a.x + a.w, b.x + b.w) + 70},${y1} ${Math.max(a.x + a.w, b.x + b.w) + 70},${y2} ${b.x + b.w},${y2}`
      : `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
    el("path", { d, class: "edge" + (e.conditional ? " conditional" : ""), "marker-end": "url(#arrow)",
      "data-edge": `${e.source}->${e.target}` }, svg);
  }
  const nodes = new Map();
  for (const n of graph.nodes) {
    const p = pos.get(n.id);
    const terminal = n.id === "__start__" || n.id === "__end__";
    const g = el("g", { class: "node" + (terminal ? " terminal" : ""), "data-node": n.id }, svg);
    el("rect", { x: p.x, y: p.y, width: p.w, height: NODE_H, rx: terminal ? 17 : 7 }, g);
    el("text", { x: p.x + p.w / 2, y: p.y + NODE_H / 2 + 1 }, g).textContent = terminal ? (n.id === "__start__" ? "START" : "END") : label(n);
    el("title", {}, g).textContent = n.id;
    nodes.set(n.id, g);
  }
  svg.light = (name, state) => {
    for (const [id, g] of nodes) {
      if (id === name || id.endsWith(":" + name) || id.split(":")[0] === name) {
        g.classList.remove("running", "done", "failed", "paused");
        if (state) g.classList.add(state);
      }
    }
  };
  // A run that ended: nodes still lit as running were paused by an interrupt (LangGraph sends
  // no task result for them) or, when nothing is pending, stopped with the run.
  svg.settle = (paused) => {
    for (const g of nodes.values()) if (g.classList.contains("running")) g.classList.replace("running", paused ? "paused" : "failed");
  };
  svg.reset = () => { for (const g of nodes.values()) g.classList.remove("running", "done", "failed", "paused"); };
  return svg;
}

/** A dashed box behind the nodes of each subgraph an xray drew (ids `outer:inner`). */
function drawClusters(svg, graph, pos) {
  const groups = new Map();
  for (const n of graph.nodes) {
    const at = n.id.lastIndexOf(":");
    if (at > 0) (groups.get(n.id.slice(0, at)) || groups.set(n.id.slice(0, at), []).get(n.id.slice(0, at))).push(pos.get(n.id));
  }
  for (const [name, ps] of groups) {
    const x = Math.min(...ps.map((p) => p.x)) - 10, y = Math.min(...ps.map((p) => p.y)) - 18;
    const x2 = Math.max(...ps.map((p) => p.x + p.w)) + 10, y2 = Math.max(...ps.map((p) => p.y)) + NODE_H + 10;
    el("rect", { class: "cluster", x, y, width: x2 - x, height: y2 - y }, svg);
    el("text", { class: "cluster-label", x: x + 6, y: y + 11 }, svg).textContent = name;
  }
}
