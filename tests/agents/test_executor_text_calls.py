"""run_step with calls written as text, and with final answers that are no result: a call
recognised in a reply's text goes the way of a native one; garbage is asked for once more,
then fails the step with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from planner_ui.agents.executor import (
    ASKED_MAX_TOKENS,
    CORRECTION_OPENING,
    LOOP_NOTE,
    correction,
    unused_correction,
)
from planner_ui.providers.base import ToolCall, ToolResult
from planner_ui.tools import Tool, ToolContext

from .conftest import ScriptedProvider, reply
from .test_executor import run, step, step_failure

FENCED_CALL = '```json\n{"name": "calculator", "arguments": {"expression": "%s"}}\n```'


def test_a_fenced_call_is_run_like_a_native_one(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider(
        [reply("I will compute it.\n\n" + FENCED_CALL % "6 * 7"), reply("6 * 7 = 42")]
    )

    outcome, events = run(provider, step("calculator"), tool_ctx)

    assert outcome.output == "6 * 7 = 42"
    assert (outcome.model_calls, outcome.tool_calls) == (2, 1)
    (kind, payload), result = events
    assert kind == "step.tool_call"
    call_id = payload["call_id"]
    assert call_id.startswith("text_")
    assert payload == {
        "call_id": call_id,
        "tool": "calculator",
        "arguments": {"expression": "6 * 7"},
        "recognised_in_text": True,
    }
    assert result == (
        "step.tool_result",
        {"call_id": call_id, "tool": "calculator", "content": "6 * 7 = 42", "is_error": False},
    )
    # The history carries the call as a call (so its result can answer it), and the text
    # around it without the call written out a second time.
    assert provider.requests[1].messages[1:] == [
        {
            "role": "assistant",
            "content": "I will compute it.",
            "tool_calls": [ToolCall(call_id, "calculator", {"expression": "6 * 7"})],
        },
        {"role": "tool", "results": [ToolResult(call_id, "6 * 7 = 42", False)]},
    ]


def test_a_native_call_carries_no_flag(tool_ctx: ToolContext) -> None:
    call = ToolCall("n", "calculator", {"expression": "6 * 7"})
    provider = ScriptedProvider([reply("", call), reply("42")])
    _, events = run(provider, step("calculator"), tool_ctx)
    assert "recognised_in_text" not in events[0][1]


def test_tagged_calls_go_through_the_same_runner(tool_ctx: ToolContext) -> None:
    ran: list[tuple[str, dict[str, Any], int]] = []

    def runner(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        ran.append((call.name, call.arguments, iteration))
        return f"ran {call.name}", False

    text = (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}'
        '</tool_call>\n<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}'
        "</tool_call>"
    )
    provider = ScriptedProvider([reply(text), reply("done")])

    outcome, _ = run(provider, step("write_file", "read_file"), tool_ctx, run_tool=runner)

    assert ran == [
        ("write_file", {"path": "a.txt", "content": "x"}, 1),
        ("read_file", {"path": "a.txt"}, 1),
    ]
    assert outcome.tool_calls == 2


def test_an_ungranted_tool_written_as_text_is_refused(tool_ctx: ToolContext) -> None:
    text = '```json\n{"name": "shell", "arguments": {"command": "echo haiku"}}\n```'
    provider = ScriptedProvider([reply(text), reply("Autumn leaves falling")])

    outcome, events = run(provider, step(role="writer"), tool_ctx)

    assert events[1][1]["content"] == (
        "tool 'shell' is not granted to this step; granted tools: none"
    )
    assert events[1][1]["is_error"] is True
    assert outcome.output == "Autumn leaves falling"


def test_arguments_written_as_text_are_validated_against_the_schema(
    tool_ctx: ToolContext,
) -> None:
    text = '{"name": "calculator", "arguments": {"expr": "6 * 7"}}'
    provider = ScriptedProvider([reply(text), reply("42")])
    _, events = run(provider, step("calculator"), tool_ctx)
    assert events[1][1]["content"] == "calculator: invalid arguments: 'expression' field required"


def test_a_malformed_call_is_answered_with_its_parse_error(tool_ctx: ToolContext) -> None:
    text = '```json\n{"name": "calculator", "arguments": {"expression": 6 * 7}}\n```'
    provider = ScriptedProvider([reply(text), reply(FENCED_CALL % "6 * 7"), reply("42")])

    outcome, events = run(provider, step("calculator"), tool_ctx)

    first = events[1][1]
    assert first["is_error"] is True
    assert first["content"].startswith(
        "calculator was not run: the call written in the reply's text was not valid JSON"
    )
    assert events[3][1]["content"] == "6 * 7 = 42"
    assert outcome.output == "42"


def test_report_failure_written_as_text_fails_the_step(tool_ctx: ToolContext) -> None:
    text = '```json\n{"name": "report_failure", "arguments": {"reason": "no such book"}}\n```'
    provider = ScriptedProvider([reply(text)])
    error = step_failure(provider, step("read_file"), tool_ctx)
    assert error == "the executor could not proceed: no such book"


def test_a_call_with_the_descriptions_example_is_not_run(tool_ctx: ToolContext) -> None:
    # Qwen2.5-Coder copied the calculator's example from its schema instead of the step's sum.
    provider = ScriptedProvider(
        [reply(FENCED_CALL % "12 * (3 + 4)"), reply(FENCED_CALL % "1500 * 0.2 + 75"), reply("375")]
    )

    outcome, events = run(
        provider, step("calculator", instruction="Compute 1500 * 0.2 + 75."), tool_ctx
    )

    assert events[1][1] == {
        "call_id": events[0][1]["call_id"],
        "tool": "calculator",
        "content": "calculator was not run: its arguments repeat '12 * (3 + 4)', the example "
        "from the tool's description, which this step was not asked about. Call it with the "
        "values this step needs.",
        "is_error": True,
    }
    assert events[3][1]["content"] == "1500 * 0.2 + 75 = 375"
    assert outcome.output == "375"


def test_the_example_is_the_steps_own_when_its_instruction_names_it(
    tool_ctx: ToolContext,
) -> None:
    provider = ScriptedProvider([reply(FENCED_CALL % "12 * (3 + 4)"), reply("84")])
    _, events = run(provider, step("calculator", instruction="Compute 12 * (3 + 4)."), tool_ctx)
    assert events[1][1]["content"] == "12 * (3 + 4) = 84"


FOREIGN_CALL = '```json\n{"name": "diff", "arguments": {"path1": "a.md", "path2": "b.md"}}\n```'
FOREIGN_PROBLEM = (
    "it is a call to diff written as text, and this step has no such tool (its tools: read_file)"
)


def test_a_call_to_a_tool_nobody_has_is_asked_again_then_fails(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider([reply(FOREIGN_CALL), reply(FOREIGN_CALL)])

    error = step_failure(provider, step("read_file"), tool_ctx)

    assert error == f"the executor's answer was not a result: {FOREIGN_PROBLEM}"
    second = provider.requests[1].messages
    assert second[-2:] == [
        {"role": "assistant", "content": FOREIGN_CALL},
        {"role": "user", "content": correction(FOREIGN_PROBLEM)},
    ]
    assert second[-1]["content"].startswith(CORRECTION_OPENING)
    assert len(provider.requests) == 2


def test_asked_again_a_model_may_give_a_result(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider([reply(FOREIGN_CALL), reply("The two files are the same.")])
    outcome, _ = run(provider, step("read_file"), tool_ctx)
    assert outcome.output == "The two files are the same."
    assert outcome.model_calls == 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '<output step="calc2" title="Square root">\n45\n</output>',
            "it repeats the prompt's own <instruction>, <context> or <output> blocks instead of "
            "giving the step's result",
        ),
        (
            "<instruction>Compute it.</instruction>\n\n42",
            "it repeats the prompt's own <instruction>, <context> or <output> blocks instead of "
            "giving the step's result",
        ),
        (
            "12 * (3 + 4) = 84",
            "it repeats '12 * (3 + 4)', the example from the calculator tool's description, "
            "which this step was not asked about",
        ),
    ],
)
def test_garbage_called_a_result_fails_the_step(
    tool_ctx: ToolContext, text: str, problem: str
) -> None:
    provider = ScriptedProvider([reply(text), reply(text)])
    error = step_failure(
        provider, step("calculator", instruction="Compute 1500 * 0.2 + 75."), tool_ctx
    )
    assert error == f"the executor's answer was not a result: {problem}"


def test_a_failure_marker_after_an_empty_copied_block_is_a_failure(tool_ctx: ToolContext) -> None:
    text = "<tools></tools>\n\n**STEP FAILED: The book is not available online.**"
    provider = ScriptedProvider([reply(text)])
    error = step_failure(provider, step("read_file"), tool_ctx)
    assert error == "the executor could not proceed: The book is not available online."


def test_a_result_that_quotes_json_is_still_a_result(tool_ctx: ToolContext) -> None:
    text = 'The API answered:\n\n```json\n{"name": "Alice", "age": 3}\n```\n\nShe is three.'
    provider = ScriptedProvider([reply(text)])
    outcome, _ = run(provider, step("read_file"), tool_ctx)
    assert outcome.output == text


def test_a_call_cut_off_at_the_limit_fails_as_a_cut_off_answer(tool_ctx: ToolContext) -> None:
    text = '```json\n{"name": "write_file", "arguments": {"path": "a.md", "content": "# Lo'
    provider = ScriptedProvider([reply(text, stop_reason="max_tokens")])
    error = step_failure(provider, step("write_file"), tool_ctx)
    assert error == "the model's answer was cut off at its max_tokens limit"


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_the_history_of_a_recognised_call_is_valid_for_each_vendor(
    tool_ctx: ToolContext, vendor: str
) -> None:
    """The follow-up request carries the call and its result the way each API demands (the
    fakes refuse a result that answers no call, and a call left unanswered)."""
    from planner_ui.providers import anthropic, openai_compat
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI() if vendor == "openai" else FakeAnthropic()
    with fake as server:
        if vendor == "openai":
            client = openai_compat.make_client(
                api_key="test-key", base_url=server.base_url, max_retries=0
            )
            model: Any = openai_compat.OpenAICompatProvider("qwen", client)
        else:
            client = anthropic.make_client(
                api_key="test-key", base_url=server.base_url, max_retries=0
            )
            model = anthropic.AnthropicProvider("claude-haiku-5-5", client)
        server.enqueue_text('<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}')
        server.enqueue_text("42")

        outcome, events = run(model, step("calculator"), tool_ctx)

    assert outcome.output == "42"
    assert events[1][1]["content"] == "6*7 = 42"
    assert len(server.requests) == 2


def test_an_answer_wrapped_in_an_output_block_is_the_answer_inside(tool_ctx: ToolContext) -> None:
    # Seen from Qwen2.5-Coder-1.5B: its result written the way the prompt shows outputs.
    provider = ScriptedProvider([reply(FENCED_CALL % "6 * 7"), reply("<output>42</output>")])
    outcome, _ = run(provider, step("calculator"), tool_ctx)
    assert outcome.output == "42"
    assert outcome.model_calls == 2  # taken as it is, not asked for again


def test_the_same_read_again_is_answered_with_its_result_not_run(tool_ctx: ToolContext) -> None:
    # Seen from Qwen2.5-Coder-1.5B: the same calculator call turn after turn, to the step's cap.
    same = ToolCall("a", "calculator", {"expression": "6 * 7"})
    again = ToolCall("b", "calculator", {"expression": "6 * 7"})
    other = ToolCall("c", "calculator", {"expression": "6 * 8"})
    provider = ScriptedProvider(
        [reply("", same), reply("", again), reply("", other), reply("42 and 48")]
    )

    outcome, events = run(provider, step("calculator"), tool_ctx)

    assert outcome.output == "42 and 48"
    results = [payload for kind, payload in events if kind == "step.tool_result"]
    assert [(r["call_id"], r["is_error"]) for r in results] == [
        ("a", False),
        ("b", True),
        ("c", False),
    ]
    assert results[1]["content"] == (
        "calculator was not run again: this step called it with the same arguments in its last "
        "turn, and its result was:\n6 * 7 = 42\nUse that result: reply with the step's result "
        "now, or make a different call."
    )


def test_a_third_identical_call_is_refused_as_a_repeat_not_failed_as_a_failure(
    tool_ctx: ToolContext,
) -> None:
    # Seed 42 of the opt-in run: the calculator answered 375, the same call came twice more,
    # and the step failed saying the calculator had failed three times in a row.
    calls = [ToolCall(n, "calculator", {"expression": "6 * 7"}) for n in "abcd"]
    provider = ScriptedProvider([*(reply("", c) for c in calls), reply("42")])

    outcome, events = run(provider, step("calculator"), tool_ctx)

    assert outcome.output == "42"
    results = [payload for kind, payload in events if kind == "step.tool_result"]
    assert [r["is_error"] for r in results] == [False, True, True, True]
    refused = (
        "calculator was not run again: this step called it with the same arguments in its last "
        "turn, and its result was:\n6 * 7 = 42\nUse that result: reply with the step's result "
        "now, or make a different call."
    )
    assert [r["content"] for r in results[1:]] == [refused, refused, refused]


def test_a_read_that_failed_is_not_made_again_with_the_same_arguments(tool_ctx) -> None:
    # As Qwen2.5-Coder-1.5B asked for a file that is not there, six times over.
    missing = ToolCall("a", "read_file", {"path": "calculator.txt"})
    again = ToolCall("b", "read_file", {"path": "calculator.txt"})
    provider = ScriptedProvider([reply("", missing), reply("", again), reply("No such file.")])

    outcome, events = run(provider, step("read_file"), tool_ctx)

    assert outcome.output == "No such file."
    results = [payload for kind, payload in events if kind == "step.tool_result"]
    assert results[0]["content"] == "read_file: no file 'calculator.txt' in the workspace"
    assert results[1]["content"] == (
        "read_file was not run again: this step made the same call in its last turn, and it "
        "failed:\nread_file: no file 'calculator.txt' in the workspace\nThe same arguments fail "
        "the same way. Change them, use another tool, or call report_failure with the reason."
    )


def test_a_read_that_keeps_failing_the_same_way_fails_the_step_at_once(tool_ctx) -> None:
    # Qwen2.5-Coder-1.5B, granted read_file "to read the calculator", asked for the missing
    # file again after being told it would fail the same way, to the step's cap of 8 calls.
    calls = [ToolCall(i, "read_file", {"path": "calculator.txt"}) for i in "abcdefgh"]
    provider = ScriptedProvider([reply("", call) for call in calls])

    failure = step_failure(provider, step("read_file"), tool_ctx)

    assert failure == (
        "the executor called read_file with the same arguments 3 times in a row, and it "
        "failed: read_file: no file 'calculator.txt' in the workspace"
    )
    assert len(provider.requests) == 3  # not the cap's 8


def test_a_failed_read_made_again_after_another_call_is_run(tool_ctx) -> None:
    # Only a streak counts: a call in between that changed something starts it over.
    missing = ToolCall("a", "read_file", {"path": "notes.txt"})
    write = ToolCall("b", "write_file", {"path": "notes.txt", "content": "hello"})
    again = ToolCall("c", "read_file", {"path": "notes.txt"})
    provider = ScriptedProvider(
        [reply("", missing), reply("", write), reply("", again), reply("It says hello.")]
    )

    outcome, events = run(provider, step("read_file", "write_file"), tool_ctx)

    assert outcome.output == "It says hello."
    results = [payload for kind, payload in events if kind == "step.tool_result"]
    assert [r["is_error"] for r in results] == [True, False, False]
    assert results[2]["content"] == "hello"


# --- asked to use a tool, answered without it --------------------------------------------------

SUM = "Compute 1500 * 0.2 + 75 with the calculator."


def test_an_answer_without_the_tool_its_instruction_names_is_asked_again(
    tool_ctx: ToolContext,
) -> None:
    # Qwen2.5-Coder-1.5B wrote 305.0 for this sum, calling nothing, and the run succeeded.
    call = ToolCall("c", "calculator", {"expression": "1500 * 0.2 + 75"})
    provider = ScriptedProvider([reply("305.0"), reply("", call), reply("375")])

    outcome, events = run(provider, step("calculator", instruction=SUM), tool_ctx)

    assert provider.requests[1].messages[-2:] == [
        {"role": "assistant", "content": "305.0"},
        {"role": "user", "content": unused_correction(["calculator"])},
    ]
    assert events[1][1]["content"] == "1500 * 0.2 + 75 = 375"
    assert (outcome.output, outcome.warnings) == ("375", [])


def test_the_ask_to_use_the_tool_says_to_call_it_not_to_answer_again() -> None:
    # The general correction ("call a tool if you need one, otherwise reply with the result")
    # left Qwen2.5-Coder-1.5B (seed 23) nothing to do but give up.
    asked = unused_correction(["calculator"])
    assert asked == (
        "This step's instruction says to use calculator, and you answered without calling it. "
        "Call calculator now with the values this step needs, and reply with the step's "
        "result from what it returns."
    )
    assert "otherwise" not in asked


UNUSED_WARNING = (
    "answered without calculator, which its instruction says to use: the result is the "
    "model's own, not the tool's"
)


@pytest.mark.parametrize(
    "gives_up",
    [
        # As Qwen2.5-Coder-1.5B answered the ask, on seed 23 of the opt-in run.
        reply("STEP FAILED: The instruction requires using the calculator, but I did not call it."),
        reply("", ToolCall("f", "report_failure", {"reason": "I did not call the calculator"})),
    ],
)
def test_giving_up_when_asked_to_use_the_tool_leaves_the_answer_with_a_warning(
    tool_ctx: ToolContext, gives_up: Any
) -> None:
    provider = ScriptedProvider([reply("<output>375.0</output>"), gives_up])

    outcome, events = run(provider, step("calculator", instruction=SUM), tool_ctx)

    assert (outcome.output, outcome.warnings) == ("375.0", [UNUSED_WARNING])
    assert [kind for kind, _ in events] == [
        "step.tool_call" for _ in range(len(gives_up.tool_calls))
    ]
    assert outcome.model_calls == 2


def test_giving_up_after_a_call_made_when_asked_fails_the_step(tool_ctx: ToolContext) -> None:
    # Once the tool ran, a give-up is about what it returned: the step fails with the reason.
    call = ToolCall("c", "calculator", {"expression": "1500 * 0.2 +"})
    provider = ScriptedProvider(
        [reply("375.0"), reply("", call), reply("STEP FAILED: the calculator said no")]
    )
    failure = step_failure(provider, step("calculator", instruction=SUM), tool_ctx)
    assert failure == "the executor could not proceed: the calculator said no"


def test_giving_up_without_having_been_asked_fails_the_step(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider([reply("STEP FAILED: no such number")])
    failure = step_failure(provider, step("calculator", instruction=SUM), tool_ctx)
    assert failure == "the executor could not proceed: no such number"


def test_an_answer_that_still_calls_nothing_stands_with_a_warning(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider([reply("375.0"), reply("375.0")])

    outcome, events = run(provider, step("calculator", instruction=SUM), tool_ctx)

    assert events == []
    assert outcome.output == "375.0"
    assert outcome.warnings == [UNUSED_WARNING]


def test_a_tool_granted_but_not_named_may_go_unused(tool_ctx: ToolContext) -> None:
    # "Python" the language is not "the python tool"; nor is a granted tool an obligation.
    provider = ScriptedProvider([reply("Both are fine.")])
    outcome, _ = run(
        provider, step("calculator", instruction="Compare Python and Go in one line."), tool_ctx
    )
    assert (outcome.output, outcome.warnings, len(provider.requests)) == ("Both are fine.", [], 1)


# --- a write made again, a loop of refused repeats, every named tool -----------------------------


def test_the_same_write_again_is_answered_with_its_result_not_made(tool_ctx: ToolContext) -> None:
    # Seed 99 of the opt-in run: write_file with the same path and content seven times over,
    # each one made, until the step's last turn.
    writes = [ToolCall(n, "write_file", {"path": "out.txt", "content": "375"}) for n in "ab"]
    ran: list[str] = []

    def runner(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        ran.append(call.id)
        return "wrote 3 bytes to out.txt", False

    provider = ScriptedProvider([*(reply("", w) for w in writes), reply("Saved 375 to out.txt.")])

    outcome, events = run(provider, step("write_file"), tool_ctx, run_tool=runner)

    assert outcome.output == "Saved 375 to out.txt."
    assert ran == ["a"]
    results = [payload for kind, payload in events if kind == "step.tool_result"]
    assert results[1]["content"] == (
        "write_file was not run again: this step called it with the same arguments in its last "
        "turn, and its result was:\nwrote 3 bytes to out.txt\nUse that result: reply with the "
        "step's result now, or make a different call."
    )


def test_a_write_with_other_content_is_made(tool_ctx: ToolContext) -> None:
    first = ToolCall("a", "write_file", {"path": "out.txt", "content": "300"})
    fixed = ToolCall("b", "write_file", {"path": "out.txt", "content": "375"})
    provider = ScriptedProvider([reply("", first), reply("", fixed), reply("Saved.")])

    run(provider, step("write_file"), tool_ctx)

    assert (tool_ctx.workspace / "out.txt").read_text() == "375"


def test_an_irreversible_call_made_again_still_goes_to_its_runner(tool_ctx: ToolContext) -> None:
    # A send is the gate's and the outbox's to judge (a second message may be meant): never
    # answered from the step's own history.
    post = {"url": "https://example.org/hook", "body": "375"}
    calls = [ToolCall(n, "http_post", post) for n in "ab"]
    ran: list[str] = []

    def runner(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        ran.append(call.id)
        return "HTTP 200", False

    provider = ScriptedProvider([*(reply("", c) for c in calls), reply("Posted.")])

    run(provider, step("http_post"), tool_ctx, run_tool=runner)

    assert ran == ["a", "b"]


def test_a_refused_repeat_made_again_is_held_to_an_answer_at_once(tool_ctx: ToolContext) -> None:
    # Seed 42 of the opt-in run: the calculator's 375 in hand, the same call again after each
    # refusal, until the step's last turn; the turns in between bought nothing.
    calls = [ToolCall(n, "calculator", {"expression": "6 * 7"}) for n in "abc"]
    provider = ScriptedProvider([*(reply("", c) for c in calls), reply("42")])

    outcome, _ = run(provider, step("calculator"), tool_ctx)

    assert (outcome.output, outcome.model_calls) == ("42", 4)
    assert [r.tool_choice for r in provider.requests] == ["auto", "auto", "auto", "none"]
    assert provider.requests[3].system.endswith(LOOP_NOTE)
    assert LOOP_NOTE not in provider.requests[2].system


def test_one_refused_repeat_leaves_the_model_free(tool_ctx: ToolContext) -> None:
    same = [ToolCall(n, "calculator", {"expression": "6 * 7"}) for n in "ab"]
    other = ToolCall("c", "calculator", {"expression": "6 * 8"})
    provider = ScriptedProvider([*(reply("", c) for c in same), reply("", other), reply("42, 48")])

    outcome, _ = run(provider, step("calculator"), tool_ctx)

    assert outcome.output == "42, 48"
    assert {r.tool_choice for r in provider.requests} == {"auto"}


SUM_TO_FILE = (
    "Compute 1500 * 0.2 + 75 with the calculator and save it to result.txt with write_file."
)


def test_a_named_tool_left_uncalled_after_another_is_asked_for(tool_ctx: ToolContext) -> None:
    # The calculator called, the file the next step reads never written: asked once for it.
    calc = ToolCall("c", "calculator", {"expression": "1500 * 0.2 + 75"})
    write = ToolCall("w", "write_file", {"path": "result.txt", "content": "375"})
    provider = ScriptedProvider(
        [reply("", calc), reply("375"), reply("", write), reply("375, saved to result.txt")]
    )

    outcome, _ = run(provider, step("calculator", "write_file", instruction=SUM_TO_FILE), tool_ctx)

    assert provider.requests[2].messages[-1] == {
        "role": "user",
        "content": unused_correction(["write_file"]),
    }
    assert (tool_ctx.workspace / "result.txt").read_text() == "375"
    assert (outcome.output, outcome.warnings) == ("375, saved to result.txt", [])


def test_a_named_tool_still_uncalled_is_warned_about_as_undone(tool_ctx: ToolContext) -> None:
    calc = ToolCall("c", "calculator", {"expression": "1500 * 0.2 + 75"})
    provider = ScriptedProvider([reply("", calc), reply("375"), reply("375")])

    outcome, _ = run(provider, step("calculator", "write_file", instruction=SUM_TO_FILE), tool_ctx)

    assert outcome.output == "375"
    assert outcome.warnings == [
        "answered without calling write_file, which its instruction says to use: what it was "
        "to do with it is not done"
    ]


def test_the_reply_to_the_ask_is_held_to_a_call_of_the_named_tool(tool_ctx: ToolContext) -> None:
    call = ToolCall("c", "calculator", {"expression": "1500 * 0.2 + 75"})
    provider = ScriptedProvider([reply("375.0"), reply("", call), reply("375")])

    run(provider, step("calculator", "write_file", instruction=SUM), tool_ctx)

    held = [(r.required_tools, r.max_tokens) for r in provider.requests]
    assert held == [((), 4096), (("calculator",), ASKED_MAX_TOKENS), ((), 4096)]


def test_a_named_tool_a_person_must_see_is_asked_for_but_not_held(tool_ctx: ToolContext) -> None:
    provider = ScriptedProvider([reply("Here is the summary."), reply("Here is the summary.")])
    instruction = "Summarise the results and send them with http_post."

    outcome, _ = run(provider, step("http_post", instruction=instruction), tool_ctx)

    assert provider.requests[1].messages[-1]["content"] == unused_correction(["http_post"])
    assert provider.requests[1].required_tools == ()
    assert outcome.warnings


def test_a_reply_to_the_ask_cut_off_at_its_limit_leaves_the_answer(tool_ctx: ToolContext) -> None:
    # Held to a call with a call's room, a model that runs on is not a failed step: the ask
    # was ours, and the answer it asked about stands with its warning.
    cut = reply(
        '{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1500 *',
        stop_reason="max_tokens",
    )
    provider = ScriptedProvider([reply("375.0"), cut])

    outcome, _ = run(provider, step("calculator", instruction=SUM), tool_ctx)

    assert (outcome.output, outcome.warnings) == ("375.0", [UNUSED_WARNING])


def test_a_native_call_cut_off_twice_when_asked_leaves_the_answer(tool_ctx: ToolContext) -> None:
    cut = ToolCall("c", "calculator", {}, parse_error="unterminated string")
    provider = ScriptedProvider(
        [
            reply("375.0"),
            reply("", cut, stop_reason="max_tokens"),
            reply("", cut, stop_reason="max_tokens"),
        ]
    )

    outcome, _ = run(provider, step("calculator", instruction=SUM), tool_ctx)

    assert (outcome.output, outcome.warnings) == ("375.0", [UNUSED_WARNING])


def test_a_step_told_to_save_a_file_is_asked_for_the_write(tool_ctx: ToolContext) -> None:
    # Seed 42 of the opt-in run: the calculator called (and called again), 375 answered, and
    # result.txt never written; the next step's read of it failed through two re-plans.
    instruction = (
        "Evaluate 1500 * 0.2 + 75 with the calculator tool. Save the result as a file named "
        "'result.txt'."
    )
    calc = ToolCall("c", "calculator", {"expression": "1500 * 0.2 + 75"})
    write = ToolCall("w", "write_file", {"path": "result.txt", "content": "375"})
    provider = ScriptedProvider([reply("", calc), reply("375"), reply("", write), reply("375")])

    outcome, _ = run(
        provider, step("read_file", "write_file", "calculator", instruction=instruction), tool_ctx
    )

    assert provider.requests[2].messages[-1]["content"] == unused_correction(["write_file"])
    assert provider.requests[2].required_tools == ("write_file",)
    assert (tool_ctx.workspace / "result.txt").read_text() == "375"
    assert (outcome.output, outcome.warnings) == ("375", [])
