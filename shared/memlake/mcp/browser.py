"""The memory browser's files at /ui (`memlake serve` only; docs/decisions/2801).

The page is plain HTML, CSS and JavaScript shipped in the package (memlake/mcp/ui/): no build
step, no CDN. It holds no data: its script calls the same /mcp endpoint as any MCP client
(tools/call, with the tab's bearer token when the server has API keys), so every view runs the
tools' own code, auth and audit. The files are public, like /health; what they fetch is not.

Stored content is hostile: the script only ever sets text (textContent, SVG text nodes), and
every answer here carries a Content-Security-Policy that allows no inline script or style and
no other origin, so a `<script>` in an episode is inert twice over.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

UI_PATH = "/ui"
#: the page's files: name -> content type (nothing else under /ui is served)
FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "mcp.js": "text/javascript; charset=utf-8",
    "views.js": "text/javascript; charset=utf-8",
    "graph.js": "text/javascript; charset=utf-8",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-cache",
}


def is_ui_path(path: str) -> bool:
    return path == UI_PATH or path.startswith(UI_PATH + "/")


@cache
def _read(name: str) -> bytes:
    return (resources.files("memlake.mcp") / "ui" / name).read_bytes()


def ui_file(path: str) -> tuple[bytes, dict[str, str]] | None:
    """The bytes and headers of the file at `path` (/ui and /ui/ are the page), or None."""
    name = path[len(UI_PATH) :].lstrip("/") or "index.html"
    if name not in FILES:
        return None
    return _read(name), {"content-type": FILES[name], **HEADERS}
