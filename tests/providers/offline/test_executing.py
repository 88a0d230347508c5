"""The offline model as executor: the tool calls it makes and the answers it writes.

Tool calls are checked against the real tools' input schemas."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from planner_ui.providers.base import ModelReply, ModelRequest, ProviderError, ToolResult
from planner_ui.tools import REGISTRY, ToolContext

from .requests import PROVIDER, after_results, executor_request, run_tools

# --- the executor ------------------------------------------------------------------------------


def assert_schema_correct(reply: ModelReply, granted: list[str]) -> None:
    for n, call in enumerate(reply.tool_calls, start=1):
        assert call.id == f"call_{n}"
        assert call.name in granted
        REGISTRY[call.name].parse(call.arguments)  # raises ToolError when wrong


def test_arithmetic_is_sent_to_the_calculator() -> None:
    request = executor_request(
        "Calculate 12*(3+4) and the tip on 1,500 * 0.2.", ["calculator"], role="coder"
    )

    reply = PROVIDER.complete(request)

    assert reply.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", {"expression": "12*(3+4)"}),
        ("calculator", {"expression": "1500 * 0.2"}),
    ]
    assert_schema_correct(reply, ["calculator"])


@pytest.mark.parametrize(
    "text", ["Pages 3-4 of the 2024-05-01 report", "Call 555-1234", "Python 3.11", "top 10 (2024)"]
)
def test_ranges_dates_and_versions_are_not_arithmetic(text: str) -> None:
    reply = PROVIDER.complete(executor_request(f"Research {text}.", ["calculator"]))

    assert reply.tool_calls == []


def test_a_url_is_fetched() -> None:
    reply = PROVIDER.complete(
        executor_request("Fetch https://example.com/a_(b).html.", ["fetch_url"])
    )

    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("fetch_url", {"url": "https://example.com/a_(b).html"})
    ]


def test_an_email_carries_the_material_it_was_given() -> None:
    context = [("summarize", "Summarize the report", "# Q3 in brief\n\nRevenue rose 12% to 4.2M.")]
    request = executor_request(
        "Email the summary to bob@example.com.", ["send_email"], context, role="writer"
    )

    (call,) = PROVIDER.complete(request).tool_calls

    assert call.name == "send_email"
    assert call.arguments["to"] == "bob@example.com"
    assert call.arguments["subject"] == "Q3 in brief"
    assert "Revenue rose 12% to 4.2M." in call.arguments["body"]
    REGISTRY["send_email"].parse(call.arguments)


def test_saving_writes_the_material_to_the_named_file() -> None:
    context = [
        ("paris", "Find the population of Paris", "Paris has about 2.1 million people."),
        ("rome", "Find the population of Rome", "Rome has about 2.8 million people."),
    ]
    request = executor_request("Save it to cities.md.", ["write_file"], context, role="writer")

    (call,) = PROVIDER.complete(request).tool_calls

    assert call.name == "write_file"
    assert call.arguments["path"] == "cities.md"
    assert "Paris has about 2.1 million people." in call.arguments["content"]
    assert "Rome has about 2.8 million people." in call.arguments["content"]


def test_saving_to_a_code_file_saves_the_code_not_the_markdown() -> None:
    context = [("code", "Write the script", "## Result\n\n```python\nprint('hi')\n```\nDone.")]
    request = executor_request("Save it to hello.py.", ["write_file"], context, role="coder")

    (call,) = PROVIDER.complete(request).tool_calls

    assert call.arguments == {"path": "hello.py", "content": "print('hi')\n"}


def test_an_email_without_inputs_carries_the_message() -> None:
    request = executor_request(
        "Email bob@example.com that the demo moved to Friday 3pm.", ["send_email"], role="writer"
    )

    (call,) = PROVIDER.complete(request).tool_calls

    assert "The demo moved to Friday 3pm." in call.arguments["body"]
    REGISTRY["send_email"].parse(call.arguments)


def test_reading_and_listing_files() -> None:
    request = executor_request(
        "List the files in the workspace and read notes.txt.", ["read_file", "list_files"]
    )

    reply = PROVIDER.complete(request)

    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("list_files", {}),
        ("read_file", {"path": "notes.txt"}),
    ]
    assert_schema_correct(reply, ["read_file", "list_files"])


def test_a_tool_that_was_not_granted_is_never_called() -> None:
    instruction = (
        "Fetch https://example.com, work out 2+2, save it to a.md and email bob@example.com."
    )

    reply = PROVIDER.complete(executor_request(instruction, ["calculator"]))

    assert [c.name for c in reply.tool_calls] == ["calculator"]


def test_asked_for_an_answer_only_it_calls_nothing() -> None:
    request = executor_request("Calculate 12*(3+4).", ["calculator"], role="coder")

    reply = PROVIDER.complete(dataclasses.replace(request, tool_choice="none"))

    assert reply.tool_calls == [] and reply.stop_reason == "end_turn" and reply.text


def test_the_tasks_context_section_is_not_acted_on() -> None:
    instruction = (
        "Research Rust.\n\nInputs: work from the output of “Fetch https://example.com”.\n\n"
        "Context: this step is one part of the task “fetch https://example.com and 2+2”."
    )

    reply = PROVIDER.complete(executor_request(instruction, ["fetch_url", "calculator"]))

    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"


def test_with_no_tool_to_call_it_answers_at_once_from_its_inputs() -> None:
    context = [("venues", "Find venues", "- Hub Lisboa seats 30\n- Casa Azul seats 25")]
    request = executor_request("Draft an invitation email.", [], context, role="writer")

    reply = PROVIDER.complete(request)

    assert reply.stop_reason == "end_turn"
    assert reply.tool_calls == []
    assert "Hub Lisboa seats 30" in reply.text and "Casa Azul seats 25" in reply.text


def test_a_researcher_without_sources_says_so_instead_of_inventing() -> None:
    reply = PROVIDER.complete(executor_request("Research Rust.", []))

    assert reply.text.startswith("## Findings: Rust")
    assert "cannot report verified facts about Rust" in reply.text


def test_the_final_answer_uses_the_calculators_result() -> None:
    request = executor_request("What is 12*(3+4)?", ["calculator"], role="coder")
    first = PROVIDER.complete(request)
    ctx = ToolContext(run_id=1, step_id="calc", workspace=Path("/nonexistent"))
    results = [ToolResult(c.id, REGISTRY[c.name].call(c.arguments, ctx)) for c in first.tool_calls]

    final = PROVIDER.complete(after_results(request, first, results))

    assert final.stop_reason == "end_turn"
    assert final.tool_calls == []
    assert "12*(3+4) = 84" in final.text
    assert "**Answer: 84**" in final.text


def test_the_final_answer_quotes_the_fetched_page() -> None:
    request = executor_request("Fetch https://example.com.", ["fetch_url"])
    first = PROVIDER.complete(request)
    page = (
        "HTTP 200 from https://example.com\n\n<html><head><title>Example Domain</title></head>"
        "<body><p>This domain is for use in illustrative examples.</p></body></html>"
    )

    final = PROVIDER.complete(
        after_results(request, first, run_tools(first, {"fetch_url": (page, False)}))
    )

    assert "“Example Domain”" in final.text
    assert "This domain is for use in illustrative examples." in final.text
    assert "Sources: https://example.com" in final.text


def test_the_final_answer_says_what_failed_and_why() -> None:
    request = executor_request(
        "Fetch https://example.com and email it to bob@example.com.",
        ["fetch_url", "send_email"],
        role="writer",
    )
    first = PROVIDER.complete(request)
    outcomes = {
        "fetch_url": ("fetch_url: could not fetch https://example.com: timed out", True),
        "send_email": (
            "send_email is irreversible and this run was not started with auto-approve",
            True,
        ),
    }

    final = PROVIDER.complete(after_results(request, first, run_tools(first, outcomes)))

    assert "Could not fetch https://example.com: fetch_url: could not fetch" in final.text
    assert "The email to bob@example.com was not sent: send_email is irreversible" in final.text


def test_a_sent_email_is_reported() -> None:
    request = executor_request("Email the notes to bob@example.com.", ["send_email"], role="writer")
    first = PROVIDER.complete(request)

    final = PROVIDER.complete(
        after_results(request, first, run_tools(first, {"send_email": ("sent", False)}))
    )

    assert "Sent email to bob@example.com" in final.text


def test_after_one_round_of_results_it_always_finishes() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")
    first = PROVIDER.complete(request)
    second = after_results(request, first, run_tools(first, {"calculator": ("2+2 = 4", False)}))
    # Even a conversation that goes on after the results gets an answer, not more calls.
    third = ModelRequest(
        system=second.system,
        messages=[*second.messages, {"role": "user", "content": "Please finish."}],
        tools=second.tools,
        purpose=second.purpose,
    )

    for request_after in (second, third):
        reply = PROVIDER.complete(request_after)
        assert (reply.stop_reason, reply.tool_calls) == ("end_turn", [])
        assert "2+2 = 4" in reply.text


def test_a_critic_compares_its_inputs() -> None:
    context = [
        ("py", "Research Python", "- Python is dynamically typed\n- Huge library ecosystem"),
        ("go", "Research Go", "- Go is statically typed\n- Compiles to one binary\n- Goroutines"),
    ]
    request = executor_request("Compare Python and Go.", [], context, role="critic")

    text = PROVIDER.complete(request).text

    assert text.startswith("## Assessment: Python and Go")
    assert "### Research Python" in text and "### Research Go" in text
    assert "Only in “Research Go”:" in text and "goroutines" in text
    assert "“Research Go” is backed by the most material (3 points against 2)" in text


def test_an_executor_request_without_an_instruction_is_refused() -> None:
    request = ModelRequest(
        system="", messages=[{"role": "user", "content": "do it"}], purpose="executor:coder"
    )

    with pytest.raises(ProviderError, match="no <instruction> block"):
        PROVIDER.complete(request)
