// Building the page from data without ever parsing it as HTML: every string becomes a text
// node (stored content is hostile input), every link is built from an encoded id.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function link(route, text, attrs = {}) {
  return h("a", { href: "#" + route, ...attrs }, text);
}

export function episodeRoute(id) {
  return "/episode/" + encodeURIComponent(id);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

export function titleOf(ep) {
  return ep.title || (ep.content || "").split("\n")[0].slice(0, 80) || ep.id;
}

export function field(label, input) {
  return h("label", { class: "field" }, h("span", {}, label), input);
}

export function table(headers, rows) {
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}

// the query's words (3+ letters) in `text` as <strong>, the rest as text
export function emphasized(text, query) {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || [])
    .map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!words.length) return [text];
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(${words.join("|")})`, "giu");
  return text.split(pattern).map((part, i) => (i % 2 ? h("strong", {}, part) : part));
}

// text with the span [start, end) wrapped in <mark> (its query words in <strong>), and
// `around` characters either side
export function highlighted(text, start, end, query = "", around = 240) {
  const from = Math.max(0, start - around), to = Math.min(text.length, end + around);
  return h("p", { class: "passage" },
    from > 0 ? "…" : "", text.slice(from, start),
    h("mark", {}, emphasized(text.slice(start, end), query)),
    text.slice(end, to), to < text.length ? "…" : "");
}

export function problem(err) {
  const box = h("div", { class: "error", role: "alert" }, h("strong", {}, err.code || "error"), ": ",
    err.message || String(err));
  if (err.hint) append(box, [h("p", { class: "hint" }, err.hint)]);
  return box;
}

export function go(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v)).toString();
  location.hash = "#" + path + (query ? "?" + query : "");
}

export function status(text) {
  replace(document.getElementById("status"), text || "");
}
