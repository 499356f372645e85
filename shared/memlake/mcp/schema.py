"""Lean JSON Schemas for tools/list: pydantic's schemas without the noise a model pays for.

pydantic writes a `title` on every property, `anyOf [X, {"type": "null"}]` with
`"default": null` for every optional argument and `$defs` + `$ref` for nested models. None of
it tells a model anything: an optional argument is one that is not in `required`. What stays
is every constraint a model acts on: types, enums, numeric bounds, item counts, patterns,
defaults, `required` and the length of text it writes. Left out of input schemas, because a
model never meets them and the server still enforces them with an error that says what is
wrong: `minLength: 1` (non-empty), `maxLength` of 128 or less (ids, times, names, tags) and
`additionalProperties: false`. See docs/decisions/1101-lean-tool-schemas.md.

Output schemas follow one contract with the results ("absent when empty"): `required` names
only the fields that are always there, so a field that is optional, has a default, or is a
collection (which a compact result leaves out when empty) is not required. Results never carry
a null (docs/decisions/1111), so an optional output field is written as its type alone.
An output schema is for a client checking structuredContent: it keeps types and `required`
but no descriptions (what a model must know about a result is in the tool's description).
"""

from __future__ import annotations

import copy
from typing import Any

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "not", "additionalProperties")
_DEFS = "#/$defs/"
#: a string limit at or under this is left out of input schemas (ids, times, tags, names)
SHORT_TEXT = 128


def lean_input(schema: dict[str, Any], *, null_clears: bool = False) -> dict[str, Any]:
    """An input schema for tools/list: optional arguments as their plain type, or (when an
    explicit null clears a stored field, as in the upserts) as their type or null."""
    return _Leaner(schema, output=False, keep_null=null_clears).run()


def lean_output(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema for tools/list: `required` only for fields always present."""
    return _Leaner(schema, output=True).run()


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "null" and len(node) == 1


def _nullable(node: dict[str, Any]) -> bool:
    return any(_is_null(n) for n in node.get("anyOf", ()))


def _collection(node: dict[str, Any]) -> bool:
    """An array or a map a compact result may leave out when it is empty."""
    kind = node.get("type")
    if kind == "array":
        return not node.get("minItems")
    return kind == "object" and not node.get("properties") and not node.get("minProperties")


def _with_null(node: dict[str, Any]) -> dict[str, Any]:
    """`node` that also admits null, written without anyOf where a type list says it."""
    kind = node.get("type")
    if isinstance(kind, str) and "anyOf" not in node:
        out = {**node, "type": [kind, "null"]}
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    if not node or node.keys() <= {"description"}:  # any value, null included
        return node
    return {"anyOf": [node, {"type": "null"}]}


class _Leaner:
    def __init__(self, schema: dict[str, Any], *, output: bool, keep_null: bool = False) -> None:
        self.schema = copy.deepcopy(schema)
        self.defs: dict[str, Any] = self.schema.pop("$defs", {})
        self.output = output
        self.keep_null = keep_null
        self.expanding: list[str] = []
        self.kept: dict[str, Any] = {}  # recursive definitions, which cannot be inlined

    def run(self) -> dict[str, Any]:
        out = self.node(self.schema)
        if self.kept:
            out["$defs"] = self.kept
        return out

    def node(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str) and node["$ref"].startswith(_DEFS):
            return self.ref(node)
        noise = ("title", "description") if self.output else ("title",)
        node = {k: v for k, v in node.items() if k not in noise}
        if node.get("default", 0) is None or (self.output and "default" in node):
            del node["default"]
        if node.get("additionalProperties") in (True, False):
            del node["additionalProperties"]  # true is the default; false: see the docstring
        if not self.output:
            if node.get("minLength") == 1:
                del node["minLength"]
            if node.get("maxLength", SHORT_TEXT + 1) <= SHORT_TEXT:
                del node["maxLength"]
        if "properties" in node:
            node = self.object(node)
        for key in _SUBSCHEMA_LISTS:
            if isinstance(node.get(key), list):
                node[key] = [self.node(n) for n in node[key]]
        for key in _SUBSCHEMA_ONE:
            if isinstance(node.get(key), dict):
                node[key] = self.node(node[key])
        return node

    def ref(self, node: dict[str, Any]) -> dict[str, Any]:
        """A `$ref` inlined (lean); a recursive definition stays a `$ref`, kept once."""
        name = node["$ref"].removeprefix(_DEFS)
        rest = self.node({k: v for k, v in node.items() if k != "$ref"})
        if name in self.expanding:
            if name not in self.kept:
                self.kept[name] = {}  # placeholder against re-entry
                self.kept[name] = self.node(self.defs[name])
            return {"$ref": node["$ref"], **rest}
        self.expanding.append(name)
        try:
            target = self.node(self.defs[name])
        finally:
            self.expanding.pop()
        return {**target, **rest}

    def peek(self, node: dict[str, Any]) -> dict[str, Any]:
        """The definition a `$ref` names (as pydantic wrote it), else `node`."""
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS):
            return {**self.defs[ref.removeprefix(_DEFS)], **node}
        return node

    def object(self, node: dict[str, Any]) -> dict[str, Any]:
        required = list(node.get("required", ()))
        props: dict[str, Any] = {}
        for name, raw in node["properties"].items():
            prop = self.peek(raw) if isinstance(raw, dict) else raw
            if self.output and name in required and self.may_be_absent(prop):
                required.remove(name)
            props[name] = self.collapse(raw, optional=name not in required)
        node = {**node, "properties": props}
        if required:
            node["required"] = required
        else:
            node.pop("required", None)
        return node

    def may_be_absent(self, prop: dict[str, Any]) -> bool:
        return "default" in prop or _nullable(prop) or _collection(prop)

    def collapse(self, prop: Any, *, optional: bool) -> Any:
        """`anyOf [X, null]` of an optional field -> X, or X-or-null (outputs, upserts)."""
        if not isinstance(prop, dict) or not (optional and _nullable(prop)):
            return self.node(prop)
        rest = [n for n in prop["anyOf"] if not _is_null(n)]
        outer = {k: v for k, v in prop.items() if k != "anyOf"}
        inner = self.node(rest[0]) if len(rest) == 1 else {"anyOf": rest}
        merged = self.node({**inner, **outer})
        return _with_null(merged) if self.keep_null else merged
