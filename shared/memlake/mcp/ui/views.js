// The views: each reads its route's parameters, calls tools and renders text (dom.js).
import { emphasized, episodeRoute, field, go, h, highlighted, link, problem, replace, table, titleOf,
  when } from "./dom.js";
import { tool } from "./mcp.js";

const PAGE = 25;

function filterForm(params, fields, onApply) {
  const inputs = Object.fromEntries(fields.map(([name, , placeholder]) =>
    [name, h("input", { name, value: params.get(name) || "", placeholder })]));
  return h("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    onApply(Object.fromEntries(Object.entries(inputs).map(([k, el]) => [k, el.value.trim()])));
  } }, fields.map(([name, label]) => field(label, inputs[name])), h("button", {}, "Apply"));
}

function episodeItem(ep, extra = []) {
  return h("li", { class: "episode", "data-id": ep.id },
    h("div", { class: "meta" }, when(ep.started_at || ep.created_at),
      ep.context ? h("span", { class: "badge" }, ep.context) : null,
      ep.platform ? h("span", { class: "badge source" }, ep.platform) : null),
    link(episodeRoute(ep.id), titleOf(ep), { class: "title" }),
    h("p", { class: "preview" }, (ep.content || "").slice(0, 240)), extra);
}

export async function timelineView(main, params) {
  const args = { limit: PAGE };
  for (const [key, arg] of [["context", "context"], ["source", "platform"],
    ["from", "time_start"], ["until", "time_end"]]) {
    if (params.get(key)) args[arg] = params.get(key);
  }
  const list = h("ul", { class: "episodes" });
  const more = h("button", { class: "more", hidden: true }, "Older episodes");
  let cursor = null;
  async function page() {
    const out = await tool("find_episodes", cursor ? { ...args, cursor } : args);
    for (const ep of out.episodes) list.append(episodeItem(ep));
    cursor = out.next_cursor || null;
    more.hidden = !cursor;
    if (!list.children.length) list.append(h("li", { class: "muted" }, "No episodes match."));
  }
  more.addEventListener("click", () => page().catch((err) => main.append(problem(err))));
  await page();
  replace(main, h("h1", {}, "Timeline"),
    filterForm(params, [["context", "Context", "project"], ["source", "Source", "e.g. claude"],
      ["from", "From", "2026-01-01 or 7d"], ["until", "Until", "yesterday"]],
    (values) => go("/", values)), list, more);
}

function breakdown(b) {
  const num = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
  return table(["BM25 rank", "BM25", "vector rank", "vector", "fused", "rerank", "recency", "score"],
    [[b.bm25_rank ?? "–", num(b.bm25_score), b.vector_rank ?? "–", num(b.vector_score),
      num(b.fused), num(b.rerank), num(b.recency), num(b.score)]]);
}

export async function searchView(main, params) {
  const q = params.get("q") || "";
  const results = h("ol", { class: "hits" });
  if (q) {
    const args = { query: q, limit: 10, content: "full" };
    if (params.get("context")) args.context = params.get("context");
    const out = await tool("search_episodes", args);
    for (const hit of out.episodes) {
      const p = hit.passage;
      const shown = hit.content && !hit.truncated
        ? highlighted(hit.content, p.start, p.end, q)
        : h("p", { class: "passage" }, h("mark", {}, emphasized(p.text || "", q)));
      results.append(episodeItem({ ...hit, title: titleOf(hit), content: "" },
        [h("div", { class: "score" }, "score " + hit.score.toFixed(3)), shown, breakdown(hit.breakdown)]));
    }
    if (!out.episodes.length) results.append(h("li", { class: "muted" }, "Nothing matched."));
  }
  const form = filterForm(params, [["q", "Search", "what are you looking for?"],
    ["context", "Context", "project"]], (values) => go("/search", values));
  replace(main, h("h1", {}, "Search"), form, results);
  form.querySelector("input").focus();
}

function relationshipRows(id, rels) {
  return rels.map((r) => {
    const outgoing = r.from_episode_id === id;
    const other = outgoing ? r.to_episode_id : r.from_episode_id;
    return [outgoing ? "→" : "←", r.relationship_type, r.strength.toFixed(2),
      link(episodeRoute(other), other)];
  });
}

export async function episodeView(main, params, id) {
  const [ep, history, rels] = await Promise.all([
    tool("get_episode", { id, include_entities: true }),
    tool("get_episode_history", { id, limit: 20 }),
    tool("get_episode_relationships", { episode_id: id }),
  ]);
  const remove = h("button", { class: "danger", onclick: async () => {
    if (!confirm(`Delete the episode "${titleOf(ep)}"? This cannot be undone.`)) return;
    const out = await tool("delete_episode", { id });
    go("/", { deleted: out.deleted ? id : "" });
  } }, "Delete episode");
  const facts = [["id", ep.id], ["context", ep.context], ["created", when(ep.created_at)],
    ["started", when(ep.started_at)], ["ended", when(ep.ended_at)], ["source", ep.platform],
    ["tags", (ep.tags || []).join(", ")], ["revision", ep.revision]].filter(([, v]) => v);
  replace(main, h("h1", {}, titleOf(ep)),
    h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("pre", { class: "content" }, ep.content),
    h("h2", {}, "Metadata"), h("pre", {}, JSON.stringify(ep.metadata || {}, null, 2)),
    h("h2", {}, "Concepts"),
    h("ul", {}, (ep.entities || []).map((c) => h("li", {}, link("/concept/" +
      encodeURIComponent(c.id), c.name || c.id)))),
    h("h2", {}, `Relationships (${rels.total})`),
    table(["", "type", "strength", "episode"], relationshipRows(id, rels.relationships)),
    h("h2", {}, "Versions"),
    table(["version", "revision", "updated", "content"], history.revisions.map((r) =>
      [r.version, r.episode.revision, when(r.episode.updated_at || r.episode.created_at),
        (r.episode.content || "").slice(0, 120)])),
    h("p", {}, remove));
}

export async function threadsView(main, params) {
  const args = { limit: 50 };
  if (params.get("context")) args.context = params.get("context");
  const out = await tool("get_pending_threads", args);
  replace(main, h("h1", {}, "Threads awaiting processing"),
    table(["thread", "status", "context", "messages", "created"], out.threads.map((t) =>
      [link("/thread/" + encodeURIComponent(t.id), t.title || t.id), t.processing_status,
        t.context || "", t.message_count, when(t.created_at)])));
}

export async function threadView(main, params, id) {
  const out = await tool("get_thread", { id, limit: 200 });
  const t = out.thread;
  replace(main, h("h1", {}, t.title || t.id),
    h("p", {}, h("span", { class: "badge" }, t.processing_status),
      t.episode_id ? [" → ", link(episodeRoute(t.episode_id), "its episode")] : null),
    h("ol", { class: "messages" }, out.messages.map((m) =>
      h("li", {}, h("strong", {}, m.role), " ", h("span", {}, m.content)))));
}

export async function conceptsView(main, params) {
  const args = { limit: 100 };
  if (params.get("q")) args.query = params.get("q");
  const out = await tool("find_concepts", args);
  replace(main, h("h1", {}, "Concepts"),
    filterForm(params, [["q", "Find", "name"]], (values) => go("/concepts", values)),
    table(["concept", "kind", "episodes"], out.concepts.map((c) =>
      [link("/concept/" + encodeURIComponent(c.id), c.name), c.kind || "", c.episode_count])));
}

export async function conceptView(main, params, id) {
  const out = await tool("get_concept", { id });
  replace(main, h("h1", {}, out.concept.name),
    h("p", { class: "preview" }, out.concept.description || ""),
    h("h2", {}, `Episodes (${out.episode_count})`),
    h("ul", { class: "episodes" }, out.episodes.map((ep) =>
      h("li", {}, link(episodeRoute(ep.episode_id), ep.title || ep.episode_id)))));
}
