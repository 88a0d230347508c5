"""Revision on request: propose, accept, discard, and the refusals around them."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.edits import AddStep, UpdateStep
from planner_ui.core.errors import InvalidTransition, PlanValidationError
from planner_ui.core.plan import Plan
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


def test_an_edit_made_while_the_planner_worked_is_merged_in(run):
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    proposal_make(proposal.pk)
    plan_edit(
        run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", title="Tea, all of it")
    )

    version = proposal_accept(run_id=run.pk, proposal_id=proposal.pk, base_version=2)

    plan = Plan.model_validate(version.plan)
    assert plan.step("research-tea").title == "Tea, all of it"
    assert "research-mate" in [s.id for s in plan.steps]
    assert version.note == "revised on request: and mate (merged with the changes since version 1)"


def test_accepting_a_merge_shown_against_an_older_version_is_a_conflict(run):
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    proposal_make(proposal.pk)
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", title="Edited"))
    with pytest.raises(PlanConflict):
        proposal_accept(run_id=run.pk, proposal_id=proposal.pk, base_version=1)
    assert run.plan_versions.count() == 2


def test_a_rename_and_an_added_step_survive_the_revision(run):
    """The issue's case: the offline planner re-reads the task and knows nothing of them."""
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", title="Green tea"))
    plan_edit(
        run_id=run.pk,
        base_version=2,
        edit=AddStep("price-check", "Check prices", "Find prices.", "researcher", (), ()),
    )
    proposal = proposal_request(run_id=run.pk, base_version=3, note="and mate")
    proposal_make(proposal.pk)

    version = proposal_accept(run_id=run.pk, proposal_id=proposal.pk, base_version=3)

    plan = Plan.model_validate(version.plan)
    assert plan.step("research-tea").title == "Green tea"
    assert plan.step("price-check").instruction == "Find prices."
    assert "research-mate" in [s.id for s in plan.steps]
    assert run.steps.get(step_id="research-tea").title == "Green tea"
    assert run.steps.filter(step_id="price-check").exists()


def _conflicting_proposal(run) -> PlanProposal:
    # The revision rewords every step (its context names the longer task), and so does the
    # person, in research-tea: the same field changed on both sides.
    plan_edit(
        run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", instruction="Only green.")
    )
    proposal = proposal_request(run_id=run.pk, base_version=2, note="and mate")
    proposal_make(proposal.pk)
    proposal.refresh_from_db()
    return proposal


def test_a_conflict_must_be_chosen_before_the_revision_is_accepted(run):
    proposal = _conflicting_proposal(run)
    with pytest.raises(PlanValidationError) as refused:
        proposal_accept(run_id=run.pk, proposal_id=proposal.pk, base_version=2)
    assert refused.value.errors == [
        "choose “keep mine” or “take the planner's” for: you and the planner both changed "
        "the instruction of step 'research-tea'"
    ]
    assert run.plan_versions.count() == 2


@pytest.mark.parametrize("choice", ["mine", "theirs"])
def test_the_persons_choice_decides_a_conflict(run, choice):
    proposal = _conflicting_proposal(run)
    version = proposal_accept(
        run_id=run.pk,
        proposal_id=proposal.pk,
        base_version=2,
        choices={"research-tea:instruction": choice},
    )
    instruction = Plan.model_validate(version.plan).step("research-tea").instruction
    theirs = Plan.model_validate(proposal.plan).step("research-tea").instruction
    assert instruction == ("Only green." if choice == "mine" else theirs)


def test_a_merged_plan_is_validated_like_any_other(run):
    """A tool the planner may no longer grant (its MCP server is gone, say) is refused."""
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and mate")
    proposal_make(proposal.pk)
    proposal.refresh_from_db()
    plan = proposal.plan
    plan["steps"][0]["tools"] = ["no_such_tool"]
    PlanProposal.objects.filter(pk=proposal.pk).update(plan=plan)
    with pytest.raises(PlanValidationError, match="grants unknown tool 'no_such_tool'"):
        proposal_accept(run_id=run.pk, proposal_id=proposal.pk, base_version=1)
    assert run.plan_versions.count() == 1


def test_a_note_that_asks_for_research_adds_a_researcher_step(make_user):
    """The README's note: 'and also research mate' made a writer step, read as more of the
    task 'Research tea and coffee, then write a short summary'."""
    run = planned(make_user(), "Research tea and coffee, then write a short summary")
    proposal = proposal_request(run_id=run.pk, base_version=1, note="and also research mate")
    proposal_make(proposal.pk)
    proposal.refresh_from_db()

    plan = Plan.model_validate(proposal.plan)
    assert [(s.id, s.role) for s in plan.steps] == [
        ("research-tea", "researcher"),
        ("research-coffee", "researcher"),
        ("write-short-summary", "writer"),
        ("research-mate", "researcher"),
    ]
    assert plan.step("write-short-summary").depends_on == [
        "research-tea",
        "research-coffee",
        "research-mate",
    ]
    # Every other step is the current plan's, as it was.
    current = Plan.model_validate(run.plan_versions.get().plan)
    assert plan.steps[:3] == [
        s.model_copy(update={"depends_on": plan.step(s.id).depends_on}) for s in current.steps
    ]


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
