"""plan_merge: a person's edits and the planner's revision, merged three ways."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.edits import (
    AddDependency,
    AddStep,
    DeleteStep,
    DependentsPolicy,
    RemoveDependency,
    UpdateStep,
)
from planner_ui.core.merge import MINE, THEIRS, Conflict, MergeError, merge_preview, plan_merge
from planner_ui.core.plan import Plan

from .edits.plans import CHAIN, DIAMOND, dag_plans, edit, plan_of, step


def deps(plan: Plan) -> dict[str, list[str]]:
    return {s.id: sorted(s.depends_on) for s in plan.steps}


def fields(plan: Plan, step_id: str) -> dict[str, Any]:
    return plan.step(step_id).model_dump(exclude={"id", "depends_on"})


def merged(base: Plan, ours: Plan, theirs: Plan, **choices: str) -> Plan:
    return plan_merge(base, ours, theirs).plan(choices)


def test_nothing_changed_on_either_side_is_the_base() -> None:
    assert merged(DIAMOND, DIAMOND, DIAMOND) == DIAMOND


def test_one_side_alone_is_taken_whole() -> None:
    revised = edit(DIAMOND, AddStep("e", "E", "Do e.", "critic", (), ("d",)))
    assert merged(DIAMOND, DIAMOND, revised) == revised
    assert merged(DIAMOND, revised, DIAMOND) == revised


def test_a_rename_and_an_added_step_survive_a_revision_that_regenerated_the_plan() -> None:
    ours = edit(DIAMOND, UpdateStep("b", title="Look it up"))
    ours = edit(ours, AddStep("notes", "Take notes", "Note it.", "writer", (), ("b",)))
    # The planner's revision knows nothing of them: a new step and a reworded one.
    theirs = edit(DIAMOND, AddStep("e", "E", "Do e.", "critic", (), ("d",)))
    theirs = edit(theirs, UpdateStep("c", instruction="Do c, carefully."))

    result = merged(DIAMOND, ours, theirs)

    assert [s.id for s in result.steps] == ["a", "b", "c", "d", "e", "notes"]
    assert result.step("b").title == "Look it up"
    assert result.step("notes").depends_on == ["b"]
    assert result.step("c").instruction == "Do c, carefully."
    assert result.step("e").depends_on == ["d"]


def test_a_removed_edge_stays_removed_while_the_planner_rewires_the_step() -> None:
    ours = edit(DIAMOND, RemoveDependency("d", "c"))
    theirs = edit(DIAMOND, AddStep("e", "E", "Do e.", "critic", (), ("a",)))
    theirs = edit(theirs, AddDependency("d", "e"))

    assert deps(merged(DIAMOND, ours, theirs))["d"] == ["b", "e"]


def test_an_edge_either_side_removed_is_gone_and_one_either_added_is_kept() -> None:
    ours = edit(DIAMOND, RemoveDependency("d", "b"))
    theirs = edit(edit(DIAMOND, RemoveDependency("d", "c")), AddDependency("c", "b"))

    assert deps(merged(DIAMOND, ours, theirs)) == {
        "a": [],
        "b": ["a"],
        "c": ["a", "b"],
        "d": [],
    }


def test_both_sides_making_the_same_change_is_no_conflict() -> None:
    same = edit(DIAMOND, UpdateStep("b", title="Same", tools=("calculator",)))
    merge = plan_merge(DIAMOND, same, same)
    assert merge.conflicts == ()
    assert merge.plan({}) == same


def test_tools_in_another_order_are_the_same_tools() -> None:
    ours = edit(DIAMOND, UpdateStep("b", tools=("calculator", "fetch_url")))
    theirs = edit(DIAMOND, UpdateStep("b", tools=("fetch_url", "calculator")))
    assert plan_merge(DIAMOND, ours, theirs).conflicts == ()


def test_different_fields_of_one_step_merge_without_conflict() -> None:
    ours = edit(DIAMOND, UpdateStep("b", title="Mine"))
    theirs = edit(DIAMOND, UpdateStep("b", instruction="Theirs.", role="critic"))

    result = merged(DIAMOND, ours, theirs)

    assert fields(result, "b") == {
        "title": "Mine",
        "instruction": "Theirs.",
        "role": "critic",
        "tools": [],
    }


def test_one_field_changed_differently_is_a_conflict_each_choice_decides() -> None:
    ours = edit(DIAMOND, UpdateStep("b", title="Mine", tools=("calculator",)))
    theirs = edit(DIAMOND, UpdateStep("b", title="Theirs", instruction="Theirs."))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert merge.conflicts == (
        Conflict(
            "b:title",
            "b",
            "title",
            "you and the planner both changed the title of step 'b'",
            "Mine",
            "Theirs",
        ),
    )
    mine, planners = merge.plan({"b:title": MINE}), merge.plan({"b:title": THEIRS})
    # The fields only one side changed are merged whichever title is chosen.
    assert fields(mine, "b") == {
        "title": "Mine",
        "instruction": "Theirs.",
        "role": "writer",
        "tools": ["calculator"],
    }
    assert fields(planners, "b")["title"] == "Theirs"
    assert fields(planners, "b")["tools"] == ["calculator"]


def test_an_undecided_conflict_is_refused_by_name() -> None:
    ours = edit(DIAMOND, UpdateStep("b", title="Mine"))
    theirs = edit(DIAMOND, UpdateStep("b", title="Theirs"))
    merge = plan_merge(DIAMOND, ours, theirs)

    for choices in ({}, {"b:title": "both"}, {"b": MINE}):
        with pytest.raises(MergeError) as refused:
            merge.plan(choices)
        assert refused.value.errors == [
            "choose “keep mine” or “take the planner's” for: you and the planner both "
            "changed the title of step 'b'"
        ]


def test_the_preview_shows_the_persons_side_of_each_undecided_conflict() -> None:
    ours = edit(DIAMOND, UpdateStep("b", title="Mine"))
    theirs = edit(DIAMOND, UpdateStep("b", title="Theirs"))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert merge_preview(merge).step("b").title == "Mine"
    assert merge_preview(merge, {"b:title": THEIRS}).step("b").title == "Theirs"


def test_the_goal_merges_like_a_field() -> None:
    ours = Plan(goal="My goal", steps=DIAMOND.steps)
    theirs = Plan(goal="Their goal", steps=DIAMOND.steps)
    merge = plan_merge(DIAMOND, ours, theirs)

    assert [c.key for c in merge.conflicts] == ["goal"]
    assert merge.plan({"goal": THEIRS}).goal == "Their goal"
    assert merged(DIAMOND, DIAMOND, theirs).goal == "Their goal"


def test_a_step_the_planner_removed_and_nobody_touched_is_removed() -> None:
    theirs = edit(DIAMOND, DeleteStep("c", DependentsPolicy.DETACH))
    ours = edit(DIAMOND, UpdateStep("b", title="Mine"))

    result = merged(DIAMOND, ours, theirs)

    assert deps(result) == {"a": [], "b": ["a"], "d": ["b"]}
    assert result.step("b").title == "Mine"


def test_a_step_both_removed_is_removed() -> None:
    gone = edit(DIAMOND, DeleteStep("c", DependentsPolicy.DETACH))
    assert merged(DIAMOND, gone, gone) == gone


def test_a_step_the_planner_removed_but_the_person_edited_is_a_conflict() -> None:
    ours = edit(DIAMOND, UpdateStep("c", title="Mine"))
    theirs = edit(DIAMOND, DeleteStep("c", DependentsPolicy.DETACH))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert merge.conflicts == (
        Conflict(
            "c",
            "c",
            "step",
            "the planner removed step 'c', but you changed its title",
            "keep step 'c' as you have it",
            "remove step 'c'",
        ),
    )
    kept = merge.plan({"c": MINE})
    assert kept.step("c").title == "Mine"
    assert deps(kept)["d"] == ["b", "c"]
    assert deps(merge.plan({"c": THEIRS})) == {"a": [], "b": ["a"], "d": ["b"]}


def test_a_step_the_person_removed_but_the_planner_edited_is_a_conflict() -> None:
    ours = edit(DIAMOND, DeleteStep("c", DependentsPolicy.DETACH))
    theirs = edit(DIAMOND, UpdateStep("c", instruction="Theirs.", role="critic"))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert [(c.key, c.reason, c.mine, c.theirs) for c in merge.conflicts] == [
        (
            "c",
            "you removed step 'c', but the planner changed its instruction, role",
            "remove step 'c'",
            "keep step 'c' as the planner has it",
        )
    ]
    assert "c" not in deps(merge.plan({"c": MINE}))
    restored = merge.plan({"c": THEIRS})
    assert fields(restored, "c")["instruction"] == "Theirs."
    # The arrows that went with the deleted step come back with it.
    assert deps(restored) == deps(DIAMOND)


def test_a_new_step_that_depends_on_a_step_the_other_side_removed_is_a_conflict() -> None:
    ours = edit(CHAIN, AddStep("notes", "Notes", "Note it.", "writer", (), ("b",)))
    theirs = edit(CHAIN, DeleteStep("b", DependentsPolicy.RECONNECT))
    merge = plan_merge(CHAIN, ours, theirs)

    assert [(c.key, c.reason) for c in merge.conflicts] == [
        ("b", "the planner removed step 'b', but your plan joins it to 'notes'")
    ]
    assert merge.conflicts[0].theirs == ("remove step 'b', and what waited for it no longer does")
    # Kept, 'b' keeps what waited for it in the person's plan; the planner's new arrow stays.
    assert deps(merge.plan({"b": MINE})) == {
        "a": [],
        "b": ["a"],
        "c": ["a", "b"],
        "notes": ["b"],
    }
    # Taken the planner's way, the person's step stays and no longer waits for 'b'.
    assert deps(merge.plan({"b": THEIRS})) == {"a": [], "c": ["a"], "notes": []}


def test_the_planner_depending_on_a_step_the_person_removed_is_a_conflict() -> None:
    ours = edit(CHAIN, DeleteStep("b", DependentsPolicy.RECONNECT))
    theirs = edit(CHAIN, AddStep("e", "E", "Do e.", "critic", (), ("b",)))
    merge = plan_merge(CHAIN, ours, theirs)

    assert [(c.key, c.reason) for c in merge.conflicts] == [
        ("b", "you removed step 'b', but the planner's plan joins it to 'e'")
    ]
    assert deps(merge.plan({"b": MINE})) == {"a": [], "c": ["a"], "e": []}
    assert deps(merge.plan({"b": THEIRS})) == {"a": [], "b": ["a"], "c": ["a", "b"], "e": ["b"]}


def test_a_step_both_added_alike_is_one_step() -> None:
    added = edit(DIAMOND, AddStep("e", "E", "Do e.", "critic", (), ("d",)))
    assert merged(DIAMOND, added, added) == added


def test_a_step_both_added_differently_conflicts_field_by_field_and_joins_its_arrows() -> None:
    ours = edit(DIAMOND, AddStep("e", "Mine", "Do e.", "critic", (), ("b",)))
    theirs = edit(DIAMOND, AddStep("e", "Theirs", "Do e.", "critic", (), ("c",)))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert [(c.key, c.reason) for c in merge.conflicts] == [
        ("e:title", "you and the planner both added a step 'e', with a different title")
    ]
    result = merge.plan({"e:title": THEIRS})
    assert result.step("e").title == "Theirs"
    assert result.step("e").depends_on == ["b", "c"]


def test_arrows_both_sides_added_that_close_a_cycle_are_refused_with_both_named() -> None:
    ours = edit(DIAMOND, AddDependency("b", "c"))
    theirs = edit(DIAMOND, AddDependency("c", "b"))
    merge = plan_merge(DIAMOND, ours, theirs)

    assert merge.conflicts == ()
    with pytest.raises(MergeError) as refused:
        merge.plan({})
    assert refused.value.errors == [
        "combining your changes with the planner's revision makes a cycle: b → c → b: "
        "'b' waits for 'c' (your change), 'c' waits for 'b' (the planner's revision). "
        "Discard the revision, remove one of these dependencies, and ask again"
    ]


def test_a_cycle_closed_only_by_one_choice_is_refused_for_that_choice() -> None:
    # The person removed 'a' and made 'c' wait for 'b'; the planner changed 'a' and made it
    # wait for 'c'. Keeping 'a' the planner's way closes a → c → b → a.
    base = plan_of(step("a"), step("b", "a"))
    ours = edit(base, AddStep("c", "C", "Do c.", "writer", (), ("b",)))
    ours = edit(ours, DeleteStep("a", DependentsPolicy.DETACH))
    theirs = edit(base, UpdateStep("a", title="Theirs"))
    theirs = edit(edit(theirs, AddStep("c", "C", "Do c.", "writer")), AddDependency("a", "c"))
    merge = plan_merge(base, ours, theirs)
    assert [c.key for c in merge.conflicts] == ["a"]
    assert deps(merge.plan({"a": MINE})) == {"b": [], "c": ["b"]}
    with pytest.raises(MergeError) as refused:
        merge.plan({"a": THEIRS})
    assert refused.value.errors == [
        "combining your changes with the planner's revision makes a cycle: a → c → b → a: "
        "'a' waits for 'c' (the planner's revision), 'c' waits for 'b' (your change), "
        "'b' waits for 'a' (the plan). Choose the other side of a conflict, or discard the "
        "revision"
    ]


@given(dag_plans(), st.data())
def test_a_merge_with_one_side_unchanged_is_the_other_side(base: Plan, data: st.DataObject) -> None:
    ids = [s.id for s in base.steps]
    target = data.draw(st.sampled_from(ids))
    changed = edit(base, UpdateStep(target, title="Changed", instruction="Changed."))
    assert merged(base, changed, base) == changed
    assert merged(base, base, changed) == changed
    assert plan_merge(base, changed, changed).conflicts == ()
