"""memlake.graph.export with hostile titles: JSON, DOT (checked with pydot) and Mermaid
(structure in pure Python; grammar with Mermaid's own parser when Node is available)."""

from __future__ import annotations

import html
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pydot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlake.graph import Edge, GraphNode, normalize_label, to_dot, to_json, to_mermaid

# pydot 4 still calls pyparsing's camelCase API, deprecated since pyparsing 3.3.
pytestmark = pytest.mark.filterwarnings("ignore:'setParseAction' deprecated:DeprecationWarning")

HOSTILE = [
    "plain title",
    'He said "hi"',
    'ends with a quote"',
    '"',
    "back\\slash",
    "trailing backslash\\",
    '\\"; injected [label="pwned"]',
    '"]; n1["pwned"]; n0["',
    "brackets [x] (y) {z} <w> [[a]] ((b)) {{c}} [/d/] >e]",
    "}\ndigraph evil {\n a -> b\n}",
    "semi;colon; a -- b; c -> d; e --> f ==> g -.-> h ~~~ i --o j --x k",
    "line1\nline2\r\nline3\rline4\n",
    "tab\tsep\x00nul\x07bel\x1besc\x7fdel\x85nel\u2028ls\u2029ps\x0bvt\x0cff\x1crs",
    "<b>bold</b> <script>alert(1)</script> <br/> <img src=x onerror=alert(1)>",
    "&amp; &lt; &#35; &quot; &",
    "#quot; #35; #91; #9829; #lt; # ;",
    "\ufb02\u00b0\u00b060\u00b6\u00df \ufb02\u00b0lt\u00b6\u00df",
    "%% comment",
    '%%{init: {"theme": "dark"}}%%',
    "`markdown **bold**`",
    '"`md in quotes`"',
    "$$x^2$$ and $1",
    "end",
    "A:::someclass",
    "click n0 call alert()",
    "style n0 fill:#f00;",
    "classDef x fill:#f00;",
    'pipe | in |"title"|',
    "émoji 🎉 — unicode ✓ 中文 עברית \u202eRTL\u202c \u200bzero width \u00a0nbsp \ufeffbom",
    "\\N \\G \\E \\L \\l \\r \\n \\\\",
    "",
    "   padded   ",
    "\n",
    "-->",
    "--",
    "graph TD",
    "subgraph x",
    "lone \ud800 surrogate",
    "x" * 300,
]


def hostile_graph(
    titles: list[str] = HOSTILE, hostile_ids: bool = False
) -> tuple[list[GraphNode], list[Edge]]:
    ids = [f"id{i}:{t}" if hostile_ids else f"01HX{i:04d}" for i, t in enumerate(titles)]
    nodes = [
        GraphNode(id=i, label=t, created_at="2024-01-01T00:00:00Z")
        for i, t in zip(ids, titles, strict=True)
    ]
    edges = [
        Edge(id=f"e{i}", from_id=ids[i], to_id=ids[i + 1], type="follows", strength=0.8)
        for i in range(len(ids) - 1)
    ]
    edges.append(Edge(id="weird", from_id=ids[0], to_id=ids[-1], type='x"|]; -->', strength=1.0))
    return nodes, edges


# --- JSON ------------------------------------------------------------------------------


def test_to_json_shape_and_unknown_endpoints() -> None:
    nodes = [GraphNode("a", 'A "title"', "2024-01-01T00:00:00Z"), GraphNode("a", "dup", None)]
    edges = [Edge("e1", "a", "ghost", "causes", 0.25)]
    out = to_json(nodes, edges)
    assert out == {
        "nodes": [
            {"id": "a", "label": 'A "title"', "created_at": "2024-01-01T00:00:00Z"},
            {"id": "ghost", "label": "ghost", "created_at": None},
        ],
        "edges": [{"id": "e1", "from": "a", "to": "ghost", "type": "causes", "strength": 0.25}],
        "format": "json",
    }
    json.dumps(out)


# --- DOT -------------------------------------------------------------------------------


def dot_unescape(quoted: str) -> str:
    assert quoted.startswith('"') and quoted.endswith('"'), quoted
    body, out, i = quoted[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("\n" if nxt == "n" else nxt if nxt in '\\"' else "\\" + nxt)
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def parse_dot(dot: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    graphs = pydot.graph_from_dot_data(dot)
    assert graphs is not None and len(graphs) == 1
    graph = graphs[0]
    assert graph.get_name() == "episodes" and graph.get_type() == "digraph"
    labels = {
        dot_unescape(n.get_name()): dot_unescape(str(n.get("label")))
        for n in graph.get_nodes()
        if n.get_name() not in ("node", "edge", "graph")
    }
    edges = [
        (
            dot_unescape(str(e.get_source())),
            dot_unescape(str(e.get_destination())),
            dot_unescape(str(e.get("label"))),
        )
        for e in graph.get_edges()
    ]
    return labels, edges


@pytest.mark.parametrize("hostile_ids", [False, True])
def test_to_dot_hostile_titles_round_trip_through_pydot(hostile_ids: bool) -> None:
    nodes, edges = hostile_graph(hostile_ids=hostile_ids)
    dot = to_dot(nodes, edges)
    lines = dot.splitlines()
    assert lines[0] == "digraph episodes {" and lines[-1] == "}"
    assert len(lines) == 3 + len(nodes) + len(edges)
    assert dot.split("\n")[:-1] == lines  # no stray line separators of any kind
    labels, parsed_edges = parse_dot(dot)
    assert labels == {normalize_label(n.id): normalize_label(n.label) for n in nodes}
    assert len(parsed_edges) == len(edges)
    assert parsed_edges[0] == (
        normalize_label(nodes[0].id),
        normalize_label(nodes[1].id),
        "follows (0.80)",
    )
    assert parsed_edges[-1][2] == 'x"|]; --> (1.00)'


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_to_dot_random_titles_round_trip(titles: list[str]) -> None:
    nodes, edges = hostile_graph(titles)
    labels, parsed_edges = parse_dot(to_dot(nodes, edges))
    assert labels == {n.id: normalize_label(n.label) for n in nodes}
    assert len(parsed_edges) == len(edges)


# --- Mermaid ---------------------------------------------------------------------------

NODE_LINE = re.compile(r'    n(\d+)\["([^"\n]*)"\]')
EDGE_LINE = re.compile(r'    n(\d+) -->\|"([^"\n]*)"\| n(\d+)')
ENTITY = re.compile(r"#(quot|\d+);")
FORBIDDEN_RAW = set("\"'[](){}<>|#;%$`&\\:~^") - set("'")


def mermaid_unescape(label: str) -> str:
    text = label.replace("<br/>", "\n")
    return ENTITY.sub(lambda m: '"' if m.group(1) == "quot" else chr(int(m.group(1))), text)


def check_mermaid_structure(out: str, nodes: list[GraphNode], edges: list[Edge]) -> None:
    lines = out.split("\n")
    assert lines[0] == "flowchart TD" and lines[-1] == ""
    assert lines[:-1] == out.splitlines()  # no U+2028 etc. splitting a line for anyone
    body = lines[1:-1]
    assert len(body) == len(nodes) + len(edges)
    for index, (line, node) in enumerate(zip(body, nodes, strict=False)):
        match = NODE_LINE.fullmatch(line)
        assert match, line
        assert match.group(1) == str(index)
        label = match.group(2)
        bare = ENTITY.sub("", label.replace("<br/>", ""))
        assert not FORBIDDEN_RAW & set(bare), line
        assert all(c.isprintable() and c not in "\ufb02\u00b6" for c in bare), line
        expected = normalize_label(node.label)
        assert mermaid_unescape(label) == (expected or " ")
    for line in body[len(nodes) :]:
        match = EDGE_LINE.fullmatch(line)
        assert match, line
        assert not FORBIDDEN_RAW & set(ENTITY.sub("", match.group(2))), line


def test_to_mermaid_hostile_titles_structure() -> None:
    nodes, edges = hostile_graph(hostile_ids=True)
    out = to_mermaid(nodes, edges)
    check_mermaid_structure(out, nodes, edges)
    assert '    n0 -->|"follows 0.80"| n1' in out.splitlines()
    assert f'    n0 -->|"x#quot;#124;#93;#59; --#62; 1.00"| n{len(nodes) - 1}' in out


def test_to_mermaid_ids_follow_first_appearance() -> None:
    nodes = [GraphNode("b", "B"), GraphNode("a", "A"), GraphNode("b", "again")]
    edges = [Edge("1", "a", "zz", "refines", 0.5), Edge("2", "yy", "b", "causes", 1.0)]
    assert to_mermaid(nodes, edges) == (
        "flowchart TD\n"
        '    n0["B"]\n'
        '    n1["A"]\n'
        '    n2["zz"]\n'
        '    n3["yy"]\n'
        '    n1 -->|"refines 0.50"| n2\n'
        '    n3 -->|"causes 1.00"| n0\n'
    )


@settings(max_examples=200)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_to_mermaid_random_titles_structure(titles: list[str]) -> None:
    nodes, edges = hostile_graph(titles)
    check_mermaid_structure(to_mermaid(nodes, edges), nodes, edges)


NODE_DIR = Path(__file__).resolve().parents[1] / "e2e" / "node"


def run_mermaid_parser(diagrams: list[str]) -> list[dict[str, object]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    if not (NODE_DIR / "node_modules" / "mermaid").is_dir():
        pytest.skip("Mermaid is not installed: run tests/e2e/node/install.sh")
    proc = subprocess.run(
        [node, str(NODE_DIR / "mermaid_parse.mjs")],
        input=json.dumps(diagrams),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, object]] = json.loads(proc.stdout)
    assert len(results) == len(diagrams)
    return results


def mermaid_stored_text(text: str) -> str:
    """Undo what Mermaid's parser stores: entity placeholders and <br>, then HTML entities."""
    text = (
        text.replace("\ufb02\u00b0\u00b0", "&#")
        .replace("\ufb02\u00b0", "&")
        .replace("\u00b6\u00df", ";")
    )
    return html.unescape(re.sub(r"<br\s*/?>", "\n", text))


def random_titles(count: int, seed: int = 20240601) -> list[str]:
    rng = random.Random(seed)
    alphabet = (
        "\"'[](){}<>|#;:%$`&\\/*_~^=+-.,!? \n\r\t"
        "abcXYZ019 éß中🎉\u00a0\u200b\u202e\u2028\ufb02\u00b6\u00b0"
    )
    pieces = [
        "-->",
        "---",
        "==>",
        "end",
        "%%",
        "%%{",
        "}%%",
        "#quot;",
        "#35;",
        "<br/>",
        ":::",
        "$$",
    ]
    titles = []
    for _ in range(count):
        parts = [
            rng.choice(pieces) if rng.random() < 0.2 else rng.choice(alphabet)
            for _ in range(rng.randint(0, 30))
        ]
        titles.append("".join(parts))
    return titles


@pytest.mark.node
def test_to_mermaid_parses_with_mermaid() -> None:
    titles = HOSTILE + random_titles(150)
    graphs = [hostile_graph([title, "next"]) for title in titles]
    graphs.append(hostile_graph(titles, hostile_ids=True))
    diagrams = [to_mermaid(nodes, edges) for nodes, edges in graphs]
    results = run_mermaid_parser(diagrams)
    for (nodes, edges), diagram, result in zip(graphs, diagrams, results, strict=True):
        assert result["ok"], f"{result.get('error')}\n--- diagram ---\n{diagram}"
        assert result["type"] == "flowchart-v2"
        vertices = result["vertices"]
        assert isinstance(vertices, list) and len(vertices) == len(nodes), diagram
        for vertex, node in zip(vertices, nodes, strict=True):
            # Mermaid trims labels; an empty one is exported as the entity #32; (a space).
            want = normalize_label(node.label)
            assert mermaid_stored_text(vertex["text"]) == (want.strip(" ") if want else " ")
        parsed_edges = result["edges"]
        assert isinstance(parsed_edges, list) and len(parsed_edges) == len(edges)
        assert mermaid_stored_text(parsed_edges[0]["text"]) == "follows 0.80"
