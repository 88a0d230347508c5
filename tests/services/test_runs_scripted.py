"""A whole run with exact replies from the scripted provider: what the model says is what the
run records, step by step, with no heuristics in between."""

from __future__ import annotations

import pytest

from planner_ui.core.plan import SYNTHESIS_STEP_ID
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.providers.scripted import script
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

PLAN = {
    "goal": "Price a pot of tea",
    "steps": [
        {
            "id": "compute",
            "title": "Compute the price",
            "instruction": "Compute 3 * 2.5 with the calculator.",
            "role": "coder",
            "tools": ["calculator"],
            "depends_on": [],
        }
    ],
}


def test_a_run_records_exactly_what_the_scripted_model_said(make_user) -> None:
    planner = script("tea-planner").plan(PLAN)
    executor = (
        script("tea-executor")
        .tool_call("calculator", {"expression": "3 * 2.5"})
        .text("A pot costs 7.5 EUR.")
        .text("# Tea\n\nA pot of tea costs 7.5 EUR.")
    )
    routes = {"planner": "scripted:tea-planner", "executor": "scripted:tea-executor"}
    run = run_create(owner=make_user(), options=RunOptions(task="Price tea", routes=routes))
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.steps.get(step_id="compute").output == "A pot costs 7.5 EUR."
    assert run.result == "# Tea\n\nA pot of tea costs 7.5 EUR."
    result = run.events.get(type="step.tool_result")
    assert result.payload["content"] == "3 * 2.5 = 7.5"
    assert len(planner.requests) == 1 and len(executor.requests) == 3
    assert executor.requests[-1].purpose == "synthesizer"
    assert run.steps.get(step_id=SYNTHESIS_STEP_ID).model == "scripted:tea-executor"


def test_a_deliverable_with_figures_no_step_holds_ends_with_a_warning(make_user) -> None:
    script("tea-planner-2").plan(PLAN)
    script("tea-executor-2").tool_call("calculator", {"expression": "3 * 2.5"}).text(
        "A pot costs 7.5 EUR."
    ).text("A pot costs 12.5 EUR.").text("Two pots cost 12.5 EUR.")
    routes = {"planner": "scripted:tea-planner-2", "executor": "scripted:tea-executor-2"}
    run = run_create(owner=make_user(), options=RunOptions(task="Price tea", routes=routes))
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)

    # Asked once more, the synthesizer kept its figure: the deliverable stands, in doubt.
    assert run.status == RunStatus.SUCCEEDED and run.result == "Two pots cost 12.5 EUR."
    assert run.outcome == "succeeded_with_warnings"
    doubt = (
        "the deliverable's figures are in doubt: it states 12.5, which neither the task nor "
        "any step output holds"
    )
    assert run.outcome_reason == doubt[:1].upper() + doubt[1:]
    assert run.warnings == [f"step '{SYNTHESIS_STEP_ID}': {doubt}"]


def test_scripted_routes_are_refused_where_real_models_are_allowed(make_user, settings) -> None:
    from planner_ui.services.runs import RunInputError

    settings.AGENTSITE_ALLOW_MODEL_REQUESTS = True
    with pytest.raises(RunInputError, match="scripted models reply from a test's queue"):
        run_create(
            owner=make_user(),
            options=RunOptions(task="t", routes={"planner": "scripted:x"}),
        )
