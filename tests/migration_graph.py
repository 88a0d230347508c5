"""Where a data migration's test moves the database: to the migration before it, to it, and
back to the end."""

from __future__ import annotations

from typing import NamedTuple

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Key = tuple[str, str]


class Around(NamedTuple):
    target: Key  # the migration under test
    before: Key  # its parent in planner_ui
    leaves: list[Key]  # where every app's migrations end, to go back to


def around(suffix: str) -> Around:
    """The planner_ui migration whose name ends with `suffix`, found by name so that the test
    survives the renumbering of migrations at merge time, with its parent and the leaves."""
    graph = MigrationExecutor(connection).loader.graph
    target = next(key for key in graph.nodes if key[0] == "planner_ui" and key[1].endswith(suffix))
    before = next(p.key for p in graph.node_map[target].parents if p.key[0] == "planner_ui")
    return Around(target, before, graph.leaf_nodes())
