"""core.grants: the tools a step's instruction names that the step is not granted."""

from __future__ import annotations

import pytest

from planner_ui.core.grants import (
    named_tools,
    new_held_grants,
    tools_asked_for,
    ungranted_mentions,
)
from planner_ui.core.plan import Plan

OFFERED = ["calculator", "python", "read_file", "shell", "web_search"]


def plan(instruction: str, tools: list[str]) -> Plan:
    step = {"id": "s", "title": "S", "instruction": instruction, "role": "coder", "tools": tools}
    return Plan.model_validate({"goal": "g", "steps": [{**step, "depends_on": []}]})


@pytest.mark.parametrize(
    ("instruction", "named"),
    [
        ("Take the calculator's result for 1500 * 0.2.", "calculator"),
        ("Use the Python tool to sort the list.", "python"),
        ("Look it up with web search.", "web_search"),
        ("Open notes.md with read_file.", "read_file"),
        # Quoted, as Qwen2.5-Coder-1.5B's plans write it (seed 7 of the opt-in run).
        ("Use the 'calculator' tool to evaluate the expression '1500 * 0.2 + 75'.", "calculator"),
        ('Sort it with the "python" tool.', "python"),
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
        "Use the calculators' results.",
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
        "the task says to use calculator, but no step is granted it: grant it to the step "
        "that does that part of the task, and say in that step's instruction to use the "
        "calculator tool"
    ]
    # What it asks for is what the executor holds a step to (core.grants.named_tools).
    assert named_tools("Evaluate it with the calculator tool.", OFFERED) == ["calculator"]
    assert ungranted_mentions(plan("Evaluate it.", ["calculator"]), OFFERED, task) == []
    assert ungranted_mentions(planned, OFFERED, "Compare Python and Go") == []


@pytest.mark.parametrize(
    "instruction",
    [
        # Qwen2.5-Coder-1.5B's first step on seed 7, given back unchanged when asked about it
        # as a tool the step "says to use".
        "Use the 'read_file' tool to read the calculator from the run's workspace.",
        "Read the calculator's result for 1500 * 0.2.",
        "Open the calculator tool and load its output.",
        # Its re-plan, quoted.
        "Use the 'read_file' tool to read the 'calculator' from the run's workspace.",
    ],
)
def test_a_tool_read_as_if_it_were_a_file_is_said_to_be_a_tool(instruction: str) -> None:
    (problem,) = ungranted_mentions(plan(instruction, ["read_file"]), OFFERED)
    assert problem == (
        "step 's' would read calculator as if it were a file, but calculator is a tool, not a "
        "file in the workspace: a step uses a tool by being granted it and calling it (its "
        "tools: read_file). Grant it the tool to call, or remove the step and its id from the "
        "other steps' depends_on"
    )
    assert ungranted_mentions(plan(instruction, ["read_file", "calculator"]), OFFERED) == []


@pytest.mark.parametrize(
    "instruction",
    [
        "Open the notes with read_file and use the calculator on them.",
        "Read notes.md, then add its numbers with the calculator.",
    ],
)
def test_reading_a_file_beside_a_tool_is_not_reading_the_tool(instruction: str) -> None:
    (problem,) = ungranted_mentions(plan(instruction, ["read_file"]), OFFERED)
    assert problem == (
        "step 's' says to use calculator in its instruction but is not granted it (its tools: "
        "read_file)"
    )


# --- a revision that reaches for a tool a person must see ---------------------------------------

HELD = {"http_post", "send_email", "fetch_url"}


def test_a_revision_granting_a_held_tool_nobody_used_is_in_doubt() -> None:
    # Seed 7 of the opt-in run: a re-plan to "install the calculator" with http_post.
    current = plan("Read the calculator from a file.", ["read_file"])
    revised = plan("Install the calculator by posting to its site.", ["http_post", "calculator"])

    (problem,) = new_held_grants(revised, current, HELD, "Compute 1500 * 0.2 + 75.")

    assert problem == (
        "step 's' is granted http_post, which a person must approve before the run goes on, "
        "and which neither the task nor the current plan uses: route around what failed with "
        "the tools the task needs, and grant http_post only if the task cannot be done without it"
    )


@pytest.mark.parametrize(
    ("current_tools", "task"),
    [
        (["http_post"], "Compute it."),  # the plan being replaced had it
        (["read_file"], "Compute it and send it with http_post."),  # the task names it
    ],
)
def test_a_held_tool_the_task_or_the_plan_used_is_no_doubt(
    current_tools: list[str], task: str
) -> None:
    revised = plan("Send the result.", ["http_post"])
    assert new_held_grants(revised, plan("Compute it.", current_tools), HELD, task) == []


def test_a_tool_not_held_is_no_doubt() -> None:
    revised = plan("Compute it with the calculator.", ["calculator"])
    assert new_held_grants(revised, plan("Read it.", ["read_file"]), HELD, "Compute it.") == []


@pytest.mark.parametrize(
    "instruction",
    [
        # Seed 42 of the opt-in run's plan.
        "Evaluate 1500 * 0.2 + 75. Save the result as a file named 'result.txt'.",
        "Write the result of the calculation to a file in the run's workspace.",
        "Write both results into results.txt.",
        "Store the table in prices.csv.",
        "Use write_file to keep it.",
    ],
)
def test_an_instruction_to_save_a_file_asks_for_write_file(instruction: str) -> None:
    assert tools_asked_for(instruction, ["calculator", "write_file"]) == ["write_file"]


@pytest.mark.parametrize(
    "instruction",
    [
        "Write a short summary of the findings.",
        "Read the 'result.txt' file and report the calculated result.",
        "Write the result, e.g. as a table, with 0.2 as the rate.",
        "Compute 1500 * 0.2 + 75.",
    ],
)
def test_an_instruction_that_saves_no_file_does_not(instruction: str) -> None:
    assert tools_asked_for(instruction, ["calculator", "write_file"]) == []
