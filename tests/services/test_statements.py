"""The hot path's statements, pinned: their text (tests/services/statements.sql) and their plans
on the database the tests run on (`make test` runs this on SQLite and again on PostgreSQL).

A change to a statement's text fails here until the pinned file is written again, on purpose:
`AGENTSITE_PIN_STATEMENTS=1 pytest tests/services/test_statements.py`, then read its diff. The
plans are checked for what matters, not pinned whole: every table a statement reads is reached
through an index (PostgreSQL is told not to scan, so a missing index shows as a Seq Scan), and
the run's row is locked before the step's (docs/write-protocol.md, rule 3)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from planner_ui.models import Run, RunEvent, Step
from planner_ui.services import accounting, events, scheduler, steps
from planner_ui.stores import sql

pytestmark = [pytest.mark.database, pytest.mark.django_db]

PINNED = Path(__file__).with_name("statements.sql")

# name: (the statement's text as the module holds it, how to fill it in for a run and step,
# its parameters, the databases it runs on).
Filled = tuple[str, list[Any]]


def _claim(run: Run) -> Filled:
    now = sql.when(timezone.now())
    text = steps._CLAIM.format(
        claimable="status = %s", locked=sql.locking("key share"), clock=sql.clock()
    )
    return text, ["running", now, "w", run.pk, "a", "queued", run.pk, "running"]


def _claim_whole(run: Run) -> Filled:
    now = sql.when(timezone.now())
    payload = RunEvent._meta.get_field("payload").get_db_prep_save({"worker": "w"}, connection)
    return steps._CLAIM_WHOLE.format(claimable="status = %s"), [
        *["running", now, "w", run.pk, "a", "queued", run.pk, "running"],
        *[run.pk, "step.started", payload, now],
    ]


def _finish_counting(run: Run) -> Filled:
    text = steps._FINISH_COUNTING.format(column="output", held=" AND worker = %s", lock="KEY SHARE")
    carry = scheduler.Carry(lambda step_id, events: None, worker="w")
    return text, [
        run.pk,
        *_finish_params(run),
        *scheduler.count_down_params(run.pk, carry, timezone.now()),
    ]


def _finish_params(run: Run) -> list[Any]:
    return ["succeeded", sql.when(timezone.now()), "m", "out", run.pk, "a", "running", "w"]


def _finish(run: Run) -> Filled:
    text = steps._FINISH.format(column="output", held=" AND worker = %s")
    return text, _finish_params(run)


def _finish_locking(run: Run) -> Filled:
    text = steps._FINISH_LOCKING.format(column="output", held=" AND worker = %s", lock="KEY SHARE")
    return text, [run.pk, *_finish_params(run)]


STATEMENTS: dict[str, tuple[str, Callable[[Run], Filled], set[str]]] = {
    "steps._CLAIM": (steps._CLAIM, _claim, {"sqlite"}),
    "steps._CLAIM_WHOLE": (steps._CLAIM_WHOLE, _claim_whole, {"postgresql"}),
    "steps._FINISH_COUNTING": (steps._FINISH_COUNTING, _finish_counting, {"postgresql"}),
    "steps._FINISH": (steps._FINISH, _finish, {"sqlite"}),
    "steps._FINISH_LOCKING": (steps._FINISH_LOCKING, _finish_locking, {"postgresql"}),
    "events._NEXT_SEQS": (events._NEXT_SEQS, lambda run: (events._NEXT_SEQS, [1, run.pk]), set()),
    "accounting._SPENT": (
        accounting._SPENT,
        lambda run: (accounting._SPENT, [run.pk]),
        {"sqlite", "postgresql"},
    ),
    "accounting._ADD_TO_RUN": (
        accounting._ADD_TO_RUN,
        lambda run: (accounting._ADD_TO_RUN, [1, 2, 0, 0, sql.amount(0), run.pk]),
        set(),
    ),
}


def _pinned() -> dict[str, str]:
    pinned: dict[str, str] = {}
    for entry in PINNED.read_text().split("\n-- ")[1:]:
        name, _, text = entry.partition("\n")
        pinned[name] = text.strip()
    return pinned


def _pin() -> None:
    lines = ["-- The hot path's statements as their modules hold them: test_statements.py.\n"]
    lines += [f"\n-- {name}\n{text}\n" for name, (text, _, _) in STATEMENTS.items()]
    PINNED.write_text("".join(lines))


def test_the_statements_are_the_pinned_ones() -> None:
    if os.environ.get("AGENTSITE_PIN_STATEMENTS"):
        _pin()
    pinned = _pinned()
    changed = [name for name, (text, _, _) in STATEMENTS.items() if pinned.get(name) != text]
    assert not changed, (
        f"{changed} changed: if on purpose, pin them again "
        "(AGENTSITE_PIN_STATEMENTS=1 pytest tests/services/test_statements.py) and read the diff"
    )


@pytest.fixture
def run(make_user) -> Run:
    run = Run.objects.create(owner=make_user(), task="t", status="running")
    Step.objects.create(run=run, step_id="a", position=0, title="a", instruction="a")
    Step.objects.create(
        run=run, step_id="b", position=1, title="b", instruction="b", depends_on=["a"]
    )
    return run


def _plan_postgresql(text: str, params: list[Any]) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {text}", params)
        (plan,) = cursor.fetchone()
    return plan if isinstance(plan, str) else json.dumps(plan)


def _plan_sqlite(text: str, params: list[Any]) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {text}", params)
        return "\n".join(row[-1] for row in cursor.fetchall())


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_every_table_a_statement_reads_is_reached_through_an_index(run, name) -> None:
    _, fill, databases = STATEMENTS[name]
    if databases and connection.vendor not in databases:
        pytest.skip(f"{name} runs on {', '.join(sorted(databases))} only")
    text, params = fill(run)
    if connection.vendor == "postgresql":
        plan = _plan_postgresql(text, params)
        assert '"Seq Scan"' not in plan, plan
    else:
        plan = _plan_sqlite(text, params)
        scans = [line for line in plan.splitlines() if line.startswith("SCAN planner_ui")]
        assert not scans, plan


@pytest.mark.skipif("connection.vendor != 'postgresql'")
@pytest.mark.parametrize("fill", [_finish_locking, _finish_counting])
def test_the_finish_locks_the_run_before_it_scans_for_the_step(run, fill) -> None:
    text, params = fill(run)
    plan = json.loads(_plan_postgresql(text, params))[0]["Plan"]
    if fill is _finish_counting:  # the finish is the WITH's `finished`
        (plan,) = [node for node in plan["Plans"] if node.get("Subplan Name") == "CTE finished"]
    # The EXISTS on the locked run is a one-time filter over the scan of the step's row.
    (scan,) = [child for child in plan["Plans"] if child.get("Parent Relationship") == "Outer"]
    assert scan["Node Type"] == "Result" and "One-Time Filter" in scan
    assert scan["Plans"][0]["Relation Name"] == "planner_ui_step"


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_the_finish_reaches_children_and_parents_by_their_ids_not_by_their_whole_run(run):
    # Where the planner knows runs of a thousand steps: scanning the run's steps for the
    # finish's children, or the carried step's parents, would cost each step the whole run.
    for each in (run, Run.objects.create(owner=run.owner, task="t", status="running")):
        Step.objects.bulk_create(
            Step(run=each, step_id=f"s{i}", position=i + 2, title="s", instruction="s")
            for i in range(1000)
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE planner_ui_step")
    text, params = _finish_counting(run)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {text}", params)
        (plan,) = cursor.fetchone()
    scans = list(_scans_of((plan if not isinstance(plan, str) else json.loads(plan))[0]["Plan"]))
    steps = [scan for scan in scans if scan["Relation Name"] == "planner_ui_step"]
    assert len(steps) == 4  # the step, its children, the carried one's parents, the count-down
    conditions = [scan.get("Index Cond", "") for scan in steps]
    assert all("step_id" in cond or cond.startswith("(id =") for cond in conditions), conditions


def _scans_of(node: dict[str, Any]):
    if "Relation Name" in node and node["Node Type"] != "ModifyTable":
        yield node
    for child in node.get("Plans", []):
        yield from _scans_of(child)
