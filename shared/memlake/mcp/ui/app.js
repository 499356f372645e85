// The memory browser: a hash router over views that call /mcp's tools, as any MCP client does.
import { h, problem, replace, status } from "./dom.js";
import { NeedToken, TOKEN_KEY } from "./mcp.js";
import { graphView } from "./graph.js";
import { conceptView, conceptsView, episodeView, searchView, threadView, threadsView,
  timelineView } from "./views.js";

function tokenForm(main, why) {
  const input = h("input", { type: "password", name: "token", autocomplete: "off",
    placeholder: "bearer token (MEMLAKE_API_KEYS)", required: true });
  const form = h("form", { class: "token", onsubmit: (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  } }, h("p", {}, why + ". It is kept for this tab only."), input, h("button", {}, "Open"));
  replace(main, h("h1", {}, "Token"), form);
  input.focus();
}

const ROUTES = [
  [/^\/?$/, timelineView],
  [/^\/search$/, searchView],
  [/^\/episode\/(.+)$/, episodeView],
  [/^\/graph$/, graphView],
  [/^\/threads$/, threadsView],
  [/^\/thread\/(.+)$/, threadView],
  [/^\/concepts$/, conceptsView],
  [/^\/concept\/(.+)$/, conceptView],
];

async function route() {
  const main = document.getElementById("main");
  const [path, query] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === "#" + (path || "/"));
  }
  for (const [pattern, view] of ROUTES) {
    const match = pattern.exec(path || "/");
    if (!match) continue;
    status("loading…");
    try {
      await view(main, params, ...match.slice(1).map(decodeURIComponent));
      status("");
    } catch (err) {
      status("");
      if (err instanceof NeedToken) tokenForm(main, err.message);
      else replace(main, problem(err));
    }
    // a view finished, at this many ms after navigation started (tests and tests/bench/ui_bench.py)
    document.body.dataset.rendered = performance.now().toFixed(1);
    return;
  }
  replace(main, problem({ code: "not_found", message: "no such page: " + path }));
}

window.addEventListener("hashchange", route);
route();
