"""In the browser: choose a local model for the executors and a budget, watch an executor's
text arrive as it is written, and read what each role cost."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from planner_ui.models import ProviderCredential, Run
from tests.fakes.openai_server import FakeOpenAI
from tests.services.test_runs import planned

from .flows import login, open_step

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

ANSWER = "Green tea has about half the caffeine of black tea, and far less than coffee."


def test_a_run_on_a_local_model_streams_its_text_and_shows_its_usage(
    page, daphne_url, celery_worker_process, make_user
):
    with FakeOpenAI(api_key=None) as server:
        # Set in the admin, so the web server and the worker both see it without a restart.
        ProviderCredential.objects.create(provider="openai", base_url=server.base_url)
        make_user("alice", "pw-for-tests-1")
        login(page, daphne_url, "alice", "pw-for-tests-1")
        page.fill("#id_task", "Research how much caffeine tea has")
        page.click("#run-options summary")
        expect(page.locator("#providers")).to_contain_text(server.base_url)
        page.fill("#id_route_executor", "openai:qwen3:8b")
        page.fill("#id_budget_tokens", "100000")
        page.click("#plan-it")

        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        run = Run.objects.get()
        steps = [s for s in run.steps.all() if s.step_id != "synthesis"]
        expect(page.locator("#run-executor-model")).to_have_text("openai:qwen3:8b")
        # Each executor answers in small pieces, a tenth of a second apart.
        for _ in steps:
            server.enqueue_text(ANSWER, piece_delay_s=0.1, prompt_tokens=200, completion_tokens=20)
        server.enqueue_text("# Caffeine\n\n" + ANSWER, prompt_tokens=300, completion_tokens=30)

        # The first step's card is open when the page comes back from the approval.
        open_step(page, steps[0].step_id)
        page.click("#approve-plan")
        first = page.locator(f"#step-{steps[0].step_id} .step-live")
        # Part of the answer shows while the model is still writing it.
        expect(first).to_be_visible(timeout=30_000)
        partial = first.text_content()
        assert partial and ANSWER.startswith(partial) and partial != ANSWER

        expect(page.locator("#result")).to_be_visible(timeout=60_000)
        expect(first).to_be_hidden()
        expect(page.locator(f"#step-{steps[0].step_id} .step-output")).to_have_text(ANSWER)

    run.refresh_from_db()
    expect(page.locator("#run-calls")).to_have_text(str(run.model_calls))
    roles = page.locator("#usage-by-role tbody tr")
    expect(roles.first).to_have_attribute("data-role", "planner")
    for role in {s.role for s in steps}:
        row = page.locator(f'#usage-by-role tr[data-role="{role}"]')
        calls = run.calls.filter(role=role).count()
        # Model, calls, tokens in (the server's figures), cached, out; no price for it.
        expect(row.locator("td")).to_have_text(
            [
                "openai:qwen3:8b",
                str(calls),
                f"{200 * calls:,}",
                "0",
                f"{20 * calls:,}",
                "unpriced",
                re.compile(r"\d"),
            ]
        )
    expect(page.locator("#run-routes")).to_contain_text("openai:qwen3:8b")
    expect(page.locator("#run-budget")).to_contain_text("100,000 tokens (")
    assert page.js_errors == []


def test_a_budget_holds_a_calls_answer_to_what_is_left_and_says_so(
    page, daphne_url, celery_worker_process, make_user
):
    task = "Research how much caffeine tea has"
    # What the offline planner's call takes for this task, planned for someone else first.
    probe = planned(make_user("probe"), task)
    budget = probe.tokens_in + probe.tokens_out + 3_000
    with FakeOpenAI(api_key=None) as server:
        ProviderCredential.objects.create(provider="openai", base_url=server.base_url)
        make_user("alice", "pw-for-tests-1")
        login(page, daphne_url, "alice", "pw-for-tests-1")
        page.fill("#id_task", task)
        page.click("#run-options summary")
        page.fill("#id_route_executor", "openai:qwen3:8b")
        page.fill("#id_budget_tokens", str(budget))
        page.click("#plan-it")
        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        # The first executor's answer runs to the limit it was given, counted by the server.
        server.enqueue_text(
            ANSWER, finish_reason="length", prompt_tokens=900, completion_tokens=2_100
        )
        page.click("#approve-plan")

        error = page.locator("#run-error")
        expect(error).to_contain_text(
            f"its budget of {budget:,} tokens left room for an answer of", timeout=60_000
        )
        asked = server.requests[0].body["max_tokens"]
        assert 0 < asked < 3_000  # what was left, less the request's share
        expect(error).to_contain_text(f"{asked:,} tokens and the model's reply was cut off there")
    expect(page.locator("#budget-tokens-pct")).to_have_text("100.0")
    run = Run.objects.get(owner__username="alice")
    cut = run.calls.get(step_id__gt="")
    expect(page.locator(f"#step-{cut.step_id}")).to_contain_text("skipped")
    assert page.js_errors == []
