"""Every edit operation on a plan, and every refusal with its exact message."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.dag import find_cycle
from planner_ui.core.diff import FieldChange, plan_diff
from planner_ui.core.edits import (
    AddDependency,
    AddStep,
    DeleteStep,
    DependentsPolicy,
    EditRefused,
    RemoveDependency,
    UpdateStep,
    apply_edit,
    describe_edit,
    slug_for,
)
from planner_ui.core.plan import Plan
from planner_ui.core.validation import validate_plan

TOOLS = {"calculator", "fetch_url", "write_file"}


def plan_of(*steps: tuple[str, list[str]]) -> Plan:
    return Plan.model_validate(
        {
            "goal": "g",
            "steps": [
                {
                    "id": i,
                    "title": i.upper(),
                    "instruction": f"do {i}",
                    "role": "writer",
                    "depends_on": deps,
                }
                for i, deps in steps
            ],
        }
    )


DIAMOND = plan_of(("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"]))
CHAIN = plan_of(("a", []), ("b", ["a"]), ("c", ["b"]))


def refused(plan: Plan, edit) -> list[str]:
    with pytest.raises(EditRefused) as exc:
        apply_edit(plan, edit, known_tools=TOOLS)
    return exc.value.errors


def deps(plan: Plan) -> dict[str, list[str]]:
    return plan.dependencies()


def test_update_changes_only_the_named_fields_and_never_the_input():
    new = apply_edit(
        DIAMOND, UpdateStep("b", title="Bee", tools=("calculator",)), known_tools=TOOLS
    )
    b = new.step("b")
    assert (b.title, b.instruction, b.tools) == ("Bee", "do b", ["calculator"])
    assert DIAMOND.step("b").title == "B" and DIAMOND.step("b").tools == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (UpdateStep("x", title="t"), "there is no step 'x'; steps: a, b, c, d"),
        (UpdateStep("a"), "nothing to change in step 'a'"),
        (UpdateStep("a", title="A"), "nothing to change in step 'a'"),
        (AddStep("a", "T", "i", "writer"), "a step 'a' already exists"),
        (
            AddStep("", "T", "i", "writer", depends_on=("zz",)),
            "there is no step 'zz'; steps: a, b, c, d",
        ),
        (AddDependency("a", "a"), "a step cannot depend on itself ('a')"),
        (AddDependency("d", "b"), "step 'd' already depends on 'b'"),
        (AddDependency("a", "d"), "adding d → a would create a cycle: a → b → d → a"),
        (RemoveDependency("b", "c"), "step 'b' does not depend on 'c'"),
        (DeleteStep("x"), "there is no step 'x'; steps: a, b, c, d"),
    ],
)
def test_each_refusal_names_the_problem(edit, message):
    assert refused(DIAMOND, edit) == [message]


def test_validation_refusals_come_through_with_validations_messages():
    assert refused(DIAMOND, UpdateStep("a", tools=("rm",))) == [
        "step 'a' grants unknown tool 'rm'; known tools: calculator, fetch_url, write_file"
    ]
    assert refused(DIAMOND, UpdateStep("a", role="wizard")) == [
        "step 'a' has unknown role 'wizard'; known roles: coder, critic, researcher, writer"
    ]
    assert refused(DIAMOND, UpdateStep("a", instruction="   ")) == [
        "step 'a' has an empty instruction"
    ]


def test_deleting_the_last_step_is_refused():
    assert refused(plan_of(("a", [])), DeleteStep("a")) == [
        "a plan needs at least one step; add another before deleting 'a'"
    ]
    assert refused(CHAIN, DeleteStep("a", DependentsPolicy.CASCADE)) == [
        "deleting 'a' with its dependents would leave no steps; choose 'reconnect' or 'detach'"
    ]


def test_delete_policies_on_a_diamond():
    reconnect = apply_edit(DIAMOND, DeleteStep("b"), known_tools=TOOLS)
    assert deps(reconnect) == {"a": [], "c": ["a"], "d": ["a", "c"]}
    detach = apply_edit(DIAMOND, DeleteStep("b", DependentsPolicy.DETACH), known_tools=TOOLS)
    assert deps(detach) == {"a": [], "c": ["a"], "d": ["c"]}
    cascade = apply_edit(DIAMOND, DeleteStep("b", DependentsPolicy.CASCADE), known_tools=TOOLS)
    assert deps(cascade) == {"a": [], "c": ["a"]}


def test_reconnect_does_not_duplicate_dependencies():
    plan = plan_of(("a", []), ("b", ["a"]), ("c", ["a", "b"]))
    assert deps(apply_edit(plan, DeleteStep("b"), known_tools=TOOLS))["c"] == ["a"]


def test_add_step_derives_a_unique_slug_and_goes_last():
    new = apply_edit(
        DIAMOND,
        AddStep("", "Check sources!", "check", "critic", depends_on=("d",)),
        known_tools=TOOLS,
    )
    assert [s.id for s in new.steps] == ["a", "b", "c", "d", "check-sources"]
    assert slug_for("Check sources", {"check-sources"}) == "check-sources-2"
    assert slug_for("Synthesis", ()) == "synthesis-2"
    assert slug_for("!!!", ()) == "step"


def test_add_and_remove_dependency():
    added = apply_edit(CHAIN, AddDependency("c", "a"), known_tools=TOOLS)
    assert deps(added)["c"] == ["b", "a"]
    removed = apply_edit(added, RemoveDependency("c", "b"), known_tools=TOOLS)
    assert deps(removed)["c"] == ["a"]


@pytest.mark.parametrize(
    ("edit", "text"),
    [
        (UpdateStep("a", title="x", tools=()), "changed title, tools of step 'a'"),
        (AddStep("", "Check sources", "i", "critic"), "added step 'check-sources'"),
        (DeleteStep("b"), "deleted step 'b' (dependents reconnected)"),
        (DeleteStep("b", DependentsPolicy.CASCADE), "deleted step 'b' (dependents deleted too)"),
        (AddDependency("d", "a"), "added dependency a → d"),
        (RemoveDependency("d", "b"), "removed dependency b → d"),
    ],
)
def test_describe_edit(edit, text):
    assert describe_edit(edit) == text


def test_diff_reports_steps_fields_and_edges():
    new = apply_edit(
        DIAMOND, UpdateStep("b", title="Bee", tools=("calculator",)), known_tools=TOOLS
    )
    new = apply_edit(new, DeleteStep("c", DependentsPolicy.DETACH), known_tools=TOOLS)
    new = apply_edit(new, AddStep("e", "E", "do e", "critic", depends_on=("d",)), known_tools=TOOLS)
    diff = plan_diff(DIAMOND, new)
    assert diff.added == ("e",) and diff.removed == ("c",)
    assert diff.changed == (
        ("b", (FieldChange("title", "B", "Bee"), FieldChange("tools", [], ["calculator"]))),
    )
    assert diff.edges_added == (("d", "e"),)
    assert diff.edges_removed == (("a", "c"), ("c", "d"))
    assert not diff.is_empty and plan_diff(DIAMOND, DIAMOND).is_empty


@st.composite
def dag_plans(draw):
    n = draw(st.integers(min_value=2, max_value=9))
    steps = []
    for i in range(n):
        parents = (
            draw(
                st.lists(st.integers(min_value=0, max_value=max(i - 1, 0)), max_size=3, unique=True)
            )
            if i
            else []
        )
        steps.append((f"s{i}", [f"s{p}" for p in parents]))
    return plan_of(*steps)


@given(dag_plans(), st.data())
def test_added_dependencies_never_make_a_cycle(plan, data):
    ids = [s.id for s in plan.steps]
    edit = AddDependency(data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids)))
    try:
        new = apply_edit(plan, edit, known_tools=TOOLS)
    except EditRefused:
        return
    validate_plan(new.model_dump(), known_tools=TOOLS)
    assert find_cycle(new.dependencies()) is None
    assert plan_diff(plan, new).edges_added == ((edit.depends_on, edit.step_id),)
