// The relationship graph of a context as SVG, laid out by topological level (the levels and
// cycles come from get_topological_order: the same algorithm the agents' tool runs). Drawn by
// hand rather than with Mermaid (~3 MB of script, and its text syntax is one more place for
// stored labels to inject into): every label here is an SVG text node. Decision 2801.
import { episodeRoute, field, go, h, replace, table } from "./dom.js";
import { tool } from "./mcp.js";

const SVG = "http://www.w3.org/2000/svg";
const TYPES = ["follows", "causes", "part_of", "related_to", "contradicts", "refines"];
const COLUMN = 230, ROW = 56, NODE_W = 190, NODE_H = 36, PAD = 30, MAX_NODES = 200;

function s(tag, attrs = {}, text = null) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== null) el.textContent = text;
  return el;
}

async function contextEpisodes(context) {
  const ids = [];
  let cursor = null;
  do {
    const out = await tool("find_episodes", { context, limit: 100, ...(cursor ? { cursor } : {}) });
    ids.push(...out.episodes.map((e) => e.id));
    cursor = out.next_cursor;
  } while (cursor && ids.length < 500);
  return ids;
}

function cycleEdges(cycles) {
  const edges = new Set();
  for (const cycle of cycles) {
    cycle.forEach((a, i) => edges.add(a + " " + cycle[(i + 1) % cycle.length]));
  }
  return edges;
}

function layout(nodes, levels, inCycle) {
  const columns = new Map();
  for (const n of nodes) {
    const col = inCycle.has(n.id) ? -1 : (levels.get(n.id) ?? 0);
    if (!columns.has(col)) columns.set(col, []);
    columns.get(col).push(n);
  }
  const order = [...columns.keys()].sort((a, b) => (a === -1) - (b === -1) || a - b);
  const at = new Map();
  order.forEach((col, x) => columns.get(col).forEach((n, y) =>
    at.set(n.id, { x: PAD + x * COLUMN, y: PAD + 24 + y * ROW, col })));
  const height = PAD * 2 + 24 + Math.max(1, ...[...columns.values()].map((c) => c.length)) * ROW;
  return { at, order, width: PAD * 2 + order.length * COLUMN, height };
}

function draw(graph, levels, cycles) {
  const inCycle = new Set(cycles.flat());
  const cyclic = cycleEdges(cycles);
  const { at, order, width, height } = layout(graph.nodes, levels, inCycle);
  const svg = s("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": "relationship graph" });
  const marker = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
  svg.append(s("defs"), s("g"));
  svg.firstChild.append(marker);
  order.forEach((col, x) => svg.append(s("text", { x: PAD + x * COLUMN, y: PAD, class: "level" },
    col === -1 ? "in a cycle" : "level " + col)));
  for (const e of graph.edges) {
    const a = at.get(e.from), b = at.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
    const bend = x2 <= x1 ? 60 : (x2 - x1) / 2;
    const cls = "edge " + e.type + (cyclic.has(e.from + " " + e.to) ? " cycle" : "");
    const path = s("path", { d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
      class: cls, "marker-end": "url(#arrow)", "data-type": e.type });
    path.append(s("title", {}, `${e.type} (${e.strength})`));
    svg.append(path);
  }
  for (const n of graph.nodes) {
    const p = at.get(n.id);
    const g = s("g", { class: "node" + (inCycle.has(n.id) ? " cycle" : ""), "data-id": n.id,
      transform: `translate(${p.x},${p.y})`, tabindex: 0 });
    g.append(s("rect", { width: NODE_W, height: NODE_H, rx: 6 }),
      s("text", { x: 10, y: 23 }, (n.label || n.id).slice(0, 26)), s("title", {}, n.label || n.id));
    g.addEventListener("click", () => go(episodeRoute(n.id)));
    svg.append(g);
  }
  return svg;
}

export async function graphView(main, params) {
  const context = params.get("context") || "";
  const type = params.get("type") === "causes" ? "causes" : "follows";
  const ids = context ? await contextEpisodes(context) : null;
  const scope = ids ? { episode_ids: ids } : {};
  const graph = ids && !ids.length ? { nodes: [], edges: [], truncated: false }
    : await tool("get_dependency_graph", { ...scope, format: "json", max_nodes: MAX_NODES });
  const nodeIds = graph.nodes.map((n) => n.id);
  const order = nodeIds.length
    ? await tool("get_topological_order", { episode_ids: nodeIds, relationship_type: type })
    : { ordered_episodes: [], cycles: [] };
  const levels = new Map(order.ordered_episodes.map((o) => [o.episode_id, o.level]));
  const label = new Map(graph.nodes.map((n) => [n.id, n.label || n.id]));
  const contextInput = h("input", { name: "context", value: context, placeholder: "project" });
  const typeInput = h("select", { name: "type" }, ["follows", "causes"].map((t) =>
    h("option", { value: t, selected: t === type }, t)));
  const form = h("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    go("/graph", { context: contextInput.value.trim(), type: typeInput.value });
  } }, field("Context", contextInput), field("Levels by", typeInput), h("button", {}, "Draw"));
  replace(main, h("h1", {}, "Graph"), form,
    h("p", { class: "muted" }, `${graph.nodes.length} episodes, ${graph.edges.length} links` +
      (graph.truncated ? ` (the first ${MAX_NODES})` : "") + `; levels by ${type} links`),
    graph.nodes.length ? h("div", { class: "canvas" }, draw(graph, levels, order.cycles))
      : h("p", { class: "muted" }, "No relationships here yet."),
    h("p", { class: "legend" }, TYPES.map((t) => h("span", { class: "key " + t }, t))),
    order.cycles.length ? [h("h2", {}, "Cycles"), table(["cycle"], order.cycles.map((c) =>
      [c.map((id) => label.get(id) || id).join(" → ") + " → …"]))] : null);
}
