"""The run page's refresh that keeps the plan's workspace (views.runs.render_run, `keep`): the
fragment leaves the graph and the cards out only while the workspace the page holds is still
the run's (the timeline with them), and says so in a header run.js reads before the swap."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_pause, run_plan

pytestmark = pytest.mark.django_db


def _refresh(client, run: Run, keep: str = ""):
    url = reverse("run_detail", args=[run.pk]) + (f"?keep={keep}" if keep else "")
    return client.get(url, HTTP_HX_REQUEST="true")


def _key(body: str) -> str:
    (key,) = re.findall(r'id="plan-workspace" data-key="([^"]+)"', body)
    return key


@pytest.fixture
def planned(alice) -> Run:
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    return run


def test_a_refresh_keeping_the_workspace_leaves_the_graph_and_cards_out(client_alice, planned):
    whole = _refresh(client_alice, planned).content.decode()
    key = _key(whole)
    assert 'id="plan-graph-data"' in whole and 'id="steps"' in whole

    light = _refresh(client_alice, planned, keep=key)
    body = light.content.decode()
    assert light["X-Workspace-Kept"] == key
    assert f'<section class="card plan-workspace" id="plan-workspace" data-kept="{key}">' in body
    assert 'id="plan-graph-data"' not in body and 'id="steps"' not in body
    # The timeline too: the page keeps its own and fetches it again where it is in sight.
    assert '<section class="card run-timeline" id="run-timeline" data-kept="yes">' in body
    assert 'id="timeline-active"' not in body and 'id="timeline-active"' in whole
    # The rest of the fragment is all there: the header with its event, the estimate.
    assert 'id="run-header"' in body and 'id="run-estimate"' in body
    assert f'data-seq="{Run.objects.get().last_event_seq}"' in body
    assert len(body) < len(whole) / 2


def test_a_key_no_longer_the_run_s_gets_the_whole_workspace(client_alice, alice, planned):
    key = _key(_refresh(client_alice, planned).content.decode())
    run_approve_plan(planned.pk)  # its status, and the plan approved
    after = _refresh(client_alice, planned, keep=key)
    body = after.content.decode()
    assert "X-Workspace-Kept" not in after
    assert 'id="plan-graph-data"' in body and _key(body) != key
    # A pause changes what a card offers: the key changes with it.
    running = _key(body)
    run_pause(planned.pk, alice)
    assert _key(_refresh(client_alice, planned, keep=running).content.decode()) != running


def test_only_the_fragment_keeps_anything(client_alice, planned):
    key = _key(_refresh(client_alice, planned).content.decode())
    page = client_alice.get(reverse("run_detail", args=[planned.pk]) + f"?keep={key}")
    assert "X-Workspace-Kept" not in page
    assert 'id="plan-graph-data"' in page.content.decode()


def test_someone_else_s_run_is_not_refreshed_whatever_the_key(client_alice, make_user):
    bob = make_user("bob")
    run = Run.objects.create(owner=bob, task="Bob's task")
    run_plan(run.pk)
    assert _refresh(client_alice, run, keep="1-0-awaiting_plan_approval").status_code == 404
