"""Plan edits: deleting a step (and what happens to the steps after it), adding and removing
dependencies."""

import pytest

from planner_ui.core.edits import (
    AddDependency,
    DeleteStep,
    DependentsPolicy,
    Edit,
    RemoveDependency,
)
from planner_ui.core.plan import Plan

from .plans import CHAIN, DIAMOND, edit, ids, plan_of, refusal, step

# --- DeleteStep ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (DependentsPolicy.RECONNECT, {"a": [], "c": ["a"], "d": ["a", "c"]}),
        (DependentsPolicy.DETACH, {"a": [], "c": ["a"], "d": ["c"]}),
        (DependentsPolicy.CASCADE, {"a": [], "c": ["a"]}),
    ],
)
def test_deleting_a_side_of_the_diamond(policy: DependentsPolicy, expected: dict) -> None:
    assert edit(DIAMOND, DeleteStep("b", policy)).dependencies() == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (DependentsPolicy.RECONNECT, {"b": [], "c": [], "d": ["b", "c"]}),
        (DependentsPolicy.DETACH, {"b": [], "c": [], "d": ["b", "c"]}),
    ],
)
def test_deleting_the_top_of_the_diamond(policy: DependentsPolicy, expected: dict) -> None:
    assert edit(DIAMOND, DeleteStep("a", policy)).dependencies() == expected


def test_deleting_the_bottom_of_the_diamond_touches_nothing_else() -> None:
    for policy in DependentsPolicy:
        new = edit(DIAMOND, DeleteStep("d", policy))
        assert new.dependencies() == {"a": [], "b": ["a"], "c": ["a"]}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (DependentsPolicy.RECONNECT, {"a": [], "c": ["a"]}),
        (DependentsPolicy.DETACH, {"a": [], "c": []}),
        (DependentsPolicy.CASCADE, {"a": []}),
    ],
)
def test_deleting_the_middle_of_a_chain(policy: DependentsPolicy, expected: dict) -> None:
    assert edit(CHAIN, DeleteStep("b", policy)).dependencies() == expected


def test_cascade_follows_dependents_transitively_and_spares_the_rest() -> None:
    plan = plan_of(step("a"), step("b", "a"), step("c", "b"), step("d", "c"), step("e", "a"))

    assert edit(plan, DeleteStep("b", DependentsPolicy.CASCADE)).dependencies() == {
        "a": [],
        "e": ["a"],
    }


def test_reconnect_does_not_duplicate_dependencies() -> None:
    plan = plan_of(step("a"), step("b", "a"), step("c", "a", "b"))

    assert edit(plan, DeleteStep("b")).step("c").depends_on == ["a"]


def test_reconnect_puts_inherited_dependencies_where_the_deleted_one_was() -> None:
    plan = plan_of(step("x"), step("y"), step("m", "x", "y"), step("z"), step("n", "z", "m"))

    assert edit(plan, DeleteStep("m")).step("n").depends_on == ["z", "x", "y"]


def test_deletion_keeps_the_order_of_the_other_steps() -> None:
    plan = plan_of(step("e"), step("a"), step("d", "a"), step("b"), step("c", "d"))

    assert ids(edit(plan, DeleteStep("d"))) == ["e", "a", "b", "c"]
    assert ids(edit(plan, DeleteStep("d", DependentsPolicy.CASCADE))) == ["e", "a", "b"]


def test_reconnect_is_the_default_policy() -> None:
    assert DeleteStep("b").dependents is DependentsPolicy.RECONNECT
    assert [p.value for p in DependentsPolicy] == ["reconnect", "detach", "cascade"]


def test_deleting_the_last_step_is_refused() -> None:
    only = plan_of(step("a"))

    for policy in DependentsPolicy:
        assert refusal(only, DeleteStep("a", policy)) == [
            "a plan needs at least one step; add another before deleting 'a'"
        ]


def test_a_cascade_that_would_delete_everything_is_refused() -> None:
    assert refusal(DIAMOND, DeleteStep("a", DependentsPolicy.CASCADE)) == [
        "deleting 'a' with its dependents would leave no steps; choose 'reconnect' or 'detach'"
    ]


def test_deleting_an_unknown_step_lists_the_steps() -> None:
    assert refusal(DIAMOND, DeleteStep("x")) == ["there is no step 'x'; steps: a, b, c, d"]


# --- AddDependency / RemoveDependency -----------------------------------------------------


def test_an_added_dependency_goes_after_the_existing_ones() -> None:
    new = edit(CHAIN, AddDependency("c", "a"))

    assert new.dependencies() == {"a": [], "b": ["a"], "c": ["b", "a"]}


def test_a_removed_dependency_leaves_the_others() -> None:
    new = edit(DIAMOND, RemoveDependency("d", "b"))

    assert new.dependencies() == {"a": [], "b": ["a"], "c": ["a"], "d": ["c"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (AddDependency("a", "a"), "a step cannot depend on itself ('a')"),
        (AddDependency("d", "b"), "step 'd' already depends on 'b'"),
        (AddDependency("x", "a"), "there is no step 'x'; steps: a, b, c, d"),
        (AddDependency("a", "x"), "there is no step 'x'; steps: a, b, c, d"),
        (RemoveDependency("b", "c"), "step 'b' does not depend on 'c'"),
        (RemoveDependency("x", "a"), "there is no step 'x'; steps: a, b, c, d"),
    ],
)
def test_dependency_refusals(change: Edit, message: str) -> None:
    assert refusal(DIAMOND, change) == [message]


@pytest.mark.parametrize(
    ("plan", "change", "message"),
    [
        (CHAIN, AddDependency("a", "b"), "adding b → a would create a cycle: a → b → a"),
        (CHAIN, AddDependency("a", "c"), "adding c → a would create a cycle: a → b → c → a"),
        (CHAIN, AddDependency("b", "c"), "adding c → b would create a cycle: b → c → b"),
        (DIAMOND, AddDependency("a", "d"), "adding d → a would create a cycle: a → b → d → a"),
        (DIAMOND, AddDependency("c", "d"), "adding d → c would create a cycle: c → d → c"),
    ],
)
def test_a_cycle_is_refused_with_its_path_from_the_dependent(
    plan: Plan, change: AddDependency, message: str
) -> None:
    assert refusal(plan, change) == [message]


def test_the_cycle_named_starts_at_the_dependent_whatever_the_plan_order() -> None:
    # The step that would close the loop is neither first in the plan nor first in the chain.
    plan = plan_of(step("b", "a"), step("a"), step("c", "b"))

    assert refusal(plan, AddDependency("a", "c")) == [
        "adding c → a would create a cycle: a → b → c → a"
    ]


def test_the_cycle_named_is_the_shortest_one() -> None:
    # a → b → c → d → e, and the shortcut a → e.
    plan = plan_of(step("a"), step("b", "a"), step("c", "b"), step("d", "c"), step("e", "d", "a"))

    assert refusal(plan, AddDependency("a", "e")) == [
        "adding e → a would create a cycle: a → e → a"
    ]
