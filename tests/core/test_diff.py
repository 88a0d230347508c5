"""plan_diff: steps added, removed and changed, arrows added and removed, and the goal."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.diff import FieldChange, PlanDiff, diff_graph, plan_diff
from planner_ui.core.edits import (
    AddDependency,
    AddStep,
    DeleteStep,
    DependentsPolicy,
    Edit,
    EditRefused,
    RemoveDependency,
    UpdateStep,
    apply_edit,
)
from planner_ui.core.plan import Plan

# One set of plan builders for the core's edit and diff tests.
from .edits.plans import DIAMOND, TOOLS, dag_plans, edit, plan_of, step

NOTHING = PlanDiff(
    added=(), removed=(), changed=(), edges_added=(), edges_removed=(), goal_changed=None
)


def test_a_plan_against_itself_or_an_equal_copy_is_empty() -> None:
    copy = Plan.model_validate(DIAMOND.model_dump())

    assert plan_diff(DIAMOND, DIAMOND) == NOTHING
    assert plan_diff(DIAMOND, copy).is_empty
    assert NOTHING.is_empty


def test_added_steps_come_in_the_new_plans_order_with_their_arrows() -> None:
    new = plan_of(
        step("z", "a"), step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"), step("e")
    )

    diff = plan_diff(DIAMOND, new)

    assert diff.added == ("z", "e")
    assert diff.edges_added == (("a", "z"),)
    assert (diff.removed, diff.changed, diff.edges_removed) == ((), (), ())
    assert not diff.is_empty


def test_removed_steps_come_in_the_old_plans_order_with_their_arrows() -> None:
    new = plan_of(step("a"), step("d"))

    diff = plan_diff(DIAMOND, new)

    assert diff.removed == ("b", "c")
    assert diff.edges_removed == (("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"))
    assert (diff.added, diff.changed, diff.edges_added) == ((), (), ())


def test_changed_fields_are_listed_per_step_in_the_new_plans_order() -> None:
    new = plan_of(
        step("a", role="critic"),
        step("c", "a", title="Sea", instruction="Sail."),
        step("b", "a", tools=["fetch_url", "calculator"]),
        step("d", "b", "c"),
    )

    assert plan_diff(DIAMOND, new).changed == (
        ("a", (FieldChange("role", "writer", "critic"),)),
        (
            "c",
            (FieldChange("title", "C", "Sea"), FieldChange("instruction", "Do c.", "Sail.")),
        ),
        ("b", (FieldChange("tools", [], ["calculator", "fetch_url"]),)),
    )


def test_tools_compare_as_sets_and_are_reported_sorted() -> None:
    old = plan_of(step("a", tools=["write_file", "calculator"]))
    reordered = plan_of(step("a", tools=["calculator", "write_file"]))
    swapped = plan_of(step("a", tools=["fetch_url", "write_file"]))

    assert plan_diff(old, reordered).is_empty
    assert plan_diff(old, swapped).changed == (
        (
            "a",
            (FieldChange("tools", ["calculator", "write_file"], ["fetch_url", "write_file"]),),
        ),
    )


def test_moving_a_step_or_reordering_its_dependencies_is_no_change() -> None:
    moved = plan_of(step("d", "c", "b"), step("c", "a"), step("b", "a"), step("a"))

    assert plan_diff(DIAMOND, moved).is_empty


def test_arrows_added_and_removed_are_sorted_pairs_of_dependency_and_dependent() -> None:
    new = plan_of(step("a"), step("b", "a"), step("c", "b"), step("d", "c", "a"))

    diff = plan_diff(DIAMOND, new)

    assert diff.edges_added == (("a", "d"), ("b", "c"))
    assert diff.edges_removed == (("a", "c"), ("b", "d"))
    assert (diff.added, diff.removed, diff.changed, diff.goal_changed) == ((), (), (), None)


def test_a_new_goal_is_reported_old_then_new() -> None:
    new = plan_of(*(s.model_dump() for s in DIAMOND.steps), goal="A better plan.")

    diff = plan_diff(DIAMOND, new)

    assert diff.goal_changed == ("A test plan.", "A better plan.")
    assert not diff.is_empty
    assert plan_diff(new, DIAMOND).goal_changed == ("A better plan.", "A test plan.")


@pytest.mark.parametrize(
    "field", ["added", "removed", "changed", "edges_added", "edges_removed", "goal_changed"]
)
def test_any_one_difference_makes_a_diff_non_empty(field: str) -> None:
    value: Any = {
        "added": ("x",),
        "removed": ("x",),
        "changed": (("x", (FieldChange("title", "a", "b"),)),),
        "edges_added": (("x", "y"),),
        "edges_removed": (("x", "y"),),
        "goal_changed": ("a", "b"),
    }[field]

    assert not replace(NOTHING, **{field: value}).is_empty


def test_a_diff_after_edits_shows_each_of_them() -> None:
    new = DIAMOND
    for change in (
        UpdateStep("b", title="Bee", tools=("calculator",)),
        DeleteStep("c", DependentsPolicy.DETACH),
        AddStep("e", "E", "Do e.", "critic", depends_on=("d",)),
    ):
        new = apply_edit(new, change, known_tools=TOOLS)

    assert plan_diff(DIAMOND, new) == PlanDiff(
        added=("e",),
        removed=("c",),
        changed=(
            ("b", (FieldChange("title", "B", "Bee"), FieldChange("tools", [], ["calculator"]))),
        ),
        edges_added=(("d", "e"),),
        edges_removed=(("a", "c"), ("c", "d")),
        goal_changed=None,
    )


def test_a_reconnecting_delete_shows_the_new_arrows() -> None:
    new = apply_edit(DIAMOND, DeleteStep("b"), known_tools=TOOLS)

    diff = plan_diff(DIAMOND, new)

    assert diff.removed == ("b",)
    assert diff.edges_added == (("a", "d"),)
    assert diff.edges_removed == (("a", "b"), ("b", "d"))


# --- Property: a diff after one edit shows exactly that edit ------------------------------


def edits_for(plan: Plan) -> st.SearchStrategy[Edit]:
    ids = [s.id for s in plan.steps]
    some_id = st.sampled_from(ids)
    tools = st.none() | st.lists(st.sampled_from(sorted(TOOLS)), unique=True).map(tuple)
    return st.one_of(
        st.builds(
            UpdateStep,
            some_id,
            title=st.none() | st.sampled_from(["New title", "S0"]),
            instruction=st.none() | st.just("Do it differently."),
            role=st.none() | st.sampled_from(["writer", "critic"]),
            tools=tools,
        ),
        st.builds(
            AddStep,
            st.just(""),
            st.sampled_from(["Check", "S1"]),
            st.just("Check it."),
            st.just("critic"),
            depends_on=st.lists(some_id, unique=True, max_size=3).map(tuple),
        ),
        st.builds(DeleteStep, some_id, st.sampled_from(list(DependentsPolicy))),
        st.builds(AddDependency, some_id, some_id),
        st.builds(RemoveDependency, some_id, some_id),
    )


def edges(plan: Plan) -> set[tuple[str, str]]:
    return {(dep, s.id) for s in plan.steps for dep in s.depends_on}


@given(dag_plans(), st.data())
def test_a_diff_after_one_edit_shows_exactly_that_edit(plan: Plan, data: st.DataObject) -> None:
    change = data.draw(edits_for(plan))
    try:
        new = apply_edit(plan, change, known_tools=TOOLS)
    except EditRefused:
        return

    diff = plan_diff(plan, new)
    assert not diff.is_empty
    assert diff.goal_changed is None
    # Whatever the edit, the arrows in the diff are exactly the set difference of the graphs.
    assert set(diff.edges_added) == edges(new) - edges(plan)
    assert set(diff.edges_removed) == edges(plan) - edges(new)

    if isinstance(change, UpdateStep):
        assert (diff.added, diff.removed, diff.edges_added, diff.edges_removed) == ((), (), (), ())
        ((step_id, changes),) = diff.changed
        assert step_id == change.step_id
        for field_change in changes:
            asked = getattr(change, field_change.field)
            assert asked is not None
            assert field_change.new == (sorted(asked) if field_change.field == "tools" else asked)
    elif isinstance(change, AddStep):
        (new_id,) = diff.added
        assert new.steps[-1].id == new_id
        assert (diff.removed, diff.changed, diff.edges_removed) == ((), (), ())
        assert diff.edges_added == tuple(sorted((dep, new_id) for dep in change.depends_on))
    elif isinstance(change, DeleteStep):
        assert change.step_id in diff.removed
        assert (diff.added, diff.changed) == ((), ())
        if change.dependents != DependentsPolicy.CASCADE:
            assert diff.removed == (change.step_id,)
        if change.dependents != DependentsPolicy.RECONNECT:
            assert diff.edges_added == ()
    elif isinstance(change, AddDependency):
        assert diff == PlanDiff(
            added=(),
            removed=(),
            changed=(),
            edges_added=((change.depends_on, change.step_id),),
            edges_removed=(),
            goal_changed=None,
        )
    else:
        assert diff == PlanDiff(
            added=(),
            removed=(),
            changed=(),
            edges_added=(),
            edges_removed=((change.depends_on, change.step_id),),
            goal_changed=None,
        )


def test_the_graph_of_a_diff_keeps_removed_steps_and_marks_every_change() -> None:
    new = edit(DIAMOND, DeleteStep("c", DependentsPolicy.DETACH))
    new = edit(new, AddStep("e", "E", "Do e.", "critic", (), ("d",)))
    new = edit(new, UpdateStep("b", title="Bee"))
    new = edit(new, RemoveDependency("d", "b"))

    graph = diff_graph(DIAMOND, new, conflicted=["b"])

    assert [(n["id"], n["status"]) for n in graph["nodes"]] == [
        ("a", "pending"),
        ("b", "pending"),
        ("d", "pending"),
        ("e", "pending"),
        ("c", "skipped"),
    ]
    assert sorted((e["source"], e["target"]) for e in graph["edges"]) == [
        ("a", "b"),
        ("a", "c"),
        ("d", "e"),
    ]
    # d lost both its inputs and changed no field: its inputs changed, so it did; a step
    # with a conflict is marked as one, whatever else changed in it.
    assert graph["marks"] == {"e": "added", "c": "removed", "d": "changed", "b": "conflict"}
    assert diff_graph(DIAMOND, new)["marks"]["b"] == "changed"
