"""The run page's script and the server agree: it describes every event type the catalogue
has, colours every step status, ranks statuses from the server's table, and refreshes a step's
card from the same template the page was first rendered with."""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from planner_ui.core.events import EventType
from planner_ui.core.status import STEP_PROGRESS, StepStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_plan
from tests.services.test_runs import drive

STATIC = Path(__file__).resolve().parents[2] / "static" / "planner_ui"


def _function_body(source: str, name: str) -> str:
    start = source.index(f"function {name}(")
    depth, i = 0, source.index("{", start)
    for j in range(i, len(source)):
        depth += {"{": 1, "}": -1}.get(source[j], 0)
        if depth == 0:
            return source[i : j + 1]
    raise AssertionError(f"no end to function {name}")


def test_the_event_log_describes_every_event_type_and_no_other() -> None:
    describe = _function_body((STATIC / "run.js").read_text(), "describe")
    cases = set(re.findall(r'case "([a-z_]+\.[a-z_]+)"', describe))
    assert cases == {str(t) for t in EventType}


def test_every_type_the_live_part_reacts_to_is_in_the_catalogue() -> None:
    apply = _function_body((STATIC / "run.js").read_text(), "apply")
    cases = set(re.findall(r'case "([a-z_]+\.[a-z_]+)"', apply))
    assert cases and cases <= {str(t) for t in EventType}


def test_the_graph_colours_exactly_the_step_statuses() -> None:
    graph = (STATIC / "graph.js").read_text()
    listed = re.search(r"const STATUSES = \[(.*?)\];", graph)
    assert listed is not None
    assert set(re.findall(r'"(\w+)"', listed.group(1))) == {str(s) for s in StepStatus}
    # Their colours are set once, as custom properties the graph, legend and timeline read.
    css = (STATIC / "app.css").read_text()
    for suffix in ("", "-bg", "-text"):
        defined = set(re.findall(rf"--status-([a-z_]+){suffix}:", css))
        assert defined == {str(s) for s in StepStatus}, suffix


def test_the_page_ranks_statuses_from_the_servers_table(client_alice, alice) -> None:
    run = Run.objects.create(owner=alice, task="Compute 2 + 2")
    run_plan(run.pk)
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    data = re.search(r'<script id="step-progress" type="application/json">(.*?)</script>', body)
    assert data is not None
    assert json.loads(data.group(1)) == {str(k): v for k, v in STEP_PROGRESS.items()}
    assert "statusRank = {" not in (STATIC / "run.js").read_text()


def _card(body: str, step_id: str) -> str:
    match = re.search(rf'<li class="step" id="step-{step_id}".*?\n</li>', body, re.S)
    assert match is not None, f"no card for {step_id}"
    # Django masks the CSRF token afresh in every response: the same token, other letters.
    return re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1…", match.group(0))


def test_a_refreshed_card_is_the_card_of_the_page(client_alice, alice) -> None:
    run = Run.objects.create(owner=alice, task="Compute 1500 * 0.2 + 75")
    run_plan(run.pk)
    run_approve_plan(run.pk)
    drive(run)
    step = run.steps.exclude(step_id="synthesis").first()
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    response = client_alice.get(
        reverse("run_step_cards", args=[run.pk]), {"steps": f"{step.step_id},synthesis,nope"}
    )
    assert response.status_code == 200
    cards = response.content.decode()
    assert cards.count('hx-swap-oob="true"') == 2
    refreshed = _card(cards, step.step_id).replace(' hx-swap-oob="true"', "")
    assert refreshed == _card(page, step.step_id)
    assert "← 1500 * 0.2 + 75 = 375" in refreshed


def test_a_refreshed_editable_card_edits_the_version_the_page_edits(client_alice, alice) -> None:
    run = Run.objects.create(owner=alice, task="Compute 1500 * 0.2 + 75")
    run_plan(run.pk)  # awaiting approval: every step but the synthesis may be edited
    step = run.steps.exclude(step_id="synthesis").first()
    page = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    cards = client_alice.get(
        reverse("run_step_cards", args=[run.pk]), {"steps": step.step_id}
    ).content.decode()
    refreshed = _card(cards, step.step_id).replace(' hx-swap-oob="true"', "")
    assert refreshed == _card(page, step.step_id)
    # Its forms come when its editor opens, and say the version they change.
    editor = reverse("step_editor", args=[run.pk, step.step_id])
    assert f'data-src="{editor}"' in refreshed
    forms = client_alice.get(editor, HTTP_HX_REQUEST="true").content.decode()
    assert 'name="base_version" value="1"' in forms


def test_another_users_cards_are_a_404(client_alice, make_user) -> None:
    run = Run.objects.create(owner=make_user("bob"), task="Bob's secret task")
    run_plan(run.pk)
    response = client_alice.get(reverse("run_step_cards", args=[run.pk]), {"steps": "synthesis"})
    assert response.status_code == 404


def test_a_card_refresh_reads_the_outputs_of_its_cards_only(client_alice, alice) -> None:
    """Refreshing a few cards of a big run must not grow with what its other steps wrote: the
    estimate a card shows comes from the plan's columns, not from every step's row."""
    run = Run.objects.create(owner=alice, task="Compute 1500 * 0.2 + 75")
    run_plan(run.pk)
    run_approve_plan(run.pk)
    drive(run)
    step = run.steps.exclude(step_id="synthesis").first()
    with CaptureQueriesContext(connection) as queries:
        response = client_alice.get(
            reverse("run_step_cards", args=[run.pk]), {"steps": step.step_id}
        )
    assert response.status_code == 200
    outputs_read = [q["sql"] for q in queries if '"planner_ui_step"."output"' in q["sql"]]
    assert outputs_read
    assert all(f"'{step.step_id}'" in sql for sql in outputs_read), outputs_read
