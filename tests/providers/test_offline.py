"""The offline provider as planner, executor and synthesizer.

Requests are built the way the brief defines the formats (HTML-escaped blocks); one test at the
end checks the same against planner_ui.agents.prompts, which builds them for real. Tool calls are
checked against the real tools' input schemas, and the end-to-end test runs the real calculator
and file tools in a temporary workspace.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_ui.core import dag
from planner_ui.core.dag import ready_steps, topological_order
from planner_ui.core.errors import ToolError
from planner_ui.core.plan import MAX_STEPS, SYNTHESIS_STEP_ID, Plan
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import ModelReply, ModelRequest, ProviderError, ToolResult
from planner_ui.providers.offline import OfflineProvider
from planner_ui.tools import REGISTRY, ToolContext

KNOWN_TOOLS = {"calculator", "read_file", "write_file", "list_files", "fetch_url", "send_email"}
PROVIDER = OfflineProvider()


# --- building requests -------------------------------------------------------------------------


def planner_request(task: str, tools: set[str] = KNOWN_TOOLS) -> ModelRequest:
    listing = "\n".join(f"{name}: {REGISTRY[name].description}" for name in sorted(tools))
    content = (
        f"<task>\n{html.escape(task, quote=False)}\n</task>\n\n"
        f"Tools the steps may be granted:\n<tools>\n{listing}\n</tools>"
    )
    return ModelRequest(
        system="You are the planner.",
        messages=[{"role": "user", "content": content}],
        purpose="planner",
    )


def plan_for(task: str, tools: set[str] = KNOWN_TOOLS) -> Plan:
    reply = PROVIDER.complete(planner_request(task, tools))
    assert reply.stop_reason == "end_turn"
    assert reply.tool_calls == []
    return validate_plan(parse_plan_json(reply.text), known_tools=tools)


def output_block(step_id: str, title: str, text: str) -> str:
    return (
        f'<output step="{html.escape(step_id)}" title="{html.escape(title)}">\n'
        f"{html.escape(text, quote=False)}\n</output>"
    )


def executor_request(
    instruction: str,
    tools: list[str],
    context: list[tuple[str, str, str]] | None = None,
    role: str = "researcher",
) -> ModelRequest:
    content = f"<instruction>\n{html.escape(instruction, quote=False)}\n</instruction>"
    if context:
        blocks = "\n".join(output_block(*c) for c in context)
        content += f"\n\nOutputs of the steps this one depends on:\n<context>\n{blocks}\n</context>"
    return ModelRequest(
        system=f"You are a {role}.",
        messages=[{"role": "user", "content": content}],
        tools=[REGISTRY[name].spec() for name in tools],
        purpose=f"executor:{role}",
    )


def after_results(
    request: ModelRequest, reply: ModelReply, results: list[ToolResult]
) -> ModelRequest:
    messages = [
        *request.messages,
        {"role": "assistant", "content": reply.text, "tool_calls": list(reply.tool_calls)},
        {"role": "tool", "results": results},
    ]
    return ModelRequest(
        system=request.system, messages=messages, tools=request.tools, purpose=request.purpose
    )


def synthesizer_request(task: str, outputs: list[tuple[str, str, str]]) -> ModelRequest:
    blocks = "\n".join(output_block(*o) for o in outputs)
    task_text = html.escape(task, quote=False)
    content = f"<task>\n{task_text}\n</task>\n\nStep outputs, in plan order:\n{blocks}"
    return ModelRequest(
        system="You are the synthesizer.",
        messages=[{"role": "user", "content": content}],
        purpose="synthesizer",
    )


def assert_parallel(plan: Plan, ids: list[str]) -> None:
    """No step among `ids` depends, even indirectly, on another of them."""
    deps = plan.dependencies()
    for step_id in ids:
        overlap = dag.ancestors(deps, step_id) & set(ids)
        assert not overlap, f"{step_id} depends on {overlap}"


def steps_with(plan: Plan, tool: str) -> list[str]:
    return [s.id for s in plan.steps if tool in s.tools]


# --- the planner: shapes ------------------------------------------------------------------


def test_an_enumeration_becomes_parallel_steps_joined_by_a_writer() -> None:
    plan = plan_for(
        "Prepare our team offsite:\n"
        "1. Research the history of Lisbon\n"
        "2. Find three venues in Lisbon for 25 people\n"
        "3. Calculate the catering budget: 25 * 40 + 300\n"
    )

    *items, join = plan.steps
    assert len(items) == 3
    assert_parallel(plan, [s.id for s in items])
    assert join.role == "writer"
    assert set(join.depends_on) == {s.id for s in items}
    assert "Lisbon" in items[0].instruction and "history" in items[0].instruction
    assert items[2].role == "coder"
    assert items[2].tools == ["calculator"]
    assert "25 * 40 + 300" in items[2].instruction


def test_enumeration_items_that_say_then_wait_for_the_items_before() -> None:
    plan = plan_for(
        "- Research solar power\n- Research wind power\n- Then compare them\n"
        "- Write a one-page report"
    )

    solar, wind, compare, report = plan.steps
    assert_parallel(plan, [solar.id, wind.id])
    assert set(compare.depends_on) == {solar.id, wind.id}
    assert compare.role == "critic"
    assert report.depends_on == [compare.id]
    assert report.role == "writer"


def test_a_closing_writing_item_is_the_join() -> None:
    plan = plan_for(
        "1. Find three venues in Lisbon\n2. Estimate the catering cost: 25 * 40\n"
        "3. Draft an invitation email"
    )

    venues, catering, invitation = plan.steps
    assert_parallel(plan, [venues.id, catering.id])
    assert invitation.role == "writer"
    assert set(invitation.depends_on) == {venues.id, catering.id}


def test_bare_items_take_their_verb_and_effect_from_the_line_before() -> None:
    plan = plan_for(
        "For each of these cities, find the population and email the list to bob@example.com:\n"
        "- Paris\n- Berlin\n- Rome"
    )

    *cities, join = plan.steps
    assert [
        ("population" in s.instruction, city in s.instruction)
        for s, city in zip(cities, ["Paris", "Berlin", "Rome"], strict=True)
    ] == [(True, True)] * 3
    assert all(s.tools == [] for s in cities)
    assert set(join.depends_on) == {s.id for s in cities}
    assert join.tools == ["send_email"]
    assert "bob@example.com" in join.instruction


@pytest.mark.parametrize(
    "task",
    [
        "Fetch https://example.com/q3.html, then summarize it, then email the summary to "
        "bob@example.com",
        "First fetch https://example.com/q3.html; then summarize it. Finally email the summary "
        "to bob@example.com.",
        "Fetch https://example.com/q3.html and then summarize it and email the summary to "
        "bob@example.com",
        "Fetch https://example.com/q3.html, summarize it, then email the summary to "
        "bob@example.com",
    ],
)
def test_a_sequence_becomes_a_chain(task: str) -> None:
    plan = plan_for(task)

    fetch, summarize, email = plan.steps
    assert fetch.depends_on == []
    assert summarize.depends_on == [fetch.id]
    assert email.depends_on == [summarize.id]
    assert (fetch.tools, summarize.tools, email.tools) == (["fetch_url"], [], ["send_email"])
    assert "https://example.com/q3.html" in fetch.instruction
    assert "bob@example.com" in email.instruction
    assert summarize.role == "writer"


def test_side_by_side_actions_run_in_parallel_and_then_waits_for_them_all() -> None:
    plan = plan_for(
        "Fetch https://example.com/q3.html, calculate 12*(3+4), then write a short report "
        "and save it to report.md"
    )

    fetch, calculate, write, save = plan.steps
    assert_parallel(plan, [fetch.id, calculate.id])
    assert (fetch.tools, calculate.tools) == (["fetch_url"], ["calculator"])
    assert set(write.depends_on) == {fetch.id, calculate.id}
    assert save.depends_on == [write.id]
    assert save.tools == ["write_file"]


def test_a_leading_phrase_is_not_split_off_its_action() -> None:
    plan = plan_for("In Lisbon, find three venues for 25 people")

    assert "In Lisbon, find three venues" in plan.steps[0].instruction


@pytest.mark.parametrize(
    ("task", "sides", "qualifier"),
    [
        (
            "Compare PostgreSQL and MySQL for a small web app",
            ["PostgreSQL", "MySQL"],
            "small web app",
        ),
        ("compare Django with Flask", ["Django", "Flask"], ""),
        ("Python vs. Go: which is better for CLI tools?", ["Python", "Go"], "CLI tools"),
        ("Rust versus C++ for embedded work", ["Rust", "C++"], "embedded work"),
        ("Should I use React or Vue for a dashboard?", ["React", "Vue"], "dashboard"),
    ],
)
def test_a_comparison_researches_each_side_then_compares_then_writes(
    task: str, sides: list[str], qualifier: str
) -> None:
    plan = plan_for(task)

    *research, compare, write = plan.steps
    assert [s.role for s in research] == ["researcher"] * len(sides)
    assert [s.title for s in research] == [f"Research {side}" for side in sides]
    assert_parallel(plan, [s.id for s in research])
    assert compare.role == "critic"
    assert set(compare.depends_on) == {s.id for s in research}
    assert write.role == "writer"
    assert write.depends_on == [compare.id]
    for step, side in zip(research, sides, strict=True):
        assert side in step.instruction and qualifier in step.instruction


@pytest.mark.parametrize(
    ("task", "items"),
    [
        ("Research Python, Go and Rust", ["Python", "Go", "Rust"]),
        ("research Python, Go, and Rust for web development", ["Python", "Go", "Rust"]),
        (
            "Summarize the French and the German election results",
            ["the French election results", "the German election results"],
        ),
        (
            "Find the population of Paris, Berlin and Rome",
            ["population of Paris", "population of Berlin", "population of Rome"],
        ),
    ],
)
def test_a_list_under_a_verb_fans_out_and_joins(task: str, items: list[str]) -> None:
    plan = plan_for(task)

    *branches, join = plan.steps
    assert len(branches) == len(items)
    assert_parallel(plan, [s.id for s in branches])
    for step, item in zip(branches, items, strict=True):
        assert item in step.instruction
    assert join.role == "writer"
    assert set(join.depends_on) == {s.id for s in branches}


def test_shared_words_of_a_list_reach_every_item() -> None:
    plan = plan_for("research Python, Go and Rust for web development")

    assert all("for web development" in s.instruction for s in plan.steps[:3])


def test_an_idiom_is_not_split_into_a_list() -> None:
    plan = plan_for("Summarize the pros and cons of remote work")

    assert len(plan.steps) == 2
    assert "pros and cons of remote work" in plan.steps[-1].instruction


def test_a_list_followed_by_an_effect_saves_after_the_join() -> None:
    plan = plan_for("Find the population of Paris, Berlin and Rome and save it to cities.md")

    *cities, save = plan.steps
    assert len(cities) == 3
    assert set(save.depends_on) == {s.id for s in cities}
    assert save.tools == ["write_file"]
    assert "cities.md" in save.instruction


def test_a_calculation_goes_to_a_coder_with_the_expression() -> None:
    plan = plan_for("What is 12*(3+4)?")

    compute, write = plan.steps
    assert compute.role == "coder"
    assert compute.tools == ["calculator"]
    assert "12*(3+4)" in compute.instruction
    assert write.role == "writer"
    assert write.depends_on == [compute.id]
    assert write.tools == []


def test_a_percentage_is_a_calculation() -> None:
    plan = plan_for("How much is 15% of 240?")

    assert plan.steps[0].tools == ["calculator"]


def test_a_url_is_fetched_by_the_step_that_gathers_not_by_the_writer() -> None:
    plan = plan_for("Summarize https://example.com/post.html")

    gather, write = plan.steps
    assert gather.tools == ["fetch_url"]
    assert "https://example.com/post.html" in gather.instruction
    assert write.role == "writer"
    assert write.tools == []
    assert write.depends_on == [gather.id]


def test_an_email_is_sent_after_the_draft_it_sends() -> None:
    plan = plan_for("Draft a short project update and email it to alice@example.com")

    draft, email = plan.steps
    assert draft.role == "writer" and draft.tools == []
    assert email.depends_on == [draft.id]
    assert email.tools == ["send_email"]
    assert "alice@example.com" in email.instruction


def test_an_address_alone_does_not_grant_sending_mail() -> None:
    plan = plan_for("Find out which company runs the address info@example.org")

    assert steps_with(plan, "send_email") == []


def test_the_address_given_elsewhere_in_the_task_reaches_the_email_step() -> None:
    plan = plan_for("My address is carol@example.com. Research Lisbon, then email it to me.")

    (email,) = [s for s in plan.steps if "send_email" in s.tools]
    assert "carol@example.com" in email.instruction.split("\n\n")[0]


def test_saving_without_a_file_name_gets_a_concrete_one() -> None:
    plan = plan_for("Research the Lisbon metro, then save the notes to a file")

    (save,) = [s for s in plan.steps if "write_file" in s.tools]
    directive = save.instruction.split("\n\n")[0]
    assert directive.endswith(".md.")


def test_reading_a_file_grants_read_file() -> None:
    plan = plan_for("Read notes.txt and summarize it")

    read, summarize = plan.steps
    assert read.tools == ["read_file"] and "notes.txt" in read.instruction
    assert summarize.depends_on == [read.id]


def test_only_tools_offered_in_the_request_are_granted() -> None:
    plan = plan_for(
        "Fetch https://example.com, then calculate 2^10, then email it to bob@example.com",
        tools={"calculator"},
    )

    assert [s.tools for s in plan.steps] == [[], ["calculator"], []]
    assert "https://example.com" in plan.steps[0].instruction


def test_a_repair_request_gets_a_fresh_valid_plan() -> None:
    first = planner_request("Research Python, Go and Rust")
    repair = ModelRequest(
        system=first.system,
        messages=[
            *first.messages,
            {"role": "assistant", "content": '{"steps": []}'},
            {"role": "user", "content": "That plan is invalid:\n- the plan has no steps"},
        ],
        purpose="planner",
    )

    reply = PROVIDER.complete(repair)

    assert validate_plan(parse_plan_json(reply.text), known_tools=KNOWN_TOOLS).steps
    assert reply.text == PROVIDER.complete(first).text


def test_a_huge_enumeration_stays_within_the_step_limit() -> None:
    task = "\n".join(f"{n}. Research city number {n}" for n in range(1, 151))

    plan = plan_for(task)

    assert len(plan.steps) <= MAX_STEPS
    assert "city number 150" in " ".join(s.instruction for s in plan.steps)


def test_a_join_over_many_long_items_keeps_its_instruction_within_the_limit() -> None:
    long_item = "Research the full history, present state and future outlook of the harbour of city"
    task = "\n".join(f"- {long_item} {n}, with figures" for n in range(1, MAX_STEPS))

    plan = plan_for(task)

    assert len(plan.steps) == MAX_STEPS
    assert set(plan.steps[-1].depends_on) == {s.id for s in plan.steps[:-1]}


REALISTIC_TASKS = [
    "Plan an offsite:\n1. Find three venues in Lisbon\n2. Calculate 25 * 40\n3. Draft an invite",
    "Fetch https://example.com, then summarize it, then email the summary to bob@example.com",
    "Compare PostgreSQL and MySQL for a small web app",
    "Research Python, Go and Rust",
    "What is 12*(3+4)?",
    "Summarize https://example.com/post.html",
    "Draft a short project update and email it to alice@example.com",
    "I'm visiting Tokyo next week. What will the weather be like?",
    "Write a Python script that prints the first 10 Fibonacci numbers and save it to fib.py",
    "Write a haiku about autumn",
    "Research the synthesis of aspirin",
    "List the files in the workspace and read report.md",
]


@pytest.mark.parametrize("task", REALISTIC_TASKS)
def test_ids_are_short_unique_slugs_and_never_the_reserved_one(task: str) -> None:
    plan = plan_for(task)

    ids = [s.id for s in plan.steps]
    assert len(set(ids)) == len(ids)
    assert SYNTHESIS_STEP_ID not in ids
    assert all(len(s.title) <= 120 for s in plan.steps)
    assert plan.goal


@pytest.mark.parametrize("task", REALISTIC_TASKS)
def test_every_instruction_says_which_task_it_belongs_to(task: str) -> None:
    plan = plan_for(task)

    assert all("Context: this step is one part of the task" in s.instruction for s in plan.steps)


WORDS = st.sampled_from(
    [
        "research", "compare", "and", "then", ",", "vs", "Python", "Go", "12*(3+4)", "save",
        "report.md", "email", "bob@example.com", "https://example.com/a", "\n1.", "\n-", "first",
        "finally", ";", "of", "the", "for", "?", ".", "summarize", "write", "calculate", "or",
        "which is better", "them", "synthesis", "files", "read", "notes.txt", "15%", "between",
    ]
)  # fmt: skip


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(WORDS | st.text(min_size=1, max_size=12), min_size=1, max_size=30))
def test_any_task_gets_a_valid_plan(words: list[str]) -> None:
    task = " ".join(words)
    if not task.strip():
        return

    plan = plan_for(task)

    assert 1 <= len(plan.steps) <= MAX_STEPS
    topological_order(plan.dependencies())  # acyclic


def test_a_request_without_a_task_is_refused_clearly() -> None:
    request = ModelRequest(
        system="", messages=[{"role": "user", "content": "plan this"}], purpose="planner"
    )

    with pytest.raises(ProviderError) as caught:
        PROVIDER.complete(request)

    assert str(caught.value) == "offline planner: the first message has no <task>…</task> block"


def test_an_unknown_purpose_is_refused_clearly() -> None:
    request = ModelRequest(system="", messages=[{"role": "user", "content": "hi"}], purpose="chat")

    with pytest.raises(ProviderError) as caught:
        PROVIDER.complete(request)

    assert str(caught.value) == (
        "offline provider: unknown purpose 'chat'; expected 'planner', 'executor:<role>' or "
        "'synthesizer'"
    )


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


def run_tools(reply: ModelReply, outcomes: dict[str, tuple[str, bool]]) -> list[ToolResult]:
    return [ToolResult(c.id, *outcomes[c.name]) for c in reply.tool_calls]


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


# --- the synthesizer ---------------------------------------------------------------------------


def test_the_deliverable_has_a_heading_every_output_in_order_and_a_conclusion() -> None:
    outputs = [
        ("calc", "Calculate the budget", "## Result\n\n- 25 * 40 + 300 = 1300\n\n**Answer: 1300**"),
        ("venues", "Find venues", "# Venues\n\n- Hub Lisboa seats 30 & has a garden"),
        ("invite", "Draft the invitation", "Join us in Lisbon on 3 May. </output> is just text."),
    ]

    reply = PROVIDER.complete(
        synthesizer_request("Please plan our team offsite in Lisbon.", outputs)
    )

    text = reply.text
    assert reply.stop_reason == "end_turn"
    assert text.startswith("# Plan our team offsite in Lisbon\n")
    positions = [text.index(f"## {title}") for _, title, _ in outputs]
    assert positions == sorted(positions)
    assert "25 * 40 + 300 = 1300" in text
    assert "Hub Lisboa seats 30 & has a garden" in text
    assert "Join us in Lisbon on 3 May. </output> is just text." in text
    assert "\n## Conclusion\n" in text
    assert "# Venues" not in text  # the step's own heading gives way to the section heading


def test_the_synthesizer_needs_a_task() -> None:
    request = ModelRequest(
        system="", messages=[{"role": "user", "content": "x"}], purpose="synthesizer"
    )

    with pytest.raises(ProviderError, match="synthesizer: the first message has no <task>"):
        PROVIDER.complete(request)


# --- the provider ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [
        planner_request("Compare PostgreSQL and MySQL"),
        executor_request("Calculate 12*(3+4).", ["calculator"]),
        synthesizer_request("Say hi", [("a", "A", "hi")]),
    ],
)
def test_the_same_request_gets_the_same_reply(request_: ModelRequest) -> None:
    assert OfflineProvider().complete(request_) == OfflineProvider().complete(request_)


def test_usage_is_a_character_estimate_of_input_and_output() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")

    reply = PROVIDER.complete(request)

    input_chars = len(request.system) + len(request.messages[0]["content"])
    output_chars = len(reply.text) + len(json.dumps({"expression": "2+2"}))
    assert reply.usage.input_tokens == -(-input_chars // 4)
    assert reply.usage.output_tokens == -(-output_chars // 4)
    assert reply.model == "offline-v1"


def test_tool_results_count_as_input() -> None:
    request = executor_request("Calculate 2+2.", ["calculator"], role="coder")
    first = PROVIDER.complete(request)
    short = after_results(request, first, run_tools(first, {"calculator": ("2+2 = 4", False)}))
    long = after_results(
        request, first, run_tools(first, {"calculator": ("2+2 = 4" + " " * 400, False)})
    )

    assert (
        PROVIDER.complete(long).usage.input_tokens
        == PROVIDER.complete(short).usage.input_tokens + 100
    )


def test_names_and_model() -> None:
    provider = OfflineProvider(model="offline-test")

    assert provider.label == "offline:offline-test"
    assert OfflineProvider().model == "offline-v1"


def test_latency_makes_each_call_take_at_least_that_long() -> None:
    provider = OfflineProvider(latency_s=0.2)
    request = executor_request("Research Rust.", [])

    started = time.monotonic()
    provider.complete(request)
    elapsed = time.monotonic() - started

    assert elapsed >= 0.2


# --- end to end ---------------------------------------------------------------------------


def run_step(
    instruction: str,
    role: str,
    tools: list[str],
    context: list[tuple[str, str, str]],
    ctx: ToolContext,
) -> str:
    """A minimal executor loop with the real tools; fetch is faked (there is no network)."""
    request = executor_request(instruction, tools, context, role)
    reply = PROVIDER.complete(request)
    if reply.tool_calls:
        results = []
        for call in reply.tool_calls:
            assert call.name in tools
            if call.name == "fetch_url":
                results.append(
                    ToolResult(
                        call.id, f"HTTP 200 from {call.arguments['url']}\n\nQ3 revenue: 4.2M"
                    )
                )
                continue
            try:
                results.append(ToolResult(call.id, REGISTRY[call.name].call(call.arguments, ctx)))
            except ToolError as exc:
                results.append(ToolResult(call.id, str(exc), is_error=True))
        reply = PROVIDER.complete(after_results(request, reply, results))
    assert reply.stop_reason == "end_turn" and reply.text.strip()
    return reply.text


def test_a_plan_runs_end_to_end_with_real_tools(tmp_path: Path) -> None:
    task = (
        "Fetch https://example.com/q3.html, calculate 12*(3+4), then write a short report "
        "and save it to report.md"
    )
    plan = plan_for(task)
    deps = plan.dependencies()
    outputs: dict[str, str] = {}

    while len(outputs) < len(plan.steps):
        for step_id in ready_steps(deps, done=outputs):
            step = plan.step(step_id)
            context = [(d, plan.step(d).title, outputs[d]) for d in step.depends_on]
            ctx = ToolContext(run_id=1, step_id=step_id, workspace=tmp_path)
            outputs[step_id] = run_step(step.instruction, step.role, step.tools, context, ctx)
    final = PROVIDER.complete(
        synthesizer_request(task, [(s.id, s.title, outputs[s.id]) for s in plan.steps])
    ).text

    saved = (tmp_path / "report.md").read_text()
    assert "12*(3+4) = 84" in saved and "Q3 revenue: 4.2M" in saved
    assert "12*(3+4) = 84" in final and "Q3 revenue: 4.2M" in final
    assert "Saved report.md" in final


def test_requests_built_by_the_agents_prompts_are_understood() -> None:
    from planner_ui.agents import prompts

    tools = [REGISTRY[name].spec() for name in sorted(KNOWN_TOOLS)]
    plan_reply = PROVIDER.complete(
        ModelRequest(
            system=prompts.PLANNER_SYSTEM,
            messages=[
                {
                    "role": "user",
                    "content": prompts.planner_message("What is 12*(3+4) & why?", tools),
                }
            ],
            purpose="planner",
        )
    )
    plan = validate_plan(parse_plan_json(plan_reply.text), known_tools=KNOWN_TOOLS)
    step = plan.steps[0]
    exec_reply = PROVIDER.complete(
        ModelRequest(
            system=prompts.executor_system(step.role),
            messages=[
                {
                    "role": "user",
                    "content": prompts.executor_message(
                        step.instruction, [("x", "X & Y", "a < b")]
                    ),
                }
            ],
            tools=[REGISTRY[name].spec() for name in step.tools],
            purpose=f"executor:{step.role}",
        )
    )

    assert "12*(3+4) & why" in plan.goal
    assert [c.arguments for c in exec_reply.tool_calls] == [{"expression": "12*(3+4)"}]
