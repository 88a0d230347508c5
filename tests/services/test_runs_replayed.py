"""A whole run through the services, every part routed to the real OpenAI-compatible provider
pointed at a replay of Qwen2.5-Coder-1.5B-Instruct on llama.cpp (tests/fixtures/real-models/,
task 1: "Compute 1500 * 0.2 + 75 and save a report to report.md").

Recorded: the planner's plan, each step's first reply and the synthesizer's reply. Scripted:
the one reply the recording cannot hold, the calculator step's answer after its tool result
(agentsite never ran the tool when it was recorded).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.services.runs import run_approve_plan
from tests.fakes.replay_server import ReplayOpenAI
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TRANSCRIPT = (
    Path(__file__).parent.parent / "fixtures" / "real-models" / "qwen2.5-coder-1.5b-llamacpp.jsonl"
)
ROUTES = {"planner": "openai:model", "executor": "openai:model"}
TASK = "Compute 1500 * 0.2 + 75 and save a report to report.md"


@pytest.fixture
def server(settings):
    with ReplayOpenAI(TRANSCRIPT, lines={0, 1, 2, 3}) as replay:
        settings.OPENAI_BASE_URL = replay.base_url
        settings.OPENAI_API_KEY = ""
        settings.AGENTSITE_MODEL_MAX_RETRIES = 0
        yield replay


def test_the_recorded_run_now_calls_the_calculator(server, alice, client_alice) -> None:
    run = planned(alice, TASK, routes=ROUTES)
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    assert list(run.steps.values_list("step_id", flat=True)) == ["0", "1", "synthesis"]

    server.enqueue_text("1500 * 0.2 + 75 = **375**")  # scripted: the reply to the tool result
    run_approve_plan(run.pk)
    run = drive(run)

    # Every recorded reply was used, and the scripted one: the executor asked after the result.
    assert server.unused == [] and server.pending == 0
    assert server.answered_by == [0, 1, None, 2, 3]
    assert run.status == RunStatus.SUCCEEDED, run.error
    compute = run.steps.get(step_id="0")
    assert compute.status == StepStatus.SUCCEEDED
    assert compute.output == "1500 * 0.2 + 75 = **375**"
    events = list(
        run.events.filter(step_id="0", type__startswith="step.tool").values_list("type", "payload")
    )
    (call_type, call), (result_type, result) = events
    assert (call_type, call["tool"], call["arguments"], call["recognised_in_text"]) == (
        "step.tool_call",
        "calculator",
        {"expression": "1500 * 0.2 + 75"},
        True,
    )
    assert (result_type, result["content"], result["is_error"]) == (
        "step.tool_result",
        "1500 * 0.2 + 75 = 375",
        False,
    )
    # The person sees it on the step card.
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "recognised in text" in page
    # The writer's and the synthesizer's recorded replies ({"result": "375"} in a fence) are
    # what the model said; no check can tell them from a terse answer, and they stand.
    assert '"result": "375"' in run.result
