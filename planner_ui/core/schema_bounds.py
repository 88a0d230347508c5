"""Bounds on every JSON schema sent to a model. A server that enforces a schema with a
grammar (llama.cpp does) lets a small model run on inside an unbounded string or array until
it hits max_tokens; with a bound, the grammar closes it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
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
    for _, node in _subschemas(result):
        missing = _missing_bounds(node)
        if "string" in missing:
            node["maxLength"] = max_string
        if "array" in missing:
            node["maxItems"] = max_items
    return result


def unbounded_places(schema: Any) -> list[str]:
    """Where a schema lets a string or an array run on: [] when it is bounded throughout."""
    return [path for path, node in _subschemas(schema) for _ in _missing_bounds(node)]


def _missing_bounds(node: dict[str, Any]) -> list[str]:
    """The kinds ("string", "array") this schema allows without a bound."""
    kinds = node.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    missing = []
    if "string" in kinds and not {"enum", "const", "maxLength"} & set(node):
        missing.append("string")
    if "array" in kinds and "maxItems" not in node:
        missing.append("array")
    return missing


def _subschemas(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema in `node`, itself first, with where it is."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in _SUBSCHEMA_MAPS:
        for name, child in (node.get(key) or {}).items():
            yield from _subschemas(child, f"{path}.{key}.{name}")
    for key in _SUBSCHEMA_LISTS:
        for n, child in enumerate(node.get(key) or []):
            yield from _subschemas(child, f"{path}.{key}[{n}]")
    for key in _SUBSCHEMA_ONES:
        yield from _subschemas(node.get(key), f"{path}.{key}")
