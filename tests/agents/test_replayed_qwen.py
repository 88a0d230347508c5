"""The executor and the synthesizer, through the real OpenAI-compatible provider and SDK, against
replies Qwen2.5-Coder-1.5B-Instruct gave on llama.cpp (tests/fixtures/real-models/).

Every executor step of those runs wrote its tool call as text, and agentsite took the text for
the step's result. What is recorded: the model's first reply to each step (and the synthesizer's
reply, and its one retry). What is scripted: the model's reply after the tool results, which the
recorded runs never reached (agentsite never ran a tool in them); each test says which is which.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from planner_ui.agents.executor import StepSpec, run_step
from planner_ui.agents.synthesizer import ECHO_CORRECTION, synthesize
from planner_ui.core.errors import StepFailed
from planner_ui.providers.openai_compat import OpenAICompatProvider, make_client
from planner_ui.tools import ToolContext
from tests.fakes.replay_server import ReplayOpenAI

TRANSCRIPT = (
    Path(__file__).parent.parent / "fixtures" / "real-models" / "qwen2.5-coder-1.5b-llamacpp.jsonl"
)

Events = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def server():
    with ReplayOpenAI(TRANSCRIPT) as replay:
        yield replay


@pytest.fixture
def provider(server: ReplayOpenAI) -> OpenAICompatProvider:
    return OpenAICompatProvider("model", make_client(api_key="", base_url=server.base_url))


def execute(
    provider: OpenAICompatProvider,
    tool_ctx: ToolContext,
    step_id: str,
    instruction: str,
    tools: list[str],
    role: str = "coder",
    context: list[tuple[str, str, str]] | None = None,
) -> tuple[str, Events]:
    events: Events = []
    outcome = run_step(
        provider,
        StepSpec(step_id, step_id, instruction, role, tools),
        context or [],
        tool_ctx,
        lambda kind, payload: events.append((kind, payload)),
    )
    return outcome.output, events


def results(events: Events) -> list[str]:
    return [p["content"] for kind, p in events if kind == "step.tool_result"]


def test_the_calculator_call_qwen_wrote_as_text_runs(server, provider, tool_ctx) -> None:
    # Recorded (line 7): a fenced {"name": "calculator", "arguments": {...}} and nothing else,
    # which today's executor returned as the step's "result".
    server.enqueue_text("17.5% of 2480 is **434**.")  # scripted: the reply to the result

    output, events = execute(
        provider,
        tool_ctx,
        "calc1",
        "Use the calculator tool to compute 17.5% of 2480.",
        ["calculator"],
    )

    assert server.answered_by == [6, None]
    call = events[0][1]
    assert call["tool"] == "calculator" and call["recognised_in_text"] is True
    assert call["arguments"] == {"expression": "17.5 / 100 * 2480"}
    assert results(events) == ["17.5 / 100 * 2480 = 434"]
    assert output == "17.5% of 2480 is **434**."
    # The follow-up is a valid request by the API's rules (the fake refuses any other): the
    # assistant turn carries the call, and the tool message answers it.
    follow_up = server.requests[1].body["messages"]
    assert follow_up[-2]["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"expression": "17.5 / 100 * 2480"}',
    }
    assert follow_up[-1] == {
        "role": "tool",
        "tool_call_id": call["call_id"],
        "content": "17.5 / 100 * 2480 = 434",
    }


def test_a_call_in_doubled_braces_after_copied_scaffolding_runs(server, provider, tool_ctx):
    # Recorded (line 2): "<tools></tools>", the instruction copied back in its tags, the call
    # in doubled braces, then a made-up {"result": 375}.
    server.enqueue_text("1500 * 0.2 + 75 = 375")  # scripted
    instruction = (
        "Evaluate the expression `1500 * 0.2 + 75` and store the result in a variable called "
        "`result`."
    )

    output, events = execute(provider, tool_ctx, "0", instruction, ["calculator"])

    assert server.answered_by == [1, None]
    assert results(events) == ["1500 * 0.2 + 75 = 375"]
    assert output == "1500 * 0.2 + 75 = 375"


def test_the_square_root_step_runs_the_expression_the_model_wrote(server, provider, tool_ctx):
    # Recorded (line 8): the call wrapped in a copied <output step=…> block. The model took the
    # square root of the previous step's result, not of 2025: agentsite runs the call it was
    # given, and its result shows what the model asked for, for the next reply to read.
    server.enqueue_text("The square root is about 20.83.")  # scripted
    context = [("calc1", "Compute 17.5% of 2480", "17.5% of 2480 is 434.")]

    output, events = execute(
        provider,
        tool_ctx,
        "calc2",
        "Use the calculator tool to compute the square root of 2025.",
        ["calculator"],
        context=context,
    )

    assert server.answered_by == [7, None]
    assert results(events) == [f"sqrt(17.5 / 100 * 2480) = {math.sqrt(434)}"]
    assert output == "The square root is about 20.83."


def test_the_write_file_call_writes_the_file(server, provider, tool_ctx) -> None:
    # Recorded (line 9): a fenced write_file call. It now writes the file it names.
    server.enqueue_text("Wrote results.txt.")  # scripted
    instruction = (
        "Use the write_file tool to write the results of calc1 and calc2 into a file named "
        "results.txt."
    )

    output, events = execute(
        provider, tool_ctx, "write_results", instruction, ["write_file"], "writer"
    )

    assert server.answered_by == [8, None]
    assert (tool_ctx.workspace / "results.txt").read_text() == (
        "The result from step 1 is: 17.5\nThe result from step 2 is: 17.5\n"
    )
    assert results(events) == ["wrote 64 bytes to results.txt"]
    assert output == "Wrote results.txt."


def test_a_synthesizer_that_writes_a_call_fails_saying_so(server, provider) -> None:
    # Recorded (line 5): the synthesizer of "Research tea, coffee and mate" answered with a
    # fenced read_file call, which became the run's deliverable. Asked again, it is scripted to
    # answer the same (the recording has no second reply).
    server.enqueue_text('```json\n{"name": "read_file", "arguments": {"path": "tea.txt"}}\n```')
    outputs = [("final_write", "Final Write", "Tea, coffee and mate all hold caffeine.")]

    with pytest.raises(StepFailed) as caught:
        synthesize(provider, "Research tea, coffee and mate, then write a short summary", outputs)

    assert server.answered_by == [4, None]
    assert "it is a tool call written as text" in str(caught.value)


def test_the_synthesizers_echo_and_its_recorded_retry_fail_the_step(server, provider) -> None:
    # Recorded, both (lines 10 and 11): the first reply wrote <output step=…> blocks back, the
    # retry the <task> block; nothing is scripted.
    task = (
        "Compute 17.5% of 2480 and the square root of 2025, then write both results into a file "
        "named results.txt."
    )
    outputs = [("write_results", "Write results into results.txt", "Wrote results.txt.")]

    with pytest.raises(StepFailed) as caught:
        synthesize(provider, task, outputs)

    assert server.answered_by == [9, 10]
    assert str(caught.value) == (
        "the synthesizer wrote the prompt's <task>/<output> structure back instead of a "
        "deliverable, twice"
    )
    assert server.requests[1].body["messages"][-1]["content"].startswith(ECHO_CORRECTION)
    # Asked again held to a JSON deliverable; the recorded retry, free text, echoes all the same.
    assert server.requests[1].body["response_format"]["type"] == "json_schema"


def test_an_auto_route_asks_in_the_prompt_after_the_recorded_text_call(server, tool_ctx) -> None:
    # Recorded (line 7): the fenced call. The route is "#auto": the call is recognised and run,
    # and the follow-up asks for a JSON reply (tools in the prompt, response_format), which
    # is scripted here as llama.cpp's grammar would hold the model to it.
    auto = OpenAICompatProvider(
        "model", make_client(api_key="", base_url=server.base_url), tool_mode="auto"
    )
    server.enqueue_json({"answer": "17.5% of 2480 is 434."})

    output, events = execute(
        auto, tool_ctx, "calc1", "Use the calculator tool to compute 17.5% of 2480.", ["calculator"]
    )

    assert server.answered_by == [6, None]
    assert results(events) == ["17.5 / 100 * 2480 = 434"]
    assert output == "17.5% of 2480 is 434."
    follow_up = server.requests[1].body
    assert "tools" not in follow_up and follow_up["response_format"]["type"] == "json_schema"
    assert follow_up["messages"][-1] == {
        "role": "user",
        "content": "Result of calculator:\n17.5 / 100 * 2480 = 434",
    }


SEED99_SYNTHESIS = TRANSCRIPT.parent / "qwen2.5-coder-1.5b-seed99-synthesis.jsonl"


def test_the_synthesizers_retry_held_to_json_is_a_deliverable() -> None:
    # Recorded (qwen2.5-coder-1.5b-seed99-synthesis.jsonl): seed 99's synthesis asked again on
    # the model. Its first reply hands the prompt's blocks back, as in the opt-in run; the
    # retry, held to {"deliverable": …}, is the sum. Free, the same retry wrote an <output>
    # block back (qwen2.5-coder-1.5b-seed99.jsonl, line 14), and the run failed.
    task = "Compute 1500 * 0.2 + 75 with the calculator and report the result."
    outputs = [
        ("calculation", "Compute 1500 * 0.2 + 75", "1500 * 0.2 + 75 = 375"),
        (
            "final_report",
            "Report the result",
            "File 'output.txt' has been created with the content '375'.",
        ),
    ]
    with ReplayOpenAI(SEED99_SYNTHESIS) as replay:
        model = OpenAICompatProvider("model", make_client(api_key="", base_url=replay.base_url))
        outcome = synthesize(model, task, outputs)

    assert replay.answered_by == [0, 1]
    assert (outcome.output, outcome.model_calls, outcome.warnings) == (
        "Compute 1500 * 0.2 + 75 = 375",
        2,
        [],
    )
    retry = replay.requests[1].body
    assert retry["response_format"]["json_schema"]["schema"]["required"] == ["deliverable"]
