"""Event types come from the catalogue (planner_ui.core.events.EventType), not string literals:
a misspelt literal fails only when the line runs, a misspelt name fails at import and under
the type checker."""

from __future__ import annotations

import ast
from pathlib import Path

from planner_ui.core.events import EventType

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "planner_ui"
# What appends an event: event_append(run_id, type, ...), events_append(run_id, [(type, ...)]),
# an executor's on_event(type, payload), and a step's EventBuffer: events.append(run_id, type,
# ...), events.append_all and events.hold(run_id, [(type, ...)]).
APPENDERS = {"event_append", "events_append", "on_event", "append", "append_all", "hold"}
# Every module passes the catalogue's names now (issue 33); none may pass a literal again.
KNOWN_LITERALS: dict[str, int] = {}


def _literal_types(path: Path) -> list[str]:
    """The event types `path` passes to an appender as string literals."""
    types = {t.value for t in EventType}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name not in APPENDERS:
            continue
        # The type itself, or the first of each (type, payload, step_id) an argument holds.
        candidates = [*node.args]
        for arg in node.args:
            candidates += [t.elts[0] for t in ast.walk(arg) if isinstance(t, ast.Tuple) and t.elts]
        found += [c.value for c in candidates if isinstance(c, ast.Constant) and c.value in types]
    return found


def test_event_types_are_passed_by_their_catalogue_names() -> None:
    literals = {
        str(path.relative_to(REPO)): len(found)
        for path in sorted(APP.rglob("*.py"))
        if (found := _literal_types(path))
    }
    assert literals == KNOWN_LITERALS
