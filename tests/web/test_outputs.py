"""A long step output or result is sent as its opening, and the rest comes when it is unfolded
(views.outputs, core.fold): as a fragment for the page's script, as a page of its own without."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from planner_ui.core.fold import RESULT, STEP_OUTPUT
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

# Forty paragraphs, the last of them far past any opening, and markup a model might write.
LONG = "\n\n".join(f"Paragraph {n}: " + "tea " * 20 for n in range(40)) + (
    "\n\nThe **last** word. <script>alert(1)</script><img src=x onerror=alert(2)>"
)


@pytest.fixture
def run(alice) -> Run:
    run = Run.objects.create(owner=alice, task="Research the history of tea, then summarize")
    run_plan(run.pk)
    run_approve_plan(run.pk)
    return drive(run)


def _step_output(page: str, step_id: str) -> str:
    div = rf'<div class="step-output[^"]*" id="output-{step_id}">(.*?)</div>\n'
    found = re.search(div, page, re.S)
    assert found, f"no output for {step_id}"
    return found.group(1)


def test_a_long_output_is_sent_as_its_opening_and_the_rest_comes_when_unfolded(
    client_alice, run
) -> None:
    step = run.steps.exclude(role="synthesizer").first()
    step.output = LONG
    step.save(update_fields=["output"])
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    shown = _step_output(page, step.step_id)
    assert "Paragraph 0:" in shown and "Paragraph 39" not in shown and "last" not in shown
    assert len(shown) < 2 * STEP_OUTPUT.opening_chars
    rest = reverse("step_output", args=[run.pk, step.step_id])
    assert f'aria-controls="output-{step.step_id}" aria-expanded="false" data-src="{rest}"' in page
    whole = client_alice.get(rest, HTTP_HX_REQUEST="true")
    body = whole.content.decode()
    assert whole.status_code == 200 and "<html" not in body
    assert "<p>Paragraph 0:" in body and "<p>Paragraph 39:" in body
    assert "<strong>last</strong> word." in body
    # Sanitized as the opening is: what the model wrote is text, never script.
    assert "<script" not in body and "<img" not in body and "&lt;script&gt;alert(1)" in body


def test_a_short_output_is_sent_whole_with_no_fold(client_alice, run) -> None:
    step = run.steps.exclude(role="synthesizer").first()
    step.output = "Tea came from *China*."
    step.save(update_fields=["output"])
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert _step_output(page, step.step_id).strip() == "<p>Tea came from <em>China</em>.</p>"
    assert f'aria-controls="output-{step.step_id}"' not in page


def test_an_output_long_only_in_lines_is_folded_but_sent_whole(client_alice, run) -> None:
    step = run.steps.exclude(role="synthesizer").first()
    step.output = "\n\n".join(f"Line {n}" for n in range(5))  # 9 newlines, within the opening
    step.save(update_fields=["output"])
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "<p>Line 4</p>" in _step_output(page, step.step_id)
    button = re.search(rf'<button[^>]*aria-controls="output-{step.step_id}"[^>]*>', page)
    assert button and "data-src" not in button.group()


def test_without_script_the_rest_is_a_page_of_its_own(client_alice, run) -> None:
    step = run.steps.exclude(role="synthesizer").first()
    step.output = LONG
    step.save(update_fields=["output"])
    rest = reverse("step_output", args=[run.pk, step.step_id])
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    link = f'<noscript><a href="{rest}" class="whole-output">The whole output</a></noscript>'
    assert link in page
    alone = client_alice.get(rest).content.decode()
    assert "<html" in alone and f"Output of step {step.step_id}" in alone
    assert f'href="{reverse("run_detail", args=[run.pk])}#step-{step.step_id}"' in alone
    assert "<p>Paragraph 39:" in alone and "<script>alert" not in alone
    missing = reverse("step_output", args=[run.pk, "no-such-step"])
    assert client_alice.get(missing, HTTP_HX_REQUEST="true").status_code == 404


def test_a_long_result_is_sent_as_its_opening_too(client_alice, run) -> None:
    Run.objects.filter(pk=run.pk).update(result=LONG)
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    shown = re.search(r'id="result-body">(.*?)</div>\n', page, re.S)
    assert shown and "Paragraph 0:" in shown.group(1) and "Paragraph 39" not in shown.group(1)
    assert len(shown.group(1)) < 2 * RESULT.opening_chars
    rest = reverse("run_result", args=[run.pk])
    assert f'aria-controls="result-body" aria-expanded="false" data-src="{rest}"' in page
    body = client_alice.get(rest, HTTP_HX_REQUEST="true").content.decode()
    assert "<p>Paragraph 39:" in body and "<script" not in body and "<html" not in body
