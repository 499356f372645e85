"""Pure graph algorithms over in-memory lists of :class:`~memlake.graph.model.Edge`.

Semantics shared by every function here:

* An edge ``from_id -> to_id`` orders ``from_id`` before ``to_id`` (``to_id`` depends on
  ``from_id``), whatever its type. No function filters by type unless it takes ``types``:
  callers pass the edges they care about (e.g. only :data:`ACYCLIC_TYPES` for cycle checks).
* ``direction`` is ``"outgoing"`` (follow ``from -> to``), ``"incoming"`` (follow
  ``to -> from``) or ``"both"`` (either way).
* Adjacency is built once per call as dicts of lists; traversals are iterative, so graphs of
  100,000+ edges neither recurse nor go quadratic. Running times are O(V + E), except
  :func:`find_related` (O(max_depth * E) relaxations, each copying a path of <= max_depth
  ids) and the cycle report of :func:`topological_order` (sorts targets inside cycles).
* Results are deterministic: ties are broken by ids, never by hash order.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable

from memlake.graph.model import DIRECTIONS, Direction, Edge, OrderedNode, Related, TopologicalOrder

MAX_RELATED_DEPTH = 5

# A find_related label: (-product, hops, edge-id path). Smaller is better.
_Label = tuple[float, int, tuple[str, ...]]
#: What find_related_from follows out of a node: (neighbour, edge id, edge strength).
Neighbours = Callable[[str], Iterable[tuple[str, str, float]]]


def check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def check_depth_and_strength(max_depth: int, min_strength: float) -> None:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        raise ValueError(f"max_depth must be an int, got {max_depth!r}")
    if not 1 <= max_depth <= MAX_RELATED_DEPTH:
        raise ValueError(f"max_depth must be in 1..{MAX_RELATED_DEPTH}, got {max_depth}")
    if not 0.0 < min_strength <= 1.0:
        raise ValueError(f"min_strength must be in (0, 1], got {min_strength!r}")


def _neighbours(edges: Iterable[Edge], direction: Direction) -> dict[str, list[str]]:
    adjacency: dict[str, list[str]] = defaultdict(list)
    for edge in edges:
        if direction != "incoming":
            adjacency[edge.from_id].append(edge.to_id)
        if direction != "outgoing":
            adjacency[edge.to_id].append(edge.from_id)
    return adjacency


def reachable(edges: Iterable[Edge], start: str, direction: Direction = "outgoing") -> set[str]:
    """Ids reachable from ``start`` by one or more edges; ``start`` itself is never included.

    ``"outgoing"`` gives what depends on ``start`` (like ``networkx.descendants``),
    ``"incoming"`` what ``start`` depends on (``networkx.ancestors``).
    """
    check_direction(direction)
    adjacency = _neighbours(edges, direction)
    seen = {start}
    stack = [start]
    while stack:
        for neighbour in adjacency.get(stack.pop(), ()):
            if neighbour not in seen:
                seen.add(neighbour)
                stack.append(neighbour)
    seen.discard(start)
    return seen


def shortest_path(
    successors: Callable[[str], Iterable[str]], source: str, target: str
) -> list[str] | None:
    """A shortest directed path ``[source, ..., target]`` (BFS over ``successors(node)``, ties
    broken by the order ``successors`` yields), or ``None``; ``[source]`` when they are equal.

    Takes a neighbour function so callers with a prebuilt adjacency index (the relationship
    store) search without rebuilding it per call.
    """
    if source == target:
        return [source]
    parent: dict[str, str] = {}
    seen = {source}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt in successors(node):
            if nxt in seen:
                continue
            seen.add(nxt)
            parent[nxt] = node
            if nxt == target:
                back = [target]
                while back[-1] != source:
                    back.append(parent[back[-1]])
                return back[::-1]
            queue.append(nxt)
    return None


def find_related(
    edges: Iterable[Edge],
    start: str,
    *,
    max_depth: int = 2,
    types: Collection[str] | None = None,
    min_strength: float = 0.5,
    direction: Direction = "both",
) -> list[Related]:
    """Episodes within ``max_depth`` edges of ``start``, each with its strongest path.

    A path's strength is the product of its edge strengths. For every node other than
    ``start`` the best simple path of at most ``max_depth`` edges with strength
    ``>= min_strength`` is reported: highest strength, then fewest hops, then the
    lexicographically smallest tuple of edge ids. Results are sorted by strength
    (descending), distance, then episode id. ``types`` keeps only edges of those types.

    Raises ValueError unless ``1 <= max_depth <= 5``, ``0 < min_strength <= 1`` and
    ``direction`` is valid.
    """
    check_depth_and_strength(max_depth, min_strength)
    check_direction(direction)
    wanted = None if types is None else frozenset((types,) if isinstance(types, str) else types)

    adjacency: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for edge in edges:
        if (wanted is not None and edge.type not in wanted) or edge.strength < min_strength:
            continue  # every path through this edge is weaker than min_strength
        if direction != "incoming":
            adjacency[edge.from_id].append((edge.to_id, edge.id, edge.strength))
        if direction != "outgoing":
            adjacency[edge.to_id].append((edge.from_id, edge.id, edge.strength))

    return find_related_from(
        lambda node: adjacency.get(node, ()), start, max_depth=max_depth, min_strength=min_strength
    )


def find_related_from(
    neighbours: Neighbours, start: str, *, max_depth: int = 2, min_strength: float = 0.5
) -> list[Related]:
    """:func:`find_related` over a neighbour function instead of an edge list.

    ``neighbours(node)`` yields ``(neighbour, edge_id, strength)`` for the edges to follow out
    of ``node`` (already filtered by type and direction). Same result order and guarantees.
    """
    check_depth_and_strength(max_depth, min_strength)
    # Level-wise (Bellman-Ford style) relaxation keeping ONE best label per node. After round
    # k, best[v] is the best *walk* of <= k edges to v under the order (-product, hops, path).
    # That is exact for *simple* paths because strengths are in [0, 1]:
    # * A walk that repeats a node contains a cycle whose product is <= 1; cutting the cycle
    #   out never lowers the product (multiplying by s <= 1 cannot raise even a rounded float)
    #   and strictly lowers the hop count, so the best walk is always a simple path.
    # * Prefix optimality: if the best <= k-edge path to v ends with edge (u, v, s), swapping
    #   its prefix for u's best <= (k-1)-edge label cannot make it worse: a higher product stays
    #   higher because s > 0 (min_strength > 0, so a zero-strength edge never extends a label),
    #   hop counts both grow by one, and appending the same edge id keeps the tuple order.
    # Each round extends the labels that changed in the previous round, using their values from
    # that round (Jacobi style), so a label never holds more than k edges after round k.
    # Float caveat: two products that differ only by rounding can round to the same value after
    # multiplying by s; the strengths and the node set stay exact, but such a near-tie may be
    # broken by hops/ids differently than exact arithmetic would.
    best: dict[str, _Label] = {start: (-1.0, 0, ())}
    frontier: dict[str, _Label] = {start: best[start]}
    for _ in range(max_depth):
        changed: dict[str, _Label] = {}
        for node, (neg_product, hops, path) in frontier.items():
            reach, next_hops = -neg_product, hops + 1
            for nxt, edge_id, strength in neighbours(node):
                product = reach * strength
                if product < min_strength:
                    continue
                current = best.get(nxt)
                if current is not None and (
                    -product > current[0] or (-product == current[0] and next_hops > current[1])
                ):
                    continue  # worse on strength or hops: skip building the path
                label = (-product, next_hops, (*path, edge_id))
                if current is None or label < current:
                    best[nxt] = changed[nxt] = label
        if not changed:
            break
        frontier = changed

    del best[start]
    ranked = sorted((label[0], label[1], node, label[2]) for node, label in best.items())
    return [
        Related(episode_id=node, distance=hops, path=path, total_strength=-neg_product)
        for neg_product, hops, node, path in ranked
    ]


def topological_order(nodes: Iterable[str], edges: Iterable[Edge]) -> TopologicalOrder:
    """Kahn's algorithm over ``nodes`` plus every edge endpoint.

    ``level`` is the length of the longest path from any source (0 without dependencies);
    ``dependencies`` are the sorted, distinct ``from_id`` of the node's incoming edges.
    ``ordered`` is sorted by (level, id), which is a valid topological order. If the graph
    has cycles, ``ordered`` holds only the nodes Kahn could place and ``cycles`` gives one
    concrete cycle ``[a, ..., a]`` per non-trivial strongly connected component (a shortest
    cycle through the component's smallest id), sorted by first id.
    """
    successors: dict[str, list[str]] = {}
    dependencies: dict[str, set[str]] = {}
    for node in nodes:
        successors.setdefault(node, [])
        dependencies.setdefault(node, set())
    for edge in edges:
        successors.setdefault(edge.from_id, []).append(edge.to_id)
        successors.setdefault(edge.to_id, [])
        dependencies.setdefault(edge.from_id, set())
        dependencies.setdefault(edge.to_id, set()).add(edge.from_id)

    in_degree = {node: 0 for node in successors}
    for targets in successors.values():
        for target in targets:
            in_degree[target] += 1
    level = {node: 0 for node, degree in in_degree.items() if degree == 0}
    queue = deque(level)
    while queue:
        node = queue.popleft()
        for target in successors[node]:
            level[target] = max(level.get(target, 0), level[node] + 1)
            in_degree[target] -= 1
            if in_degree[target] == 0:
                queue.append(target)

    ordered = [
        OrderedNode(node, level[node], tuple(sorted(dependencies[node])))
        for node in sorted(level, key=lambda n: (level[n], n))
        if in_degree[node] == 0
    ]
    if len(ordered) == len(successors):
        return TopologicalOrder(ordered=ordered, has_cycles=False, cycles=[])
    stuck = {node for node, degree in in_degree.items() if degree > 0}
    cycles = [
        _cycle_in(component, successors) for component in _cyclic_components(stuck, successors)
    ]
    cycles.sort()
    return TopologicalOrder(ordered=ordered, has_cycles=True, cycles=cycles)


def _cyclic_components(allowed: set[str], successors: dict[str, list[str]]) -> list[set[str]]:
    """Strongly connected components (iterative Tarjan) within ``allowed`` that hold a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(allowed):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors[root]))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in allowed:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(successors[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in successors[node]:
                        found.append(component)
    return found


def _cycle_in(component: set[str], successors: dict[str, list[str]]) -> list[str]:
    """A shortest cycle through the smallest id of a cyclic component (BFS, sorted targets)."""
    root = min(component)
    parent: dict[str, str] = {}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for target in sorted(set(successors[node])):
            if target == root:
                path = [node]
                while path[-1] != root:
                    path.append(parent[path[-1]])
                return [*reversed(path), root]
            if target in component and target not in parent:
                parent[target] = node
                queue.append(target)
    raise AssertionError(f"component of {root!r} has no cycle")  # pragma: no cover
