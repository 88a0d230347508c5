"""A small JSON path, to take a template's values out of a webhook's body as another system
sends it (`$.ticket.title`, `$.items[0].name`, `$['odd key']`): the root `$`, then member names
and array indexes, nothing else. No wildcards, filters or slices: one path names one value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import AgentError
from .templates import PARAMETER_NAME_PATTERN

MAX_PATH_CHARS = 200
MAX_MAPPINGS = 20

# One step after the root: .name, ['name'] or ["name"], [index].
_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z_][A-Za-z0-9_-]*)"""
    r"""|\[(?P<quote>['"])(?P<quoted>(?:(?!(?P=quote)).){1,100})(?P=quote)\]"""
    r"""|\[(?P<index>\d{1,6})\]"""
)
_PARAMETER = re.compile(PARAMETER_NAME_PATTERN)


class JsonPathError(AgentError):
    """A path, or a mapping of parameters to paths, was refused; the message says why."""


def parse_path(path: str) -> tuple[str | int, ...]:
    """The steps of `path` (names and indexes); JsonPathError for anything else."""
    path = path.strip()
    if len(path) > MAX_PATH_CHARS:
        raise JsonPathError(f"a path is at most {MAX_PATH_CHARS} characters")
    if not path.startswith("$"):
        raise JsonPathError(f"{path!r} does not start at the body, '$' (as in $.ticket.title)")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None:
            raise JsonPathError(
                f"{path!r} is not a path this site reads at {path[at:]!r}: use .name, "
                "['name'] or [index]"
            )
        if match.group("index") is not None:
            steps.append(int(match.group("index")))
        else:
            steps.append(match.group("name") or match.group("quoted"))
        at = match.end()
    return tuple(steps)


_MISSING = object()


def path_get(data: Any, steps: tuple[str | int, ...]) -> Any:
    """The value at `steps` in `data`, or `_MISSING` where the body has nothing there."""
    for step in steps:
        if isinstance(step, int) and isinstance(data, list) and step < len(data):
            data = data[step]
        elif isinstance(step, str) and isinstance(data, dict) and step in data:
            data = data[step]
        else:
            return _MISSING
    return data


def parse_mapping(text: str) -> dict[str, str]:
    """A mapping written one `parameter = $.path` per line (blank lines skipped), checked;
    JsonPathError names each bad line."""
    mapping: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sign, path = line.partition("=")
        name, path = name.strip(), path.strip()
        if not sign or not _PARAMETER.match(name):
            problems.append(f"line {number}: write it as parameter = $.path")
            continue
        try:
            parse_path(path)
        except JsonPathError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if name in mapping:
            problems.append(f"line {number}: {name} is mapped twice")
        mapping[name] = path
    if len(mapping) > MAX_MAPPINGS:
        problems.append(f"at most {MAX_MAPPINGS} parameters are mapped")
    if problems:
        raise JsonPathError("; ".join(problems))
    return mapping


def mapping_text(mapping: Mapping[str, str]) -> str:
    return "\n".join(f"{name} = {path}" for name, path in mapping.items())


def values_from_body(body: Any, mapping: Mapping[str, str]) -> dict[str, Any]:
    """The parameter values a body gives through `mapping`: a parameter whose path finds
    nothing is left out (its default applies, or the fill says it is required)."""
    values: dict[str, Any] = {}
    for name, path in mapping.items():
        found = path_get(body, parse_path(path))
        if found is not _MISSING:
            values[name] = found
    return values
