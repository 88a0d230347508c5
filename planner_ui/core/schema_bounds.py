"""Bounds on every JSON schema sent to a model. A server that enforces a schema with a
grammar (llama.cpp does) lets a small model run on inside an unbounded string or array until
it hits max_tokens; with a bound, the grammar closes it."""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_MAX_STRING = 4000
DEFAULT_MAX_ITEMS = 100
# Where a schema nests other schemas.
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONES = ("items", "additionalProperties", "not", "contains")


def bounded(
    schema: dict[str, Any],
    *,
    max_string: int = DEFAULT_MAX_STRING,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> dict[str, Any]:
    """A copy of `schema` in which every string has a maxLength and every array a maxItems
    (the ones it has stay)."""
    result = copy.deepcopy(schema)
    _bound(result, max_string, max_items)
    return result


def _bound(node: Any, max_string: int, max_items: int) -> None:
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if "string" in kinds and not {"enum", "const", "maxLength"} & set(node):
        node["maxLength"] = max_string
    if "array" in kinds and "maxItems" not in node:
        node["maxItems"] = max_items
    for key in _SUBSCHEMA_MAPS:
        for child in (node.get(key) or {}).values():
            _bound(child, max_string, max_items)
    for key in _SUBSCHEMA_LISTS:
        for child in node.get(key) or []:
            _bound(child, max_string, max_items)
    for key in _SUBSCHEMA_ONES:
        _bound(node.get(key), max_string, max_items)


def unbounded_places(schema: Any, path: str = "$") -> list[str]:
    """Where a schema lets a string or an array run on: [] when it is bounded throughout."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return found
    kinds = schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if "string" in kinds and not {"enum", "const", "maxLength"} & set(schema):
        found.append(path)
    if "array" in kinds and "maxItems" not in schema:
        found.append(path)
    for key in _SUBSCHEMA_MAPS:
        for name, child in (schema.get(key) or {}).items():
            found += unbounded_places(child, f"{path}.{key}.{name}")
    for key in _SUBSCHEMA_LISTS:
        for n, child in enumerate(schema.get(key) or []):
            found += unbounded_places(child, f"{path}.{key}[{n}]")
    for key in _SUBSCHEMA_ONES:
        found += unbounded_places(schema.get(key), f"{path}.{key}")
    return found
