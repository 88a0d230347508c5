"""A revision proposal over HTTP: merged with the person's edits, conflicts as choices, and the
refusals a forged or incomplete form gets."""

from __future__ import annotations

import pytest
from django.urls import reverse

from planner_ui.core.edits import AddStep, UpdateStep
from planner_ui.models import PlanProposal, Run
from planner_ui.services.plans import plan_edit
from planner_ui.services.proposals import proposal_make, proposal_request
from planner_ui.services.runs import run_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(alice):
    run = Run.objects.create(owner=alice, task="Research tea and coffee")
    run_plan(run.pk)
    return run


def conflicting(run) -> PlanProposal:
    """research-tea's instruction changed by the person (version 2) and by the revision."""
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", instruction="Green."))
    proposal = proposal_request(run_id=run.pk, base_version=2, note="and mate")
    proposal_make(proposal.pk)
    return proposal


def revision(client, run, proposal, htmx=True, **data):
    data = {"action": "accept", "proposal": proposal.pk, "base_version": "2", **data}
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("plan_revision", args=[run.pk]), data, **headers)


def test_the_page_offers_each_conflict_as_a_choice(client_alice, run):
    conflicting(run)
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'name="choice:research-tea:instruction" value="mine"' in body
    assert 'name="choice:research-tea:instruction" value="theirs"' in body
    assert 'Keep mine: <span class="choice">Green.</span>' in body
    assert 'name="base_version" value="2"' in body
    assert 'id="proposal-graph-data"' in body and '"research-tea": "conflict"' in body


def test_a_plain_post_with_a_choice_saves_the_merge(client_alice, run):
    proposal = conflicting(run)
    response = revision(
        client_alice, run, proposal, htmx=False, **{"choice:research-tea:instruction": "mine"}
    )
    assert response.status_code == 302
    page = client_alice.get(response["Location"]).content.decode()
    assert "Saved version 3: revised on request: and mate" in page
    assert run.steps.get(step_id="research-tea").instruction == "Green."
    assert run.steps.filter(step_id="research-mate").exists()


@pytest.mark.parametrize("choice", [None, "", "both", "<script>"])
def test_an_undecided_or_forged_choice_is_refused_by_name(client_alice, run, choice):
    proposal = conflicting(run)
    data = {} if choice is None else {"choice:research-tea:instruction": choice}
    response = revision(client_alice, run, proposal, **data)
    assert response.status_code == 400
    assert (
        "The revision was refused, and the plan is as it was: choose “keep mine” or “take the "
        "planner&#x27;s” for: you and the planner both changed the instruction of step "
        "&#x27;research-tea&#x27;"
    ) in response.content.decode()
    assert run.plan_versions.count() == 2


def test_a_merge_shown_against_an_older_version_is_a_conflict(client_alice, run):
    proposal = conflicting(run)
    response = revision(
        client_alice, run, proposal, base_version="1", **{"choice:research-tea:instruction": "mine"}
    )
    assert response.status_code == 409
    assert "The plan changed since you opened it" in response.content.decode()


def test_a_merge_that_closes_a_cycle_is_named_and_offers_only_discard(client_alice, run):
    # The person makes a new step wait for the report; the planner (its proposal written
    # here) makes research-tea wait for that same step.
    plan_edit(
        run_id=run.pk,
        base_version=1,
        edit=AddStep("check", "Check", "Check it.", "critic", (), ("write-report",)),
    )
    plan = run.plan_versions.get(number=1).plan
    plan["steps"].append(
        {
            "id": "check",
            "title": "Check",
            "instruction": "Check it.",
            "role": "critic",
            "tools": [],
            "depends_on": [],
        }
    )
    plan["steps"][0]["depends_on"] = ["check"]
    PlanProposal.objects.create(
        run=run, base_version=1, note="n", state=PlanProposal.State.READY, plan=plan
    )

    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()

    assert "This revision cannot be merged with the current plan: combining your changes" in body
    assert "makes a cycle: " in body
    assert 'id="accept-proposal"' not in body and 'id="discard-proposal"' in body


def test_the_comparison_of_two_versions_draws_the_newer_with_its_changes_marked(client_alice, run):
    plan_edit(run_id=run.pk, base_version=1, edit=UpdateStep("research-tea", title="Green"))
    url = reverse("plan_diff", args=[run.pk]) + "?from=1&to=2"
    page = client_alice.get(url).content.decode()
    assert 'data-diff-graph="version-diff-graph-data"' in page
    assert '"marks": {"research-tea": "changed"}' in page
    assert "planner_ui/graph.js" in page
    same = client_alice.get(url.replace("from=1", "from=2"), HTTP_HX_REQUEST="true")
    assert "The two versions are the same." in same.content.decode()
    assert "data-diff-graph" not in same.content.decode()
