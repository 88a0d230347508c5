"""Learning from the past: the closest past plans a person may see are found by full-text search
(FTS5 on SQLite, tsvector on PostgreSQL: marked `database`, so both run) and given to the
planner as examples; the history's search finds runs by their task, outputs and deliverable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus
from planner_ui.models import Run, SearchDocument
from planner_ui.providers.scripted import script
from planner_ui.selectors.runs import RunFilters, run_list_for_user
from planner_ui.selectors.search import matching, plan_examples_for
from planner_ui.selectors.templates import template_get_for_user
from planner_ui.services.runs import (
    RunInputError,
    run_approve_plan,
    run_create,
    run_plan,
    run_start_from,
)
from planner_ui.services.templates import template_run, template_save_from_run, template_share

from .test_runs import drive, planned

pytestmark = [pytest.mark.database, pytest.mark.django_db]

PAST = "Research the weather in Paris, then write a short summary"
SIMILAR = "Research the weather in Lyon and write a short summary for the team"
UNRELATED = "Compute the compound interest on 1000 EUR at 5 percent over ten years"

PLAN = {
    "goal": "Answer",
    "steps": [
        {
            "id": "answer",
            "title": "Answer",
            "instruction": "Answer the task.",
            "role": "writer",
            "tools": [],
            "depends_on": [],
        }
    ],
}


def finished(user, task: str = PAST) -> Run:
    run = planned(user, task)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def planner_prompt(user, task: str, name: str) -> tuple[str, Run]:
    """Plan `task` with a scripted planner; what it was sent, and the run."""
    planner = script(name).plan(PLAN)
    routes = {"planner": f"scripted:{name}"}
    run = run_create(owner=user, options=RunOptions(task=task, routes=routes))
    run_plan(run.pk)
    run.refresh_from_db()
    assert len(planner.requests) == 1
    return planner.requests[0].messages[0]["content"], run


def test_the_planner_is_given_the_closest_past_plan_and_none_for_an_unrelated_task(alice):
    past = finished(alice)
    step = past.steps.exclude(step_id="synthesis").first()

    prompt, run = planner_prompt(alice, SIMILAR, "similar")
    assert "<past_plans>" in prompt
    assert f'<past_plan source="run {past.pk} ' in prompt
    assert f"Task: {PAST}" in prompt
    assert step.title in prompt
    # The examples come after the task, so the task block is the first and stays the task.
    assert prompt.index("<task>") < prompt.index("<past_plans>")
    assert run.plan_examples == [{"kind": "run", "id": past.pk, "number": 1, "title": PAST}]

    prompt, run = planner_prompt(alice, UNRELATED, "unrelated")
    assert "past_plan" not in prompt
    assert run.plan_examples == []


def test_another_persons_runs_are_never_examples_but_their_shared_templates_are(alice, make_user):
    bob = make_user("bob")
    theirs = finished(bob)
    assert plan_examples_for(alice, SIMILAR) == []

    saved = template_save_from_run(
        user=bob,
        version=theirs.plan_versions.get(number=1),
        name="Weather digest",
        replace=[("Paris", "city")],
    )
    assert plan_examples_for(alice, SIMILAR) == []  # not shared yet
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    template_share(saved.template, staff, True)

    [example] = plan_examples_for(alice, SIMILAR)
    assert (example.kind, example.id, example.number) == ("template", saved.template.pk, 1)
    assert example.task == "Research the weather in {city}, then write a short summary"
    assert [e.kind for e in plan_examples_for(bob, SIMILAR)] == ["template", "run"] or [
        e.kind for e in plan_examples_for(bob, SIMILAR)
    ] == ["run", "template"]


def test_staff_are_not_given_another_persons_unshared_template_as_an_example(alice, make_user):
    bob = make_user("bob")
    saved = template_save_from_run(
        user=bob,
        version=finished(bob).plan_versions.get(number=1),
        name="Weather digest",
        replace=[("Paris", "city")],
    )
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    # Staff see it among the templates, to decide whether to share it ...
    assert template_get_for_user(staff, saved.template.pk) == saved.template
    # ... but their planner is not handed it while it is only bob's.
    assert plan_examples_for(staff, SIMILAR) == []
    template_share(saved.template, staff, True)
    assert [e.id for e in plan_examples_for(staff, SIMILAR)] == [saved.template.pk]


def test_only_runs_that_succeeded_are_examples(alice):
    run = planned(alice, PAST)
    assert SearchDocument.objects.filter(run=run).exists()  # indexed from its creation
    assert plan_examples_for(alice, SIMILAR) == []
    run_approve_plan(run.pk)
    drive(run)
    assert [e.id for e in plan_examples_for(alice, SIMILAR)] == [run.pk]


def test_a_task_of_query_syntax_is_words_on_either_database(alice):
    finished(alice)
    for task in ['weather" OR "x', "weather: NEAR(summary", "weather & summary | !x:*", "'"]:
        plan_examples_for(alice, task)  # no syntax error from the database


def test_the_index_follows_a_run_to_its_end_and_goes_with_it(alice):
    run = finished(alice)
    document = SearchDocument.objects.get(run=run)
    assert run.result and run.result[:40] in document.content
    documents = SearchDocument.objects.filter(owner=alice)
    term = next(w for w in run.result.lower().split() if w.isalpha() and len(w) > 5)
    assert list(matching(documents, [term], match_all=True).values_list("run", flat=True)) == [
        run.pk
    ]
    # As prune_runs deletes: the run's approved plan is a protected reference to its own.
    Run.objects.filter(pk=run.pk).update(approved_plan=None)
    Run.objects.filter(pk=run.pk).delete()
    assert not matching(SearchDocument.objects.all(), [term], match_all=True).exists()


def test_a_run_starts_from_a_past_runs_plan_for_review_and_only_from_ones_own(alice, make_user):
    past = finished(alice)
    run = run_start_from(owner=alice, options=RunOptions(task=SIMILAR), source=past)

    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL and run.started_from == past
    version = run.plan_versions.get()
    assert version.plan == past.approved_plan.plan
    assert version.note == f"from run {past.pk}, plan v1"
    assert run.planner_model == "" and run.calls.count() == 0
    assert SearchDocument.objects.filter(run=run).exists()

    with pytest.raises(RunInputError, match="Start only from a run of your own."):
        run_start_from(owner=make_user("bob"), options=RunOptions(task=SIMILAR), source=past)


# --- the history's search ----------------------------------------------------------------------


def test_the_history_finds_runs_by_task_output_and_deliverable_and_filters(alice, make_user):
    weather = finished(alice)
    interest = planned(alice, UNRELATED)
    theirs = finished(make_user("bob"))
    output = weather.steps.exclude(step_id="synthesis").first().output
    word = next(
        w for w in output.split() if w.isalpha() and len(w) > 6 and w.lower() not in PAST.lower()
    )

    def found(**filters) -> list[int]:
        return list(
            run_list_for_user(alice, filters=RunFilters(**filters)).values_list("pk", flat=True)
        )

    assert found(q="paris") == [weather.pk]  # the task; never bob's run of the same task
    assert theirs.pk not in found(q="weather")
    assert found(q=word) == [weather.pk]  # a step's output
    assert found(q="compound interest") == [interest.pk]
    assert found(q="compound weather") == []  # every word must be there
    assert found(q="compo") == [interest.pk]  # the last word as typed so far
    assert found(q='interest" OR "paris') == []  # words, never syntax: OR is no operator
    assert found(q="the") == [interest.pk, weather.pk]  # no word to look for: every run
    assert found(status="succeeded") == [weather.pk]
    assert found(q="weather", status="awaiting_plan_approval") == []
    assert found(model=weather.planner_model) == [interest.pk, weather.pk]
    assert found(model="nobody:nothing") == []
    today = weather.created_at.date()
    assert found(since=today, until=today) == [interest.pk, weather.pk]
    assert found(until=today - timedelta(days=1)) == []


def test_the_history_filters_by_template(alice):
    past = finished(alice)
    saved = template_save_from_run(
        user=alice, version=past.plan_versions.get(number=1), name="W", replace=[("Paris", "city")]
    )
    run = template_run(version=saved, user=alice, values={"city": "Oslo"})
    assert list(run_list_for_user(alice, filters=RunFilters(template=saved.template.pk))) == [run]
    assert list(run_list_for_user(alice, filters=RunFilters(q="oslo"))) == [
        run
    ]  # indexed from its creation


def test_forks_and_baselines_are_found_by_their_task_from_the_start(alice):
    from planner_ui.services.baselines import baseline_create
    from planner_ui.services.retries import run_fork

    past = finished(alice)
    step = past.steps.exclude(step_id="synthesis").order_by("id").first()
    fork = run_fork(run_id=past.pk, step_id=step.step_id, user=alice)
    baseline = baseline_create(past, alice)
    found = run_list_for_user(alice, filters=RunFilters(q="paris"))
    assert set(found.values_list("pk", flat=True)) == {past.pk, fork.pk, baseline.pk}
