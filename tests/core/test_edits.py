"""Plan edits: every operation, every refusal in its exact words, and the input never changed.

The graphs used throughout, drawn as arrows dependency → dependent:

    DIAMOND  a → b → d,  a → c → d        CHAIN  a → b → c
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.dag import ancestors, find_cycle
from planner_ui.core.diff import plan_diff
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
    describe_edit,
    slug_for,
)
from planner_ui.core.errors import PlanValidationError
from planner_ui.core.plan import MAX_STEPS, Plan
from planner_ui.core.validation import validate_plan

TOOLS = {"calculator", "fetch_url", "write_file"}


def step(step_id: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "title": fields.pop("title", step_id.upper()),
        "instruction": fields.pop("instruction", f"Do {step_id}."),
        "role": fields.pop("role", "writer"),
        "tools": fields.pop("tools", []),
        "depends_on": list(depends_on),
        **fields,
    }


def plan_of(*steps: dict[str, Any], goal: str = "A test plan.") -> Plan:
    return validate_plan({"goal": goal, "steps": list(steps)}, known_tools=TOOLS)


DIAMOND = plan_of(step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"))
CHAIN = plan_of(step("a"), step("b", "a"), step("c", "b"))


def edit(plan: Plan, change: Edit) -> Plan:
    return apply_edit(plan, change, known_tools=TOOLS)


def refusal(plan: Plan, change: Edit, **kwargs: Any) -> list[str]:
    before = plan.model_dump()
    with pytest.raises(EditRefused) as caught:
        apply_edit(plan, change, known_tools=kwargs.pop("known_tools", TOOLS), **kwargs)
    assert plan.model_dump() == before, "a refused edit must leave the plan as it was"
    return caught.value.errors


def ids(plan: Plan) -> list[str]:
    return [s.id for s in plan.steps]


# --- UpdateStep ---------------------------------------------------------------------------


def test_update_changes_only_the_named_fields() -> None:
    new = edit(DIAMOND, UpdateStep("b", title="Bee", tools=("calculator",)))

    b = new.step("b")
    assert (b.title, b.instruction, b.role, b.tools) == ("Bee", "Do b.", "writer", ["calculator"])
    assert b.depends_on == ["a"]
    assert [s.model_dump() for s in new.steps if s.id != "b"] == [
        s.model_dump() for s in DIAMOND.steps if s.id != "b"
    ]


def test_update_can_change_each_field() -> None:
    new = edit(
        CHAIN, UpdateStep("c", instruction="Write it up.", role="critic", tools=("fetch_url",))
    )

    c = new.step("c")
    assert (c.title, c.instruction, c.role, c.tools) == (
        "C",
        "Write it up.",
        "critic",
        ["fetch_url"],
    )


def test_update_can_take_every_tool_away() -> None:
    granted = plan_of(step("a", tools=["calculator", "fetch_url"]))

    assert edit(granted, UpdateStep("a", tools=())).step("a").tools == []


@pytest.mark.parametrize(
    "change",
    [
        UpdateStep("a"),
        UpdateStep("a", title="A"),
        UpdateStep("a", title="A", instruction="Do a.", role="writer", tools=()),
    ],
)
def test_update_with_nothing_new_is_refused(change: UpdateStep) -> None:
    assert refusal(DIAMOND, change) == ["nothing to change in step 'a'"]


def test_reordering_tools_alone_is_not_a_change() -> None:
    # Granted tools are a set; a new version that differs only in their order would be noise.
    granted = plan_of(step("a", tools=["calculator", "fetch_url"]))

    assert refusal(granted, UpdateStep("a", tools=("fetch_url", "calculator"))) == [
        "nothing to change in step 'a'"
    ]


def test_update_of_an_unknown_step_lists_the_steps() -> None:
    assert refusal(DIAMOND, UpdateStep("x", title="t")) == [
        "there is no step 'x'; steps: a, b, c, d"
    ]


# --- AddStep ------------------------------------------------------------------------------


def test_an_added_step_goes_last_with_its_fields() -> None:
    new = edit(
        DIAMOND,
        AddStep("e", "Check", "Check d.", "critic", tools=("fetch_url",), depends_on=("d", "a")),
    )

    assert ids(new) == ["a", "b", "c", "d", "e"]
    assert new.step("e").model_dump() == {
        "id": "e",
        "title": "Check",
        "instruction": "Check d.",
        "role": "critic",
        "tools": ["fetch_url"],
        "depends_on": ["d", "a"],
    }


def test_an_added_step_repeating_a_dependency_keeps_it_once() -> None:
    new = edit(DIAMOND, AddStep("e", "E", "Do e.", "writer", depends_on=("d", "d")))

    assert new.step("e").depends_on == ["d"]


def test_an_empty_id_is_derived_from_the_title() -> None:
    new = edit(DIAMOND, AddStep("", "Check sources!", "Check.", "critic", depends_on=("d",)))
    again = edit(new, AddStep("", "Check  sources", "Check again.", "critic"))
    third = edit(again, AddStep("", "check-sources", "And again.", "critic"))

    assert ids(third) == ["a", "b", "c", "d", "check-sources", "check-sources-2", "check-sources-3"]


@pytest.mark.parametrize(
    ("title", "taken", "slug"),
    [
        ("Check sources", (), "check-sources"),
        ("Check sources", ("check-sources",), "check-sources-2"),
        ("Check sources", ("check-sources", "check-sources-2"), "check-sources-3"),
        ("  Compare: A vs. B  ", (), "compare-a-vs-b"),
        ("Résumé des études", (), "resume-des-etudes"),
        ("Synthesis", (), "synthesis-2"),  # the synthesizer's id is never handed out
        ("!!!", (), "step"),
        ("!!!", ("step",), "step-2"),
        ("x" * 50, (), "x" * 32),
        ("x" * 31 + " tail", (), "x" * 31),  # a cut that lands on a '-' drops it
    ],
)
def test_slug_for(title: str, taken: tuple[str, ...], slug: str) -> None:
    assert slug_for(title, taken) == slug


def test_a_derived_id_is_always_a_valid_step_id() -> None:
    long_title = "An exceedingly long title for a step, longer than any id may be"
    new = edit(DIAMOND, AddStep("", long_title, "Do it.", "writer"))
    again = edit(new, AddStep("", long_title, "Do it again.", "writer"))

    assert ids(again)[-2:] == [
        "an-exceedingly-long-title-for-a",
        "an-exceedingly-long-title-for-a-2",
    ]


def test_adding_a_step_with_a_used_id_is_refused() -> None:
    assert refusal(DIAMOND, AddStep("a", "T", "Do t.", "writer")) == ["a step 'a' already exists"]


def test_adding_a_step_on_an_unknown_step_lists_the_steps() -> None:
    assert refusal(DIAMOND, AddStep("", "T", "Do t.", "writer", depends_on=("zz",))) == [
        "there is no step 'zz'; steps: a, b, c, d"
    ]


def test_adding_a_step_that_depends_on_itself_is_refused() -> None:
    assert refusal(DIAMOND, AddStep("e", "E", "Do e.", "writer", depends_on=("a", "e"))) == [
        "a step cannot depend on itself ('e')"
    ]


def test_an_added_step_is_validated_like_any_other() -> None:
    assert refusal(DIAMOND, AddStep("Bad Id", "T", "Do t.", "writer")) == [
        "step 'Bad Id' id: must be a short lowercase slug (letters, digits, '-' or '_', at most 40)"
    ]
    assert refusal(DIAMOND, AddStep("synthesis", "T", "Do t.", "writer")) == [
        "step id 'synthesis' is reserved for the synthesizer"
    ]
    assert refusal(DIAMOND, AddStep("e", "E", "", "poet", tools=("rm",))) == [
        "step 'e' has an empty instruction",
        "step 'e' has unknown role 'poet'; known roles: coder, critic, researcher, writer",
        "step 'e' grants unknown tool 'rm'; known tools: calculator, fetch_url, write_file",
    ]


def test_a_plan_at_the_step_limit_takes_no_more() -> None:
    full = plan_of(*(step(f"s{i}") for i in range(MAX_STEPS)))

    assert refusal(full, AddStep("one-more", "T", "Do t.", "writer")) == [
        f"the plan has {MAX_STEPS + 1} steps; at most {MAX_STEPS} are allowed"
    ]


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


# --- What every edit shares ---------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        UpdateStep("b", title="Bee", instruction="Bee it.", role="coder", tools=("calculator",)),
        AddStep("e", "E", "Do e.", "writer", depends_on=("d",)),
        DeleteStep("b"),
        DeleteStep("b", DependentsPolicy.DETACH),
        DeleteStep("b", DependentsPolicy.CASCADE),
        AddDependency("d", "a"),
        RemoveDependency("d", "b"),
    ],
)
def test_an_edit_returns_a_new_plan_and_never_changes_its_input(change: Edit) -> None:
    before = DIAMOND.model_dump()

    new = edit(DIAMOND, change)

    assert new is not DIAMOND
    assert new.model_dump() != before
    assert DIAMOND.model_dump() == before
    assert new.goal == DIAMOND.goal
    # The new plan shares no mutable lists with the old one.
    for old_step in DIAMOND.steps:
        for new_step in new.steps:
            assert old_step.depends_on is not new_step.depends_on
            assert old_step.tools is not new_step.tools


def test_validation_problems_come_out_in_validations_own_words() -> None:
    assert refusal(DIAMOND, UpdateStep("a", tools=("rm",))) == [
        "step 'a' grants unknown tool 'rm'; known tools: calculator, fetch_url, write_file"
    ]
    assert refusal(DIAMOND, UpdateStep("a", tools=("calculator", "calculator"))) == [
        "step 'a' grants tool 'calculator' more than once"
    ]
    assert refusal(DIAMOND, UpdateStep("a", role="wizard")) == [
        "step 'a' has unknown role 'wizard'; known roles: coder, critic, researcher, writer"
    ]
    assert refusal(DIAMOND, UpdateStep("a", instruction="   ")) == [
        "step 'a' has an empty instruction"
    ]
    assert refusal(DIAMOND, UpdateStep("a", title="x" * 121)) == [
        "step 'a' title: String should have at most 120 characters"
    ]
    assert refusal(DIAMOND, UpdateStep("a", title="")) == [
        "step 'a' title: String should have at least 1 character"
    ]


def test_known_tools_and_roles_are_the_callers() -> None:
    assert refusal(DIAMOND, UpdateStep("a", tools=("calculator",)), known_tools=()) == [
        "step 'a' grants unknown tool 'calculator'; known tools: none"
    ]
    assert refusal(DIAMOND, UpdateStep("a", role="coder"), roles=("writer", "critic")) == [
        "step 'a' has unknown role 'coder'; known roles: critic, writer"
    ]
    new = apply_edit(
        DIAMOND, UpdateStep("a", role="poet"), known_tools=(), roles=("writer", "poet")
    )
    assert new.step("a").role == "poet"


def test_edit_refused_is_a_plan_validation_error() -> None:
    with pytest.raises(PlanValidationError) as caught:
        edit(DIAMOND, AddDependency("a", "a"))

    assert isinstance(caught.value, EditRefused)
    assert caught.value.errors == ["a step cannot depend on itself ('a')"]
    assert str(caught.value) == "invalid plan: a step cannot depend on itself ('a')"


def test_edits_are_frozen_values() -> None:
    change = UpdateStep("a", title="t")

    with pytest.raises(AttributeError):
        change.title = "u"  # type: ignore[misc]
    assert change == UpdateStep("a", title="t")
    assert hash(AddDependency("b", "a")) == hash(AddDependency("b", "a"))


# --- describe_edit ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "text"),
    [
        (UpdateStep("a", title="x"), "renamed step 'a'"),
        (UpdateStep("a", role="critic"), "changed role of step 'a'"),
        (UpdateStep("a", instruction="i"), "changed instruction of step 'a'"),
        (UpdateStep("a", tools=()), "changed tools of step 'a'"),
        (UpdateStep("a", title="x", tools=()), "changed title, tools of step 'a'"),
        (
            UpdateStep("a", title="x", instruction="i", role="critic", tools=()),
            "changed title, instruction, role, tools of step 'a'",
        ),
        (AddStep("x", "Anything", "i", "critic"), "added step 'x'"),
        (AddStep("", "Check sources", "i", "critic"), "added step 'check-sources'"),
        (DeleteStep("b"), "deleted step 'b' (dependents reconnected)"),
        (DeleteStep("b", DependentsPolicy.DETACH), "deleted step 'b' (dependents detached)"),
        (DeleteStep("b", DependentsPolicy.CASCADE), "deleted step 'b' (dependents deleted too)"),
        (AddDependency("b", "a"), "added dependency a → b"),
        (RemoveDependency("b", "a"), "removed dependency a → b"),
    ],
)
def test_describe_edit(change: Edit, text: str) -> None:
    assert describe_edit(change) == text


# --- Properties over random plans ---------------------------------------------------------


@st.composite
def dag_plans(draw: st.DrawFn) -> Plan:
    """A valid plan: each step depends only on steps made before it, then the order shuffled
    so that nothing can lean on the plan listing dependencies first."""
    count = draw(st.integers(min_value=1, max_value=9))
    names = [f"s{i}" for i in range(count)]
    steps = {
        name: step(
            name,
            *(draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=3)) if i else []),
            tools=draw(st.lists(st.sampled_from(sorted(TOOLS)), unique=True, max_size=2)),
        )
        for i, name in enumerate(names)
    }
    return plan_of(*(steps[name] for name in draw(st.permutations(names))))


@given(dag_plans(), st.data())
def test_an_added_dependency_never_makes_a_cycle(plan: Plan, data: st.DataObject) -> None:
    steps = ids(plan)
    change = AddDependency(data.draw(st.sampled_from(steps)), data.draw(st.sampled_from(steps)))
    before = plan.model_dump()
    deps = plan.dependencies()

    try:
        new = edit(plan, change)
    except EditRefused as refused:
        assert plan.model_dump() == before
        (message,) = refused.errors
        if change.step_id == change.depends_on:
            assert message == f"a step cannot depend on itself ('{change.step_id}')"
        elif change.depends_on in deps[change.step_id]:
            assert message == f"step '{change.step_id}' already depends on '{change.depends_on}'"
        else:
            # Refused only for a real cycle, and the path it names is made of real arrows.
            assert change.step_id in ancestors(deps, change.depends_on)
            prefix = f"adding {change.depends_on} → {change.step_id} would create a cycle: "
            assert message.startswith(prefix)
            path = message.removeprefix(prefix).split(" → ")
            assert path[0] == path[-1] == change.step_id
            assert path[-2] == change.depends_on
            for parent, child in zip(path[:-2], path[1:-1], strict=True):
                assert parent in deps[child]
        return

    assert plan.model_dump() == before
    validate_plan(new.model_dump(), known_tools=TOOLS)
    assert find_cycle(new.dependencies()) is None
    diff = plan_diff(plan, new)
    assert diff.edges_added == ((change.depends_on, change.step_id),)
    assert (diff.added, diff.removed, diff.changed, diff.edges_removed) == ((), (), (), ())


@given(dag_plans(), st.data())
def test_a_deletion_keeps_the_plan_valid_and_in_order(plan: Plan, data: st.DataObject) -> None:
    doomed = data.draw(st.sampled_from(ids(plan)))
    policy = data.draw(st.sampled_from(list(DependentsPolicy)))
    deps = plan.dependencies()

    try:
        new = edit(plan, DeleteStep(doomed, policy))
    except EditRefused:
        dependents = {s for s in deps if doomed in ancestors(deps, s)}
        assert len(plan.steps) == 1 or (
            policy == DependentsPolicy.CASCADE and len(dependents) + 1 == len(plan.steps)
        )
        return

    remaining = ids(new)
    assert remaining == [s for s in ids(plan) if s in remaining]
    assert doomed not in remaining
    new_deps = new.dependencies()
    if policy != DependentsPolicy.CASCADE:
        assert len(remaining) == len(plan.steps) - 1
    for s in remaining:
        # Reconnecting keeps every ordering the old plan implied; the others only lose some.
        old_ancestors = ancestors(deps, s) - {doomed}
        if policy == DependentsPolicy.RECONNECT:
            assert ancestors(new_deps, s) == old_ancestors
        else:
            assert ancestors(new_deps, s) <= old_ancestors
