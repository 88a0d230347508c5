"""The offline model asked to revise: a note that asks for work adds steps to the current plan;
any other note is read as more of the task, as before."""

from __future__ import annotations

import pytest

from planner_ui.agents.prompts import revision_message
from planner_ui.core.plan import Plan
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import ModelRequest
from planner_ui.tools import REGISTRY

from .requests import KNOWN_TOOLS, PROVIDER, plan_for


def revise(task: str, note: str, current: Plan | None = None) -> Plan:
    current = current or plan_for(task)
    specs = [REGISTRY[name].spec() for name in sorted(KNOWN_TOOLS)]
    content = revision_message(task, specs, current.model_dump_json(indent=2), note)
    request = ModelRequest(
        system="You are the planner.",
        messages=[{"role": "user", "content": content}],
        purpose="planner",
    )
    return validate_plan(parse_plan_json(PROVIDER.complete(request).text), known_tools=KNOWN_TOOLS)


def shape(plan: Plan) -> list[tuple[str, str, list[str]]]:
    return [(s.id, s.role, s.depends_on) for s in plan.steps]


def test_the_readmes_note_adds_a_researcher_step_the_summary_waits_for() -> None:
    task = "Research tea and coffee, then write a short summary"
    current = plan_for(task)
    assert shape(current)[-1] == (
        "write-short-summary",
        "writer",
        ["research-tea", "research-coffee"],
    )

    revised = revise(task, "and also research mate", current)

    assert shape(revised) == [
        ("research-tea", "researcher", []),
        ("research-coffee", "researcher", []),
        ("write-short-summary", "writer", ["research-tea", "research-coffee", "research-mate"]),
        ("research-mate", "researcher", []),
    ]
    assert revised.step("research-mate").title == "Research mate"
    assert "Research mate" in revised.step("research-mate").instruction


def test_the_other_steps_are_the_current_plans_with_a_persons_edits() -> None:
    task = "Compare Python and Go for writing a command-line tool"
    current = plan_for(task)
    edited = current.model_copy(
        update={
            "steps": [
                s.model_copy(update={"title": "Mine"}) if s.id == "compare" else s
                for s in current.steps
            ]
        }
    )

    revised = revise(task, "Also research Rust", edited)

    assert revised.step("compare").title == "Mine"
    assert [s.id for s in revised.steps][: len(current.steps)] == [s.id for s in current.steps]
    assert revised.step("research-rust").role == "researcher"
    assert "research-rust" in revised.step("write-comparison").depends_on


def test_a_list_in_the_note_adds_a_step_for_each() -> None:
    revised = revise("Research tea and coffee", "and also research mate and rooibos")
    assert shape(revised)[-2:] == [
        ("research-mate", "researcher", []),
        ("research-rooibos", "researcher", []),
    ]
    assert {"research-mate", "research-rooibos"} <= set(revised.step("write-report").depends_on)


def test_a_piece_of_writing_asked_for_comes_after_the_plan() -> None:
    revised = revise("Research tea and coffee", "Also write a haiku about it")
    assert shape(revised)[-1] == ("write-haiku", "writer", ["write-report"])


def test_a_new_step_gets_an_id_of_its_own() -> None:
    task = "Research tea and coffee"
    revised = revise(task, "and also research tea")
    assert [s.id for s in revised.steps][-1] == "research-tea-2"


@pytest.mark.parametrize("note", ["and mate", "Drop the coffee step", "make it shorter"])
def test_a_note_that_asks_for_no_new_work_is_read_as_more_of_the_task(note: str) -> None:
    task = "Research tea and coffee"
    glued = f"{task} {note}" if note[:1].islower() else f"{task}. {note}"
    assert revise(task, note) == plan_for(glued)
