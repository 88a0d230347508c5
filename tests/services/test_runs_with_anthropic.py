"""A whole run through the real Anthropic SDK against a local Messages API server: planning with
its repair call, execution with tool use, and the errors a person must be able to read."""

from __future__ import annotations

import json
import logging
from decimal import Decimal

import pytest

from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.services.runs import run_approve_plan
from tests.fakes.anthropic_server import FakeAnthropic
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

GOOD_PLAN = {
    "goal": "A number and a sentence about it",
    "steps": [
        {
            "id": "compute",
            "title": "Compute",
            "instruction": "Compute 6*7 with the calculator.",
            "role": "coder",
            "tools": ["calculator"],
        },
        {
            "id": "explain",
            "title": "Explain",
            "instruction": "Explain the number in one line.",
            "role": "writer",
            "depends_on": ["compute"],
        },
    ],
}
CYCLIC_PLAN = {
    "goal": "g",
    "steps": [
        {"id": "a", "title": "A", "instruction": "x", "role": "writer", "depends_on": ["b"]},
        {"id": "b", "title": "B", "instruction": "y", "role": "wizard", "depends_on": ["a"]},
    ],
}


@pytest.fixture
def server(settings):
    with FakeAnthropic() as fake:
        settings.AGENTSITE_PROVIDER = "anthropic"
        settings.ANTHROPIC_API_KEY = "test-key"
        settings.ANTHROPIC_BASE_URL = fake.base_url
        yield fake


def test_a_whole_run_through_the_sdk(server, make_user):
    server.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it")
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert run.planner_model == "anthropic:claude-opus-5-5"
    assert server.requests[0].body["model"] == "claude-opus-5-5"

    server.enqueue_tool_use("calculator", {"expression": "6*7"}, input_tokens=40, output_tokens=8)
    server.enqueue_text("6*7 = 42", input_tokens=60, output_tokens=6)
    server.enqueue_text("42 is the answer.", input_tokens=30, output_tokens=7)
    server.enqueue_text("# Result\n\n42, explained.", input_tokens=20, output_tokens=9)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.executor_model == "anthropic:claude-sonnet-5-5"
    steps = {s.step_id: s for s in run.steps.all()}
    assert steps["compute"].output == "6*7 = 42"
    assert (steps["compute"].tokens_in, steps["compute"].tokens_out) == (100, 14)
    assert run.result == "# Result\n\n42, explained."
    # The run's totals are exactly the server's usage figures, planner included.
    assert (run.tokens_in, run.tokens_out) == (100 + 40 + 60 + 30 + 20, 50 + 8 + 6 + 7 + 9)
    # The calculator really ran, and its result went back as a tool_result block.
    tool_turn = server.requests[2].body["messages"][-1]
    assert tool_turn["content"][0]["type"] == "tool_result"
    assert tool_turn["content"][0]["content"] == "6*7 = 42"
    # The writer got the coder's output as quoted context.
    writer_prompt = server.requests[3].body["messages"][0]["content"]
    assert '<output step="compute" title="Compute">\n6*7 = 42\n</output>' in writer_prompt


def test_an_invalid_plan_is_repaired_by_a_second_call(server, make_user):
    server.enqueue_json(CYCLIC_PLAN)
    server.enqueue_json(GOOD_PLAN)
    run = planned(make_user(), "Compute 6*7 and explain it")
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL
    assert [s.step_id for s in run.steps.all()] == ["compute", "explain", "synthesis"]
    invalid = run.events.get(type="plan.invalid")
    assert "the plan has a cycle: a → b → a" in invalid.payload["errors"]
    repair = server.requests[1].body["messages"]
    assert repair[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": json.dumps(CYCLIC_PLAN)}],
    }
    assert "That plan is invalid:" in repair[2]["content"]
    assert "step 'b' has unknown role 'wizard'" in repair[2]["content"]


def test_two_invalid_plans_fail_the_run_with_the_errors(server, make_user):
    server.enqueue_json(CYCLIC_PLAN)
    server.enqueue_text("I would rather not plan.")
    run = planned(make_user(), "Compute 6*7 and explain it")
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(
        "The planner's plan was invalid twice, so nothing ran: the plan is not valid JSON:"
    )
    assert run.steps.count() == 0 and run.plan_versions.count() == 0
    assert run.events.filter(type="plan.invalid").count() == 2


def test_a_rejected_key_fails_the_run_with_a_clear_message(server, make_user, settings):
    settings.ANTHROPIC_API_KEY = "wrong-key"
    run = planned(make_user(), "Compute 6*7")
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(
        "The planner failed, so nothing ran: Anthropic rejected the API key "
        "(401 authentication_error): check ANTHROPIC_API_KEY."
    )


def test_an_executor_error_fails_the_step_and_the_run(server, make_user):
    server.enqueue_json(GOOD_PLAN)
    run = planned(make_user(), "Compute 6*7 and explain it")
    server.enqueue_error(
        400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
    )
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    compute = run.steps.get(step_id="compute")
    assert compute.status == StepStatus.FAILED
    assert compute.error.startswith("The request is longer than the model's context window")
    assert "250000 tokens > 200000 maximum" in compute.error
    assert run.steps.get(step_id="explain").status == StepStatus.SKIPPED


def test_each_call_is_recorded_with_the_servers_usage_and_priced(server, make_user, settings):
    settings.AGENTSITE_PRICES = {
        "anthropic:claude-opus-5-5": {
            "input": 4,
            "output": 20,
            "cache_read": 0.2,
            "cache_write": 5,
        },
        "anthropic:claude-sonnet-5-5": {"input": 2, "output": 10},
    }
    server.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it")
    # The second call of the compute step reads the prompt prefix the first one cached.
    server.enqueue_tool_use(
        "calculator",
        {"expression": "6*7"},
        input_tokens=40,
        cache_creation_input_tokens=900,
        output_tokens=8,
    )
    server.enqueue_text("6*7 = 42", input_tokens=60, cache_read_input_tokens=900, output_tokens=6)
    server.enqueue_text("42 is the answer.", input_tokens=30, output_tokens=7)
    server.enqueue_text("# 42", input_tokens=20, output_tokens=9)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    calls = list(
        run.calls.values_list(
            "role",
            "model",
            "input_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "output_tokens",
        )
    )
    assert calls == [
        ("planner", "claude-opus-5-5", 100, 0, 0, 50),
        # Input counts every prompt token; the cache figures are parts of it.
        ("coder", "claude-sonnet-5-5", 940, 0, 900, 8),
        ("coder", "claude-sonnet-5-5", 960, 900, 0, 6),
        ("writer", "claude-sonnet-5-5", 30, 0, 0, 7),
        ("synthesizer", "claude-sonnet-5-5", 20, 0, 0, 9),
    ]
    assert (run.tokens_in, run.tokens_out) == (100 + 940 + 960 + 30 + 20, 50 + 8 + 6 + 7 + 9)
    assert (run.tokens_cache_read, run.tokens_cache_write) == (900, 900)
    compute = run.steps.get(step_id="compute")
    assert (compute.tokens_in, compute.tokens_out, compute.model_calls) == (1900, 14, 2)
    # Sonnet's default cache rates: reads at 0.1x input, writes at 1.25x.
    sonnet = (
        (40 * 2 + 900 * 2.5 + 8 * 10)
        + (60 * 2 + 900 * 0.2 + 6 * 10)
        + (30 * 2 + 7 * 10)
        + (20 * 2 + 9 * 10)
    )
    opus = 100 * 4 + 50 * 20
    assert run.cost_usd == Decimal(str(sonnet + opus)) / 10**6


@pytest.mark.parametrize(
    ("status", "error_type"), [(429, "rate_limit_error"), (529, "overloaded_error")]
)
def test_a_rate_limit_or_overload_is_retried_and_the_run_goes_on(
    server, make_user, settings, status, error_type
):
    settings.AGENTSITE_MODEL_MAX_RETRIES = 2
    server.enqueue_error(status, error_type, "Slow down")
    server.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it")
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    assert len(server.requests) == 2
    # The SDK's retries are one model call: one record, with the answer's usage.
    assert list(run.calls.values_list("input_tokens", "output_tokens")) == [(100, 50)]


def test_retries_that_do_not_help_fail_the_run_saying_so(server, make_user, settings):
    settings.AGENTSITE_MODEL_MAX_RETRIES = 1
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    server.enqueue_error(529, "overloaded_error", "Overloaded")
    run = planned(make_user(), "Compute 6*7")
    assert run.status == RunStatus.FAILED
    assert run.error == (
        "The planner failed, so nothing ran: Anthropic is overloaded (529) and "
        "1 retry did not help: Overloaded"
    )
    assert run.calls.get().error in run.error


def test_a_budget_stops_the_run_on_the_servers_own_figures(server, make_user):
    server.enqueue_json(GOOD_PLAN, input_tokens=4_900, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it", budget_tokens=5_000)
    assert run.tokens_in + run.tokens_out == 4_950
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    # What is left, 50 tokens, would not pay for the executor's request, let alone an answer.
    assert run.error.startswith(
        "Stopped because its budget of 5,000 tokens leaves no room for an answer (4,950 used, "
        "and the next call would send about "
    )
    compute = run.steps.get(step_id="compute")
    # Stopped under it by the run, not failed by itself.
    assert compute.status == StepStatus.SKIPPED
    assert compute.error.startswith("The run stopped because its budget of 5,000 tokens leaves")
    assert run.steps.get(step_id="explain").status == StepStatus.SKIPPED
    # Nothing was asked of the server that the budget could not pay for; near its end, the
    # server counted what each call would send.
    assert [r.path for r in server.requests] == [
        "/v1/messages/count_tokens",
        "/v1/messages",
        "/v1/messages/count_tokens",
    ]
    assert server.pending == 0


def test_a_call_asks_the_server_for_no_more_answer_than_the_budget_leaves(server, make_user):
    server.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it", budget_tokens=150 + 3_000)
    # Near the budget's end the server counts the request (900 tokens, say): the answer may
    # take the rest, 2,100; the reply runs to that limit.
    server.input_count = 900
    server.enqueue_text("6*7 is", stop_reason="max_tokens", input_tokens=900, output_tokens=2_100)
    run_approve_plan(run.pk)
    run = drive(run)
    messages = [r for r in server.requests if r.path == "/v1/messages"]
    assert messages[-1].body["max_tokens"] == 2_100
    assert run.status == RunStatus.FAILED
    assert run.error == (
        "Stopped because its budget of 3,150 tokens left room for an answer of 2,100 tokens "
        "and the model's reply was cut off there (3,150 used). Completed steps keep their outputs."
    )
    compute = run.steps.get(step_id="compute")
    assert (compute.status, compute.output) == (StepStatus.SKIPPED, "")
    assert len(messages) == 2 and server.pending == 0


def test_a_count_the_server_cannot_give_leaves_the_estimate(server, make_user, settings):
    settings.AGENTSITE_MODEL_MAX_RETRIES = 0
    server.enqueue_json(GOOD_PLAN, input_tokens=100, output_tokens=50)
    run = planned(make_user(), "Compute 6*7 and explain it", budget_tokens=150 + 3_000)
    server.api_key = "another"  # every request from now on is refused, the count's first
    run_approve_plan(run.pk)
    run = drive(run)
    # The count was asked for and refused; the call went on, sized by the estimate, and its
    # own refusal is what failed the step.
    paths = [r.path for r in server.requests]
    assert paths[-2:] == ["/v1/messages/count_tokens", "/v1/messages"]
    compute = run.steps.get(step_id="compute")
    assert compute.status == StepStatus.FAILED
    assert "401" in compute.error or "API key" in compute.error


def test_the_key_is_never_logged_stored_or_shown(server, make_user, settings, caplog):
    secret = "sk-ant-api03-" + "S3CR3T" * 8
    settings.ANTHROPIC_API_KEY = secret
    server.api_key = secret
    caplog.set_level(logging.DEBUG)
    server.enqueue_json(GOOD_PLAN)
    run = planned(make_user(), "Compute 6*7 and explain it")
    settings.ANTHROPIC_API_KEY = secret + "-revoked"  # every later call is refused
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.FAILED
    assert "rejected the API key" in run.error
    stored = json.dumps(list(run.events.values_list("payload", flat=True))) + run.error
    stored += json.dumps(list(run.calls.values_list("error", flat=True)))
    assert "S3CR3T" not in stored
    assert "S3CR3T" not in caplog.text
    assert caplog.records  # the SDK and the services did log: none of it holds the key
