"""Whole runs replayed from real model traffic: every model call of the opt-in test's run on
Qwen2.5-Coder-1.5B-Instruct (llama.cpp, one seed), recorded by its proxy
(AGENTSITE_TEST_MODEL_RECORD, tests/fixtures/real-models/README.md), answered byte for byte
through the real provider, with the run's tools run for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run
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


def replayed_run(owner) -> Run:
    """The opt-in test's task, planned and run to its end on the replayed model, as recorded:
    the planner and every executor on it, the plan approved at once."""
    run = run_create(
        owner=owner,
        options=RunOptions(
            task=TASK,
            routes={"planner": ROUTE, "executor": f"{ROUTE}#auto"},
            auto_approve=True,
        ),
    )
    run_plan(run.pk)
    return drive(run)


def test_a_sum_saved_to_a_file_is_reported_with_the_sum(replay, make_user) -> None:
    # Seed 11: the plan computes the sum, then writes it to result.txt; that last step says
    # only "The result has been written to 'result.txt'.". Shown that line alone, the
    # synthesizer wrote a sum of its own, 300.0; shown the step it depends on too, 375.
    server = replay("qwen2.5-coder-1.5b-seed11.jsonl")
    run = replayed_run(make_user())

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.outcome == "succeeded", run.outcome_reason  # no figure in doubt
    assert "375" in run.result
    # Every request was answered from the recording, in order: nothing scripted, none left.
    assert server.answered_by == list(range(6)) and server.unused == []
    synthesizer = server.requests[-1].body["messages"][-1]["content"]
    assert '<output step="calculator"' in synthesizer


def test_a_synthesizer_that_hands_the_prompt_back_twice_fails_the_run(replay, make_user) -> None:
    # Seed 99: the sum computed with the calculator, written to output.txt (five times over,
    # until the step's last turn); then the synthesizer wrote the prompt's <task> and <output>
    # blocks back, and, asked once more, an <output> block again. Every step had succeeded,
    # so re-planning has nothing to route around: it used to be asked for all the same, for
    # step "synthesis", and crashed looking it up among the plan's steps.
    server = replay("qwen2.5-coder-1.5b-seed99.jsonl")
    run = replayed_run(make_user())

    assert run.status == RunStatus.FAILED and not run.replanning
    assert run.replans == 0
    assert run.error.startswith("step 'synthesis' failed: "), run.error
    assert run.steps.get(step_id="calculation").output.strip() == "1500 * 0.2 + 75 = 375"
    assert run.events.filter(type="step.tool_call", payload__tool="calculator").exists()
    # Every request was answered from the recording, in order: nothing scripted, none left.
    assert server.answered_by == list(range(14)) and server.unused == []


def test_asked_for_the_calculator_held_to_a_call_it_calls_it(replay, make_user) -> None:
    # Seed 23: the compute step answered "<output>375.0</output>" calling nothing (on the code
    # before, asked again it gave up, and its answer stood without the calculator). The ask's
    # reply is now held to a calculator call by a schema: the model made it, and 375 came from
    # the tool. The report step wrote a call to a "display" tool it does not have, twice, and
    # failed; its re-plan granted write_file, which the model called again after its result,
    # twice, each refused as a repeat (the file is written once), and was then held to an
    # answer.
    server = replay("qwen2.5-coder-1.5b-seed23.jsonl")
    run = replayed_run(make_user())

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert "375" in run.result and run.replans == 1
    assert server.answered_by == list(range(12)) and server.unused == []
    # The ask: a calculator call and nothing else, with a call's room.
    asked = server.requests[2].body
    assert asked["messages"][-1]["content"].startswith("This step's instruction says to use")
    assert asked["max_tokens"] == 1024 and "tools" not in asked
    schema = asked["response_format"]["json_schema"]["schema"]
    (shape,) = schema["properties"]["tool_calls"]["items"]["anyOf"]
    assert schema["required"] == ["tool_calls"] and shape["properties"]["name"] == {
        "const": "calculator"
    }
    calls = run.events.filter(type="step.tool_call").order_by("seq")
    assert [c.payload["tool"] for c in calls] == ["calculator", *["write_file"] * 3]
    results = [e.payload for e in run.events.filter(type="step.tool_result").order_by("seq")]
    assert results[0]["content"] == "1500 * 0.2 + 75 = 375"
    assert [r["is_error"] for r in results[1:]] == [False, True, True]
    assert not any("answered without" in warning for warning in run.warnings), run.warnings
    # The last reply of the report step was held to an answer.
    held = server.requests[10].body["response_format"]["json_schema"]["schema"]
    assert held["required"] == ["answer"]


def test_a_step_told_to_save_its_result_writes_the_file_the_next_step_reads(
    replay, make_user
) -> None:
    # Seed 42: step "0" is to "Save the result as a file named 'result.txt'" with the
    # calculator. It called the calculator (375), then again twice, refused as repeats; held to
    # an answer, it said 375. On the code before, that ended the step, result.txt was never
    # written, and step "1"'s read of it failed through two re-plans. Now the answer is asked
    # about the write its instruction asks for, the reply held to a write_file call.
    server = replay("qwen2.5-coder-1.5b-seed42.jsonl")
    run = replayed_run(make_user())

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert "375" in run.result and run.replans == 0
    assert server.answered_by == list(range(12)) and server.unused == []
    # Held to an answer after the second refused repeat, then asked for the write.
    assert server.requests[5].body["response_format"]["json_schema"]["schema"]["required"] == [
        "answer"
    ]
    asked = server.requests[6].body
    assert asked["messages"][-1]["content"].startswith(
        "This step's instruction says to use write_file"
    )
    (shape,) = asked["response_format"]["json_schema"]["schema"]["properties"]["tool_calls"][
        "items"
    ]["anyOf"]
    assert shape["properties"]["name"] == {"const": "write_file"}
    assert run.steps.get(step_id="1").output == "The calculated result is 375."
