"""Plan edits: updating a step and adding one, every refusal in its exact words."""

import pytest

from planner_ui.core.edits import (
    AddStep,
    UpdateStep,
    slug_for,
)
from planner_ui.core.plan import MAX_STEPS

from .plans import CHAIN, DIAMOND, edit, ids, plan_of, refusal, step

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
