"""The run page's estimate: before approval the forecast and the critical path; after the run,
each step's actual figures beside its estimate."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from planner_ui.core import estimate as heuristics
from planner_ui.models import Run
from planner_ui.selectors.estimate import run_estimate
from planner_ui.selectors.runs import run_graph
from planner_ui.services.runs import run_approve_plan
from planner_ui.views.step_cards import estimate_note
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

# The offline planner makes one step per line; the calculation becomes a step with a tool.
TASK = "1. Research tea\n2. Research coffee\n3. Compute 3 * 95 + 2 * 40"
PRICES = {"offline:*": {"input": 3, "output": 15}}


def text_of(page: str, element_id: str) -> str:
    """The visible text of the element with this id, whitespace collapsed."""
    match = re.search(rf'<(\w+)[^>]* id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, f"no #{element_id} on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", match.group(2))).split())


def page_of(client, run: Run) -> str:
    response = client.get(reverse("run_detail", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_before_approval_the_page_shows_the_estimate_and_the_critical_path(
    client_alice, alice, settings
):
    settings.AGENTSITE_PRICES = PRICES
    run = planned(alice, TASK)
    assert run.status == "awaiting_plan_approval"
    steps = {s.step_id: s for s in run.steps.all()}
    tooled = [s for s in steps.values() if s.tools]
    assert len(tooled) == 1 and not tooled[0].depends_on

    page = page_of(client_alice, run)

    estimate = run_estimate(run).plan
    # One call per step, two for the step with the calculator.
    assert estimate.calls == len(steps) + 1
    summary = text_of(page, "estimate-summary")
    assert summary == (
        f"Estimate to execute this plan: {estimate.calls} model calls, "
        f"~{estimate.tokens_in:,} tokens in, ~{estimate.tokens_out:,} out, "
        f"~${estimate.cost_usd.quantize(Decimal('0.0001'))}"
    )
    # The deepest chain runs through the step that makes two calls, then the report that
    # joins the branches, then the synthesis.
    (report,) = steps["synthesis"].depends_on
    path = [tooled[0].step_id, report, "synthesis"]
    assert list(estimate.critical_path) == path
    assert text_of(page, "estimate-critical-path") == (
        f"Critical path: {' → '.join(path)} (4 calls deep)"
    )
    # Each card carries its own estimate; no actual figures exist yet.
    assert "estimated 2 calls, ~" in page and ", on the critical path</span>" in page
    assert 'id="estimate-vs-actual"' not in page
    part = client_alice.get(reverse("run_estimate", args=[run.pk])).content.decode()
    assert "No step has run yet." in part and "<table" not in part
    graph = run_graph(run)
    assert [n["id"] for n in graph["nodes"] if n["critical"]] == path
    critical_edges = [(e["source"], e["target"]) for e in graph["edges"] if e["critical"]]
    assert critical_edges == list(zip(path, path[1:], strict=False))
    assert all(
        set(n) >= {"id", "title", "role", "tools", "effects", "status"} for n in graph["nodes"]
    )


def test_an_unpriced_model_is_named_and_the_cost_left_unknown(client_alice, alice, settings):
    settings.AGENTSITE_PRICES = {}
    run = planned(alice, "Research tea and coffee")

    page = page_of(client_alice, run)

    summary = text_of(page, "estimate-summary")
    assert summary.endswith("out, cost unknown (unpriced: offline:offline-v1)")


def test_the_estimate_follows_an_edit_of_the_plan(client_alice, alice, settings):
    settings.AGENTSITE_PRICES = PRICES
    run = planned(alice, "Research tea and coffee")
    before = run_estimate(run).plan
    # Two parallel first steps of one call each: the path takes the first, so give the other
    # a tool.
    step = [s for s in run.steps.all() if not s.depends_on][-1]
    assert before.critical_path[0] != step.step_id

    response = client_alice.post(
        reverse("plan_change", args=[run.pk]),
        {
            "op": "update",
            "base_version": "1",
            "step_id": step.step_id,
            "tools_shown": "1",
            "tools": ["fetch_url"],
        },
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    after = run_estimate(run).plan
    assert after.calls == before.calls + 1
    assert after.critical_path[0] == step.step_id
    assert f"({after.critical_calls} calls deep)" in response.content.decode()


def test_after_the_run_each_step_shows_actual_beside_estimate(client_alice, alice, settings):
    settings.AGENTSITE_PRICES = PRICES
    run = planned(alice, TASK)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == "succeeded", run.error

    page = page_of(client_alice, run)
    # The page holds the link to each step's figures, fetched when the estimate is opened.
    part = reverse("run_estimate", args=[run.pk])
    assert f'data-src="{part}"' in page and 'id="estimate-vs-actual"' not in page
    table = client_alice.get(part).content.decode()

    assert text_of(page, "estimate-summary").startswith("Estimated to execute this plan:")
    estimate = run_estimate(run)
    assert estimate.executing
    for row in estimate.steps:
        step = run.steps.get(step_id=row.step_id)
        assert row.actual is not None
        assert (row.actual.calls, row.actual.tokens_in) == (step.model_calls, step.tokens_in)
        cells = re.search(rf'<tr data-step-id="{row.step_id}"[^>]*>(.*?)</tr>', table, re.S)
        assert cells, row.step_id
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cells.group(1))).split())
        assert text.startswith(
            f"{row.step_id} {step.model_calls} / {row.estimate.calls} "
            f"{step.tokens_in:,} / ~{row.estimate.tokens_in:,} "
            f"{step.tokens_out:,} / ~{row.estimate.tokens_out:,} "
        ), text
    # The steps' totals exclude the planner, whose call the run's own totals hold.
    planner_calls = run.calls.filter(step_id="").count()
    assert estimate.actual_calls == run.model_calls - planner_calls
    footer = re.search(r"<tfoot>(.*?)</tfoot>", table, re.S).group(1)
    footer_text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", footer)).split())
    assert footer_text.startswith(f"All steps {estimate.actual_calls} / {estimate.plan.calls} ")
    # The step cards show the actual figures and the estimate side by side.
    assert page.count('<span class="step-estimate">estimated ') == len(estimate.steps)


def test_before_any_plan_there_is_no_estimate(client_alice, alice):
    run = Run.objects.create(owner=alice, task="Research tea")

    page = page_of(client_alice, run)

    assert run_estimate(run).plan is None
    assert 'id="run-estimate"' not in page


def test_a_run_without_routes_estimates_calls_and_tokens_but_not_cost(alice, settings):
    settings.AGENTSITE_PRICES = PRICES
    run = planned(alice, "Research tea and coffee")
    Run.objects.filter(pk=run.pk).update(routes={})
    run.refresh_from_db()

    estimate = run_estimate(run).plan

    assert estimate.cost_usd is None
    assert estimate.calls == run.steps.count()
    assert "synthesizer (no model)" in estimate.unpriced_models
    assert estimate.step("synthesis").tokens_out == heuristics.OUTPUT_TOKENS_BY_ROLE["synthesizer"]


@pytest.mark.parametrize(
    ("estimate", "critical", "note"),
    [
        (
            heuristics.StepEstimate("a", "m", 1, 1459, 1200, Decimal("0.0031")),
            False,
            "estimated 1 call, ~1,459 / ~1,200 tokens, ~$0.0031",
        ),
        (
            heuristics.StepEstimate("b", "m", 2, 12000, 400, None),
            True,
            "estimated 2 calls, ~12,000 / ~400 tokens, on the critical path",
        ),
        (None, True, ""),
    ],
)
def test_a_step_card_writes_its_estimate_out(estimate, critical, note):
    assert estimate_note(estimate, critical) == note
