"""Revision on request: propose, accept, discard, and the refusals around them."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.edits import UpdateStep
from planner_ui.core.errors import InvalidTransition
from planner_ui.models import PlanProposal, PlanVersion, Run
from planner_ui.services.plans import PlanConflict, plan_edit
from planner_ui.services.proposals import (
    proposal_accept,
    proposal_discard,
    proposal_make,
    proposal_request,
)
from tests.fakes.anthropic_server import FakeAnthropic
from tests.services.test_runs import planned

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(make_user):
    return planned(make_user(), "Research tea and coffee")


def test_the_planner_proposes_and_the_person_accepts(run):
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    assert proposal.state == PlanProposal.State.PENDING
    proposal_make(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.state == PlanProposal.State.READY, proposal.error
    ids = [s["id"] for s in proposal.plan["steps"]]
    assert "research-mate" in ids
    assert run.plan_versions.count() == 1  # nothing adopted yet
    version = proposal_accept(run_id=run.pk, proposal_id=proposal.pk)
    assert (version.number, version.author) == (2, PlanVersion.Author.PLANNER)
    assert version.note == "revised on request: and mate"
    assert run.steps.filter(step_id="research-mate").exists()
    proposal.refresh_from_db()
    assert proposal.state == PlanProposal.State.ACCEPTED


def test_discard_keeps_the_plan(run):
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    proposal_make(proposal.pk)
    proposal_discard(run_id=run.pk, proposal_id=proposal.pk)
    assert run.plan_versions.count() == 1
    assert not run.steps.filter(step_id="research-mate").exists()
    with pytest.raises(InvalidTransition, match="This revision is discarded"):
        proposal_accept(run_id=run.pk, proposal_id=proposal.pk)


def test_a_proposal_made_against_an_older_plan_is_a_conflict(run):
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    proposal_make(proposal.pk)
    plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=UpdateStep(run.steps.first().step_id, title="Edited meanwhile"),
    )
    with pytest.raises(PlanConflict):
        proposal_accept(run_id=run.pk, proposal_id=proposal.pk)
    assert run.plan_versions.count() == 2


def test_requests_are_validated(run):
    with pytest.raises(InvalidTransition, match="the request is empty"):
        proposal_request(run_id=run.pk, base_version=1, note="  ")
    proposal_request(run_id=run.pk, base_version=1, note="and mate")
    with pytest.raises(InvalidTransition, match="already working on a revision"):
        proposal_request(run_id=run.pk, base_version=1, note="and rooibos")


def test_the_model_gets_the_current_plan_and_the_request(run, settings):
    with FakeAnthropic() as server:
        settings.AGENTSITE_PROVIDER = "anthropic"
        settings.ANTHROPIC_API_KEY = "test-key"
        settings.ANTHROPIC_BASE_URL = server.base_url
        # The run was planned offline; its revisions go to the planner its routes now name.
        Run.objects.filter(pk=run.pk).update(
            routes={**run.routes, "planner": "anthropic:claude-opus-5-5"}
        )
        server.enqueue_text("not a plan")
        server.enqueue_json({"steps": []})
        proposal = proposal_request(run_id=run.pk, base_version=1, note="Drop the coffee step")
        proposal_make(proposal.pk)
        first = server.requests[0].body["messages"][0]["content"]
        assert "<current_plan>" in first and '"research-tea"' in first
        assert "<revision_request>\nDrop the coffee step\n</revision_request>" in first
    proposal.refresh_from_db()
    assert proposal.state == PlanProposal.State.FAILED
    assert proposal.error == "The revised plan was invalid twice: the plan has no steps"
    assert json.loads(json.dumps(run.plan_versions.get().plan))["steps"]
