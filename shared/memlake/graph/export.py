"""Export an episode graph as JSON, Graphviz DOT or a Mermaid flowchart.

Titles are untrusted (written by agents), so every exporter treats them as data:

* :func:`normalize_label` first turns every kind of line break (``\\r\\n``, ``\\r``, U+2028, ...)
  into ``\\n``, other control characters into a space and lone surrogates into U+FFFD.
* DOT: ids and labels are always double-quoted; ``\\``, ``"`` and newlines are escaped as
  ``\\\\``, ``\\"`` and ``\\n``, so nothing (``"]; ...``, ``}``, ``<b>``, ``->``) can leave the
  string, and Graphviz escapes like ``\\N`` show literally.
* Mermaid: nodes get synthetic ids ``n0, n1, ...`` in order of first appearance (the given
  nodes, then unknown edge endpoints), labels use the quoted form ``n0["..."]`` and every
  character outside a small safe set is written as a Mermaid entity code (``#quot;``,
  ``#35;``, ``#91;``, ...), newlines as ``<br/>``. That also disarms ``%%`` comments and
  directives, ``$$`` math, backtick markdown strings, ``:::`` classes and ``<...>`` HTML.
  Mermaid rejects empty quoted strings, so an empty label is written as ``#32;`` (a space).
  Mermaid's default ``maxEdges`` is 500 and ``maxTextSize`` 50,000: bigger diagrams export
  fine but a default Mermaid refuses to render them.

Every exporter covers the given nodes (first occurrence of an id wins) plus any edge endpoint
missing from them, labelled with its id, so the output never references an unknown node.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memlake.graph.model import Edge

_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x09\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Kept verbatim in Mermaid labels; everything else in ASCII becomes an entity code.
_MERMAID_SAFE = frozenset(string.ascii_letters + string.digits + " .,-_/?!@+=*'")
# Characters Mermaid itself uses as entity placeholders ("ﬂ°°35¶ß"); encoded so a title
# cannot forge one.
_MERMAID_RESERVED = frozenset("\ufb02\u00b6")


@dataclass(frozen=True, slots=True)
class GraphNode:
    """An episode as drawn: its id, a display label (usually the title) and creation time."""

    id: str
    label: str
    created_at: str | None = None


def normalize_label(text: str) -> str:
    """Line breaks -> ``\\n``; other control characters -> space; lone surrogates -> U+FFFD."""
    text = _LINE_BREAK.sub("\n", text)
    text = _CONTROL.sub(" ", text)
    return _SURROGATE.sub("\ufffd", text)


def _all_nodes(nodes: Iterable[GraphNode], edges: Sequence[Edge]) -> list[GraphNode]:
    by_id: dict[str, GraphNode] = {}
    for node in nodes:
        by_id.setdefault(node.id, node)
    for edge in edges:
        for endpoint in (edge.from_id, edge.to_id):
            if endpoint not in by_id:
                by_id[endpoint] = GraphNode(id=endpoint, label=endpoint)
    return list(by_id.values())


def to_json(nodes: Iterable[GraphNode], edges: Iterable[Edge]) -> dict[str, Any]:
    """``{"nodes": [{id, label, created_at}], "edges": [{id, from, to, type, strength}],
    "format": "json"}`` with labels kept as given."""
    edge_list = list(edges)
    return {
        "nodes": [
            {"id": node.id, "label": node.label, "created_at": node.created_at}
            for node in _all_nodes(nodes, edge_list)
        ],
        "edges": [
            {
                "id": edge.id,
                "from": edge.from_id,
                "to": edge.to_id,
                "type": edge.type,
                "strength": edge.strength,
            }
            for edge in edge_list
        ],
        "format": "json",
    }


def _dot_quote(text: str) -> str:
    escaped = normalize_label(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def to_dot(nodes: Iterable[GraphNode], edges: Iterable[Edge]) -> str:
    """A ``digraph episodes { ... }`` with one line per node and per edge.

    Edges are labelled ``"<type> (<strength:.2f>)"``, e.g. ``follows (0.80)``.
    """
    edge_list = list(edges)
    lines = ["digraph episodes {", "  node [shape=box];"]
    for node in _all_nodes(nodes, edge_list):
        lines.append(f"  {_dot_quote(node.id)} [label={_dot_quote(node.label)}];")
    for edge in edge_list:
        label = _dot_quote(f"{edge.type} ({edge.strength:.2f})")
        lines.append(f"  {_dot_quote(edge.from_id)} -> {_dot_quote(edge.to_id)} [label={label}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_char(char: str) -> str:
    if char in _MERMAID_SAFE:
        return char
    if char == '"':
        return "#quot;"
    if char.isascii() or char in _MERMAID_RESERVED or not char.isprintable():
        return f"#{ord(char)};"
    return char


def _mermaid_text(text: str) -> str:
    lines = normalize_label(text).split("\n")
    encoded = "<br/>".join("".join(_mermaid_char(char) for char in line) for line in lines)
    return encoded or "#32;"


def to_mermaid(nodes: Iterable[GraphNode], edges: Iterable[Edge]) -> str:
    """A ``flowchart TD`` with nodes ``n0["..."]`` and edges ``n0 -->|"follows 0.80"| n1``."""
    edge_list = list(edges)
    synthetic: dict[str, str] = {}
    lines = ["flowchart TD"]
    for index, node in enumerate(_all_nodes(nodes, edge_list)):
        synthetic[node.id] = f"n{index}"
        lines.append(f'    n{index}["{_mermaid_text(node.label)}"]')
    for edge in edge_list:
        label = _mermaid_text(f"{edge.type} {edge.strength:.2f}")
        lines.append(f'    {synthetic[edge.from_id]} -->|"{label}"| {synthetic[edge.to_id]}')
    return "\n".join(lines) + "\n"
