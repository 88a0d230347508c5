"""What every plan edit shares (the input never changed, validation), and how edits are
described."""

import pytest

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
)
from planner_ui.core.errors import PlanValidationError

from .plans import DIAMOND, edit, refusal

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


@pytest.mark.parametrize(
    ("change", "text"),
    [
        # What the step form sends: every field, one of them changed.
        (
            UpdateStep("a", title="A", instruction="Do a.", role="critic", tools=()),
            "changed role of step 'a'",
        ),
        (
            UpdateStep("a", title="New", instruction="Do a.", role="writer", tools=()),
            "renamed step 'a'",
        ),
        (
            UpdateStep(
                "a", title="A", instruction="Do more.", role="writer", tools=("calculator",)
            ),
            "changed instruction, tools of step 'a'",
        ),
    ],
)
def test_describe_edit_names_only_what_changed_against_the_plan(change: Edit, text: str) -> None:
    assert describe_edit(change, DIAMOND) == text
