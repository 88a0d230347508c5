"""core.grants: the tools a step's instruction names that the step is not granted."""

from __future__ import annotations

import pytest

from planner_ui.core.grants import ungranted_mentions
from planner_ui.core.plan import Plan

OFFERED = ["calculator", "python", "read_file", "shell", "web_search"]


def plan(instruction: str, tools: list[str]) -> Plan:
    step = {"id": "s", "title": "S", "instruction": instruction, "role": "coder", "tools": tools}
    return Plan.model_validate({"goal": "g", "steps": [{**step, "depends_on": []}]})


@pytest.mark.parametrize(
    ("instruction", "named"),
    [
        ("Read the calculator's result for 1500 * 0.2.", "calculator"),
        ("Use the Python tool to sort the list.", "python"),
        ("Look it up with web search.", "web_search"),
        ("Open notes.md with read_file.", "read_file"),
    ],
)
def test_a_tool_the_instruction_names_must_be_granted(instruction: str, named: str) -> None:
    (problem,) = ungranted_mentions(plan(instruction, []), OFFERED)
    assert problem == (
        f"step 's' says to use {named} in its instruction but is not granted it (its tools: none)"
    )
    assert ungranted_mentions(plan(instruction, [named]), OFFERED) == []


@pytest.mark.parametrize(
    "instruction",
    [
        "Compare Python and Go for command-line tools.",
        "Explain what a shell script is.",
        "Use a calculator app on your phone.",  # "a calculator", not the tool
        "Compute it with the abacus.",
    ],
)
def test_words_that_name_no_tool(instruction: str) -> None:
    assert ungranted_mentions(plan(instruction, []), OFFERED) == []


def test_only_offered_tools_count() -> None:
    assert ungranted_mentions(plan("Use the calculator.", []), ["python"]) == []


def test_a_tool_the_task_names_must_be_granted_to_some_step() -> None:
    task = "Compute 1500 * 0.2 + 75 with the calculator and report the result."
    # As Qwen2.5-Coder-1.5B planned it: one step that "evaluates" and writes a file.
    planned = plan("Evaluate 1500 * 0.2 + 75 and save the result.", ["write_file"])
    assert ungranted_mentions(planned, OFFERED, task) == [
        "the task says to use calculator, but no step is granted it"
    ]
    assert ungranted_mentions(plan("Evaluate it.", ["calculator"]), OFFERED, task) == []
    assert ungranted_mentions(planned, OFFERED, "Compare Python and Go") == []
