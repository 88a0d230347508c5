"""Whole runs replayed from real model traffic: every model call of the opt-in test's run on
Qwen2.5-Coder-1.5B-Instruct (llama.cpp, one seed), recorded by its proxy
(AGENTSITE_TEST_MODEL_RECORD, tests/fixtures/real-models/README.md), answered byte for byte
through the real provider, with the run's tools run for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.services.runs import run_create, run_plan
from tests.fakes.replay_server import ReplayOpenAI
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent.parent / "fixtures" / "real-models"
TASK = "Compute 1500 * 0.2 + 75 with the calculator and report the result."
ROUTE = "openai:qwen"


@pytest.fixture
def replay(settings):
    def start(name: str) -> ReplayOpenAI:
        server = ReplayOpenAI(FIXTURES / name)
        server.__enter__()
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "local"
        settings.AGENTSITE_MODEL_MAX_RETRIES = 0
        servers.append(server)
        return server

    servers: list[ReplayOpenAI] = []
    yield start
    for server in servers:
        server.__exit__(None, None, None)


def test_a_sum_saved_to_a_file_is_reported_with_the_sum(replay, make_user) -> None:
    # Seed 11: the plan computes the sum, then writes it to result.txt; that last step says
    # only "The result has been written to 'result.txt'.". Shown that line alone, the
    # synthesizer wrote a sum of its own, 300.0; shown the step it depends on too, 375.
    server = replay("qwen2.5-coder-1.5b-seed11.jsonl")
    run = run_create(
        owner=make_user(),
        options=RunOptions(
            task=TASK,
            routes={"planner": ROUTE, "executor": f"{ROUTE}#auto"},
            auto_approve=True,
        ),
    )
    run_plan(run.pk)
    run = drive(run)

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.outcome == "succeeded", run.outcome_reason  # no figure in doubt
    assert "375" in run.result
    # Every request was answered from the recording, in order: nothing scripted, none left.
    assert server.answered_by == list(range(6)) and server.unused == []
    synthesizer = server.requests[-1].body["messages"][-1]["content"]
    assert '<output step="calculator"' in synthesizer
