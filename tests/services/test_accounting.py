"""Accounting: every model call recorded and priced, totals per step and run, budgets that stop
a run cleanly. These run on the offline model, whose usage figures are deterministic; the same
properties through the real SDKs are in test_runs_with_anthropic and test_runs_with_openai. The
totals are added up by the database (stores.sql), so `make test` runs these on PostgreSQL too."""

from __future__ import annotations

from decimal import ROUND_UP, Decimal

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from planner_ui.core.messages import Usage
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import ModelCall, PlanVersion, Run, Step
from planner_ui.providers.metered import CallRecord
from planner_ui.services import accounting
from planner_ui.services.accounting import call_record
from planner_ui.services.event_buffer import EventBuffer
from planner_ui.services.runs import RunInputError, run_approve_plan, run_create

from .test_runs import drive, planned

pytestmark = [pytest.mark.database, pytest.mark.django_db]

TASK = "Compare tea and coffee for a morning routine"
SUMS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def finished(user, task: str = TASK, **kwargs) -> Run:
    run = planned(user, task, **kwargs)
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    run_approve_plan(run.pk)
    return drive(run)


def totals(calls) -> tuple[int, int, int]:
    agg = calls.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    return agg["i"] or 0, agg["o"] or 0, calls.count()


def test_every_call_is_recorded_and_the_totals_are_their_sums(make_user):
    run = finished(make_user())
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert totals(run.calls.all()) == (run.tokens_in, run.tokens_out, run.model_calls)
    for step in run.steps.all():
        calls = run.calls.filter(step_id=step.step_id)
        assert totals(calls) == (step.tokens_in, step.tokens_out, step.model_calls), step
        assert step.model_calls >= 1
    planner = run.calls.get(step_id="")
    assert (planner.role, planner.purpose) == ("planner", "planner")
    roles = set(run.calls.values_list("role", flat=True))
    assert {"planner", "synthesizer"} <= roles
    assert roles - {"planner", "synthesizer"} <= {"researcher", "coder", "critic", "writer"}
    # Every call is an event too, so the page shows it as it happens.
    assert run.events.filter(type="model.call").count() == run.model_calls


def test_the_offline_model_is_free_and_priced_as_such(make_user):
    run = finished(make_user())
    assert run.cost_usd == Decimal(0)
    assert not run.calls.filter(cost_usd__isnull=True).exists()


def test_a_model_missing_from_the_price_table_has_an_unknown_cost_not_zero(make_user, settings):
    settings.AGENTSITE_PRICES = {}
    run = finished(make_user())
    assert run.calls.filter(cost_usd__isnull=True).count() == run.model_calls
    assert run.events.filter(type="model.call").first().payload["cost_usd"] is None


def test_costs_follow_the_price_table(make_user, settings):
    settings.AGENTSITE_PRICES = {"offline:*": {"input": 1000, "output": 4000}}
    run = finished(make_user())
    for call in run.calls.all():
        expected = (Decimal(call.input_tokens) * 1000 + Decimal(call.output_tokens) * 4000) / (
            10**6
        )
        assert call.cost_usd == expected.quantize(Decimal("0.000001"))
    assert run.cost_usd == run.calls.aggregate(c=Sum("cost_usd"))["c"]
    for step in run.steps.all():
        assert (
            step.cost_usd
            == run.calls.filter(step_id=step.step_id).aggregate(c=Sum("cost_usd"))["c"]
        )


def planner_tokens(user) -> int:
    probe = planned(user, TASK)
    return probe.tokens_in + probe.tokens_out


def test_a_budget_too_small_for_the_planners_call_stops_the_run_before_it_is_made(make_user):
    run = planned(make_user(), TASK, budget_tokens=1)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(
        "Stopped because its budget of 1 tokens leaves no room for an answer (0 used, and the "
        "next call would send about "
    )
    assert not run.plan_versions.exists()
    assert run.model_calls == 0  # nothing was asked that the budget could not pay for


def test_a_plan_cut_off_by_the_budget_stops_the_run_rather_than_failing_as_invalid(make_user):
    probe = planned(make_user(), TASK).calls.get()
    # Room for the request and half of the plan's answer (another user: a planner is shown its
    # user's earlier plans, which would make the request longer).
    budget = probe.input_tokens + probe.output_tokens // 2
    run = planned(make_user("bob"), TASK, budget_tokens=budget)
    assert run.status == RunStatus.FAILED
    assert run.error == (
        f"Stopped because its budget of {budget:,} tokens left room for an answer of "
        f"{probe.output_tokens // 2:,} tokens and the model's reply was cut off there "
        f"({budget:,} used). Completed steps keep their outputs."
    )
    call = run.calls.get()
    assert (call.stop_reason, call.output_tokens) == ("max_tokens", probe.output_tokens // 2)
    assert not run.plan_versions.exists()


@pytest.mark.parametrize("share", [0.3, 0.5, 0.7, 0.9])
def test_a_token_budget_is_never_passed_and_stops_the_run_cleanly(make_user, share):
    whole = finished(make_user())
    assert whole.status == RunStatus.SUCCEEDED, whole.error
    budget = int((whole.tokens_in + whole.tokens_out) * share)
    run = planned(make_user("bob"), TASK, budget_tokens=budget)
    if run.status == RunStatus.AWAITING_PLAN_APPROVAL:  # else planning took all of it
        run_approve_plan(run.pk)
        run = drive(run)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(f"Stopped because its budget of {budget:,} tokens ")
    # Each call was held to what was left: the totals stay within the budget.
    assert run.tokens_in + run.tokens_out <= budget
    statuses = set(run.steps.values_list("status", flat=True))
    assert not statuses & {StepStatus.PENDING, StepStatus.QUEUED, StepStatus.RUNNING}
    # A step the budget stopped, even in the middle of its answer, is skipped, not failed:
    # a failure would have the run re-planned with what is left.
    assert StepStatus.FAILED not in statuses
    assert not run.steps.filter(step_id="synthesis", status=StepStatus.SUCCEEDED).exists()
    assert not run.plan_versions.filter(author=PlanVersion.Author.REPLANNER).exists()


def test_a_steps_answer_the_budget_cuts_off_stops_the_run_and_the_step_is_not_failed(make_user):
    whole = finished(make_user())
    calls = list(whole.calls.order_by("pk"))
    # The same run again, with room for its first step's call to send all and answer half
    # (another user's run: a planner is shown its user's earlier plans).
    first = calls[1]
    assert first.step_id and first.output_tokens >= 8
    used = calls[0].input_tokens + calls[0].output_tokens
    budget = used + first.input_tokens + first.output_tokens // 2
    run = finished(make_user("bob"), budget_tokens=budget)
    assert run.status == RunStatus.FAILED
    assert run.error == (
        f"Stopped because its budget of {budget:,} tokens left room for an answer of "
        f"{first.output_tokens // 2:,} tokens and the model's reply was cut off there "
        f"({budget:,} used). Completed steps keep their outputs."
    )
    cut = run.calls.get(step_id=first.step_id)
    assert (cut.stop_reason, cut.output_tokens) == ("max_tokens", first.output_tokens // 2)
    step = run.steps.get(step_id=first.step_id)
    # Its half answer is not its output, and nothing is re-planned around it.
    assert (step.status, step.output) == (StepStatus.SKIPPED, "")
    assert run.tokens_in + run.tokens_out == budget
    assert not run.plan_versions.filter(author=PlanVersion.Author.REPLANNER).exists()


def test_a_token_budget_spent_by_the_executors_stops_the_run_and_keeps_what_was_done(make_user):
    user = make_user()
    budget = planner_tokens(user) + 1
    run = finished(user, budget_tokens=budget)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(
        f"Stopped because its budget of {budget:,} tokens leaves no room for an answer "
        f"({budget - 1:,} used, and the next call would send about "
    )
    statuses = set(run.steps.values_list("status", flat=True))
    assert not statuses & {StepStatus.PENDING, StepStatus.QUEUED, StepStatus.RUNNING}
    assert StepStatus.SKIPPED in statuses
    assert run.steps.get(step_id="synthesis").status == StepStatus.SKIPPED
    # No executor call was made: the first one's request alone would have passed the budget.
    assert not run.calls.exclude(step_id="").exists()


def test_a_budget_in_dollars_stops_the_run(make_user, settings):
    settings.AGENTSITE_PRICES = {"offline:*": {"input": 10, "output": 10}}
    whole = finished(make_user())
    assert whole.status == RunStatus.SUCCEEDED, whole.error
    # Half of what the run costs whole, to the ten-thousandth of a dollar a budget is kept to.
    budget = (whole.cost_usd / 2).quantize(Decimal("0.0001"), ROUND_UP)
    run = finished(make_user("bob"), budget_usd=budget)
    assert run.status == RunStatus.FAILED
    # The budget is said as it was given, without trailing zeros ($0.011, not $0.0110).
    assert run.error.startswith(f"Stopped because its budget of ${budget.normalize()} ")
    assert run.cost_usd <= budget
    assert StepStatus.FAILED not in set(run.steps.values_list("status", flat=True))


def test_a_budget_in_dollars_on_a_model_with_no_price_still_stops_at_the_tokens(
    make_user, settings
):
    settings.AGENTSITE_PRICES = {}  # unpriced: the dollars cannot hold a call back
    whole = finished(make_user())
    budget = (whole.tokens_in + whole.tokens_out) // 2
    run = finished(make_user("bob"), budget_usd=Decimal("0.01"), budget_tokens=budget)
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(f"Stopped because its budget of {budget:,} tokens ")
    assert run.tokens_in + run.tokens_out <= budget


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget_tokens": 0}, "A token budget must be a positive number"),
        ({"budget_usd": Decimal("0")}, "A budget in USD must be more than 0"),
        ({"routes": {"executor": "openai:"}}, "executors: The route 'openai:' names no model"),
        ({"routes": {"planner": "anthropic:claude-opus-5-5"}}, "needs an Anthropic API key"),
        ({"routes": {"executor:coder": "openai:llama3.2"}}, "set OPENAI_BASE_URL"),
    ],
)
def test_run_create_refuses_bad_budgets_and_routes(make_user, settings, kwargs, message):
    settings.ANTHROPIC_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(RunInputError, match=message):
        run_create(owner=make_user(), options=RunOptions(task=TASK, **kwargs))
    assert not Run.objects.exists()


def test_a_run_keeps_the_routes_it_was_submitted_with(make_user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    run = run_create(
        owner=make_user(),
        options=RunOptions(task=TASK, routes={"executor:coder": "openai:qwen3-coder:30b"}),
    )
    assert run.routes == {
        "planner": "offline:offline-v1",
        "executor": "offline:offline-v1",
        "executor:researcher": "offline:offline-v1",
        "executor:coder": "openai:qwen3-coder:30b",
        "executor:critic": "offline:offline-v1",
        "executor:writer": "offline:offline-v1",
        "synthesizer": "offline:offline-v1",
    }
    # Changing the settings later does not change a submitted run.
    settings.AGENTSITE_EXECUTOR_MODEL = "anthropic:claude-sonnet-5-5"
    run.refresh_from_db()
    assert run.routes["executor:critic"] == "offline:offline-v1"


def test_a_failed_call_is_recorded_with_its_error(make_user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on port 9
    settings.AGENTSITE_MODEL_MAX_RETRIES = 0
    settings.AGENTSITE_MODEL_TIMEOUT_S = 2
    run = planned(make_user(), TASK, routes={"planner": "openai:llama3.2"})
    assert run.status == RunStatus.FAILED
    call = ModelCall.objects.get(run=run)
    assert (call.stop_reason, call.input_tokens, call.label) == ("error", 0, "openai:llama3.2")
    assert "Cannot reach" in call.error and call.error in run.error


# As a worker runs it, outside a transaction: one that is open could still roll the call back.
@pytest.mark.django_db(transaction=True)
def test_a_steps_call_is_one_statement_on_postgresql_and_its_event_goes_with_the_next(make_user):
    run = Run.objects.create(owner=make_user(), task="t", status=RunStatus.RUNNING)
    Step.objects.create(run=run, step_id="a", title="a", instruction="x", role="writer")
    call = CallRecord(
        purpose="executor:writer",
        provider="offline",
        model="offline-1",
        usage=Usage(input_tokens=30, output_tokens=12, cache_read_tokens=5),
        latency_s=0.25,
        stop_reason="end_turn",
    )
    budget = run.budget  # as a step's metered provider passes it, read once per step
    with EventBuffer() as events:
        with CaptureQueriesContext(connection) as queries:
            call_record(run.pk, "a", call, budget=budget, events=events)
        if connection.vendor == "postgresql":
            # The call and its step's and run's totals, with no BEGIN and COMMIT around.
            assert len(queries) == 1, [q["sql"] for q in queries]
        assert not run.events.exists()  # its event waits for the step's next
        events.append(run.pk, "step.skipped", {"reason": "the run was cancelled"}, step_id="a")
    # A call of no step's (the planner's) adds to the run only; its event is stored at once.
    call_record(run.pk, "", call, budget=budget)
    run.refresh_from_db()
    step = run.steps.get()
    assert (run.tokens_in, run.tokens_out, run.tokens_cache_read, run.model_calls) == (
        60,
        24,
        10,
        2,
    )
    assert (step.tokens_in, step.tokens_out, step.tokens_cache_read, step.model_calls) == (
        30,
        12,
        5,
        1,
    )
    recorded = list(run.calls.order_by("pk").values_list("step_id", "input_tokens", "latency_ms"))
    assert recorded == [("a", 30, 250), ("", 30, 250)]
    assert list(run.events.values_list("seq", "type", "step_id")) == [
        (1, "model.call", "a"),
        (2, "step.skipped", "a"),
        (3, "model.call", ""),
    ]
    assert run.last_event_seq == 3


def test_a_call_waits_for_what_a_running_steps_call_holds_and_a_dead_steps_hold_lapses(
    make_user,
):
    run = Run.objects.create(
        owner=make_user(), task="t", status=RunStatus.RUNNING, budget_tokens=1_000
    )
    for step_id in ("a", "b"):
        Step.objects.create(
            run=run, step_id=step_id, title=step_id, instruction="x", status=StepStatus.RUNNING
        )
    budget = run.budget
    # b's call sends 100 tokens and may answer 500: it holds 600 until it is counted.
    assert accounting._held(run.pk, "b", budget, 100, None, 500) == 500
    assert Step.objects.get(run=run, step_id="b").budget_held_tokens == 600
    # a's call, wanting 500 where 300 are left beside b's hold, waits for b to be counted.
    assert accounting._held(run.pk, "a", budget, 100, None, 500) == accounting._Wait(
        1, 600, Decimal(0)
    )
    # A step that ended holds nothing, whatever its row still says (a worker died in its call).
    Step.objects.filter(run=run, step_id="b").update(status=StepStatus.FAILED)
    assert accounting._held(run.pk, "a", budget, 100, None, 500) == 500
    # Counted, a call holds nothing: its record sets the hold back to 0.
    call = CallRecord("executor", "offline", "m", Usage(100, 200), 0.1, "end_turn")
    call_record(run.pk, "a", call, budget=budget)
    assert Step.objects.get(run=run, step_id="a").budget_held_tokens == 0
    # 700 left: a call sending 100 may answer 600 of the 900 it asks for, alone.
    assert accounting._held(run.pk, "a", budget, 100, None, 900) == 600
