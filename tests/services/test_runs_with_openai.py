"""A whole run on an OpenAI-compatible server (what Ollama, vLLM, llama.cpp and LM Studio
speak) through the real openai SDK: routing, tool calls, the repair call, accounting, errors."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.services.runs import run_approve_plan
from tests.fakes.openai_server import FakeOpenAI
from tests.services.test_runs import drive, planned
from tests.services.test_runs_with_anthropic import CYCLIC_PLAN, GOOD_PLAN

pytestmark = pytest.mark.django_db

LOCAL = "openai:qwen3:8b"
ROUTES = {"planner": LOCAL, "executor": LOCAL}


@pytest.fixture
def server(settings):
    # A local server takes any key, or none: the SDK is given a placeholder.
    with FakeOpenAI(api_key=None) as fake:
        settings.OPENAI_BASE_URL = fake.base_url
        settings.OPENAI_API_KEY = ""
        settings.AGENTSITE_MODEL_MAX_RETRIES = 0
        yield fake


def test_a_whole_run_on_a_local_model(server, make_user):
    server.enqueue_json(CYCLIC_PLAN, prompt_tokens=300, completion_tokens=80)
    server.enqueue_json(GOOD_PLAN, prompt_tokens=420, completion_tokens=90)
    run = planned(make_user(), "Compute 6*7 and explain it", routes=ROUTES)
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    assert run.planner_model == LOCAL
    assert server.requests[0].body["model"] == "qwen3:8b"
    assert server.requests[0].body["response_format"]["type"] == "json_schema"
    # The repair call carried the validation errors.
    assert "That plan is invalid:" in server.requests[1].body["messages"][-1]["content"]

    # A small local model's malformed arguments are sent back as an error, then it recovers.
    server.enqueue_tool_calls([("calculator", '{"expression": "6*7"')], prompt_tokens=50)
    server.enqueue_tool_calls([("calculator", {"expression": "6*7"})], prompt_tokens=70)
    server.enqueue_text("6*7 = 42", prompt_tokens=90, completion_tokens=6, cached_tokens=64)
    server.enqueue_text("42 is the answer.", prompt_tokens=30, completion_tokens=7)
    server.enqueue_text("# Result\n\n42.", prompt_tokens=20, completion_tokens=9)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.result == "# Result\n\n42."
    compute = run.steps.get(step_id="compute")
    assert compute.output == "6*7 = 42"
    results = [m for m in server.requests[4].body["messages"] if m["role"] == "tool"]
    assert results[0]["content"].startswith("Error: calculator was not run: the arguments were")
    assert results[1]["content"] == "6*7 = 42"

    # The totals are exactly the server's usage figures.
    prompt = [300, 420, 50, 70, 90, 30, 20]
    completion = [80, 90, 5, 5, 6, 7, 9]
    assert (run.tokens_in, run.tokens_out, run.model_calls) == (sum(prompt), sum(completion), 7)
    assert list(run.calls.values_list("input_tokens", flat=True)) == prompt
    assert run.tokens_cache_read == 64
    assert set(run.calls.values_list("provider", "model")) == {("openai", "qwen3:8b")}
    # Local models have no price in the table: their cost is unknown, not zero.
    assert not run.calls.filter(cost_usd__isnull=False).exists()


def test_local_models_can_be_priced_as_free(server, make_user, settings):
    settings.AGENTSITE_PRICES = {"openai:*": {"input": 0, "output": 0}}
    server.enqueue_json(GOOD_PLAN)
    run = planned(make_user(), "Compute 6*7", routes=ROUTES)
    assert run.calls.get().cost_usd == 0


def test_a_strong_planner_and_a_local_executor_in_one_run(server, make_user, settings):
    from tests.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic() as anthropic:
        settings.ANTHROPIC_API_KEY = "test-key"
        settings.ANTHROPIC_BASE_URL = anthropic.base_url
        anthropic.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
        run = planned(
            make_user(),
            "Compute 6*7 and explain it",
            routes={"planner": "anthropic:claude-opus-5-5", "executor": LOCAL},
        )
        server.enqueue_tool_calls([("calculator", {"expression": "6*7"})])
        server.enqueue_text("6*7 = 42")
        server.enqueue_text("42 is the answer.")
        server.enqueue_text("# 42")
        run_approve_plan(run.pk)
        run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert list(run.calls.values_list("role", "provider")) == [
        ("planner", "anthropic"),
        ("coder", "openai"),
        ("coder", "openai"),
        ("writer", "openai"),
        ("synthesizer", "openai"),
    ]
    assert len(anthropic.requests) == 1 and len(server.requests) == 4


def test_a_server_that_is_not_running_fails_the_run_saying_where(make_user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.AGENTSITE_MODEL_MAX_RETRIES = 0
    run = planned(make_user(), "Compute 6*7", routes=ROUTES)
    assert run.status == RunStatus.FAILED
    assert "Cannot reach the OpenAI-compatible server at http://127.0.0.1:9/v1" in run.error


def test_an_unknown_model_says_how_to_get_it(server, make_user):
    server.enqueue_error(404, "model 'qwen3:8b' not found", type="not_found_error")
    run = planned(make_user(), "Compute 6*7", routes=ROUTES)
    assert run.status == RunStatus.FAILED
    assert "ollama pull qwen3:8b" in run.error


def test_a_rejected_key_fails_the_step_with_a_clear_message(make_user, settings):
    with FakeOpenAI(api_key="right-key") as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "right-key"
        settings.AGENTSITE_MODEL_MAX_RETRIES = 0
        server.enqueue_json(GOOD_PLAN)
        run = planned(make_user(), "Compute 6*7 and explain it", routes=ROUTES)
        settings.OPENAI_API_KEY = "wrong-key"
        run_approve_plan(run.pk)
        run = drive(run)
    assert run.status == RunStatus.FAILED
    compute = run.steps.get(step_id="compute")
    assert compute.status == StepStatus.FAILED
    assert "rejected the API key (401)" in compute.error
    assert "OPENAI_API_KEY" in compute.error and "wrong-key" not in compute.error


def test_a_budget_stops_a_local_run_on_the_servers_figures(server, make_user):
    server.enqueue_json(GOOD_PLAN, prompt_tokens=100, completion_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it", routes=ROUTES, budget_tokens=3_150)
    # The server counts the request at more than was left: its figure is the one that counts.
    server.enqueue_tool_calls([("calculator", {"expression": "6*7"})], prompt_tokens=3_000)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("Stopped because its budget of 3,150 tokens is spent (3,155 used)")
    assert len(server.requests) == 2
    # The executor's call asked for no more answer than the budget left after its request.
    assert 0 < server.requests[1].body["max_tokens"] < 3_000


def test_an_auto_route_that_needed_prompting_stays_prompted_for_the_run(server, make_user):
    auto = LOCAL + "#auto"
    server.enqueue_json(GOOD_PLAN)
    run = planned(
        make_user(), "Compute 6*7 and explain it", routes={"planner": LOCAL, "executor": auto}
    )
    # compute: the call written as text (recognised and run), which switches the route; its
    # answer then comes in the prompted shape. explain, a later step with a provider of its
    # own, starts prompted; the synthesizer is asked for no tools.
    server.enqueue_text('```json\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n```')
    server.enqueue_json({"answer": "6*7 = 42"})
    server.enqueue_json({"answer": "42 is six sevens."})
    server.enqueue_text("# Result\n\n42.")
    run_approve_plan(run.pk)
    run = drive(run)

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.steps.get(step_id="explain").output == "42 is six sevens."
    first, again, explain = (request.body for request in server.requests[1:4])
    assert "tools" in first and "response_format" not in first
    assert "tools" not in again and "tools" not in explain
    assert explain["response_format"]["json_schema"]["schema"]["anyOf"]
    modes = list(run.calls.exclude(purpose="planner").values_list("purpose", "tool_mode"))
    assert modes == [
        ("executor:coder", "prompted"),
        ("executor:coder", "prompted"),
        ("executor:writer", "prompted"),
        ("synthesizer", "prompted"),
    ]
    # The run page's routing table says the route is prompted now.
    page = Client()
    page.force_login(run.owner)
    usage = page.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert f'<code>{auto}</code> <span class="badge in-text"' in usage
    assert ">now prompted</span>" in usage


SAVE_PLAN = {
    "goal": "A sum, saved",
    "steps": [
        {
            "id": "compute",
            "title": "Compute",
            "instruction": "Use the calculator to compute 1500 * 0.2 + 75.",
            "role": "coder",
            "tools": ["calculator"],
        },
        {
            "id": "save",
            "title": "Save",
            "instruction": "Write the result to result.txt.",
            "role": "coder",
            "tools": ["write_file"],
            "depends_on": ["compute"],
        },
    ],
}


def test_the_synthesizer_sees_what_a_last_step_was_given(server, make_user):
    # Seen from Qwen2.5-Coder-1.5B: the last step saved the sum and said only that it had; the
    # synthesizer, shown that line alone, wrote a sum of its own (300.0 for 375).
    server.enqueue_json(SAVE_PLAN)
    run = planned(make_user(), "Compute 1500 * 0.2 + 75 and report it", routes=ROUTES)
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    server.enqueue_tool_calls([("calculator", {"expression": "1500 * 0.2 + 75"})])
    server.enqueue_text("375")
    server.enqueue_tool_calls([("write_file", {"path": "result.txt", "content": "375"})])
    server.enqueue_text("The result has been written to 'result.txt'.")
    server.enqueue_text("The result is 375.")
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error

    material = server.requests[-1].body["messages"][-1]["content"]
    assert material.startswith("<task>")  # the synthesizer's request
    # The step it depends on first, then the last step itself, in plan order.
    assert material.index('<output step="compute"') < material.index('<output step="save"')
    assert "375" in material.split('<output step="compute"')[1].split("</output>")[0]
