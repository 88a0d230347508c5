"""Retry and fork from the run page: offered on the steps they apply to, owned like the run,
and a fork compared with its original on the compare page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.core.dag import ancestors
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Run
from planner_ui.services.runs import run_approve_plan, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db

TASK = "Research solar power and wind power, then compare them and write a summary."


@pytest.fixture
def done(alice) -> Run:
    run = Run.objects.create(owner=alice, task=TASK)
    run_plan(run.pk)
    run_approve_plan(run.pk)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def first_and_last(run: Run) -> tuple[str, str]:
    """A step with no inputs and the last step before the synthesizer (which has some)."""
    steps = list(run.steps.exclude(step_id="synthesis"))
    return steps[0].step_id, steps[-1].step_id


def again_forms(client, run: Run, step_id: str) -> str:
    """What opening a step's "Retry or fork" fetches (run.js), after the page offered it."""
    url = reverse("step_again", args=[run.pk, step_id])
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert f'class="step-again-body" data-src="{url}"' in page
    response = client.get(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def test_finished_steps_offer_retry_and_fork(client_alice, done) -> None:
    first, last = first_and_last(done)
    for step_id in (first, last):
        forms = again_forms(client_alice, done, step_id)
        assert f'action="{reverse("step_retry", args=[done.pk, step_id])}"' in forms
        assert f'action="{reverse("run_fork", args=[done.pk, step_id])}"' in forms
        assert "<html" not in forms and 'name="csrfmiddlewaretoken"' in forms
    # The synthesizer can be retried (e.g. with another instruction) but not forked from.
    forms = again_forms(client_alice, done, "synthesis")
    assert reverse("step_retry", args=[done.pk, "synthesis"]) in forms
    assert reverse("run_fork", args=[done.pk, "synthesis"]) not in forms
    # The page sends none of these forms: they come when a step's part opens.
    page = client_alice.get(reverse("run_detail", args=[done.pk])).content.decode()
    assert reverse("step_retry", args=[done.pk, first]) not in page
    assert 'class="retry-form"' not in page


def test_without_script_retry_and_fork_are_a_page_of_their_own(client_alice, done) -> None:
    _, last = first_and_last(done)
    url = reverse("step_again", args=[done.pk, last])
    page = client_alice.get(url).content.decode()
    assert "<html" in page and 'id="step-again" hx-disable' in page
    assert f'href="{reverse("run_detail", args=[done.pk])}#step-{last}"' in page
    assert 'class="retry-form"' in page and 'class="inline fork-form"' in page


def test_a_step_that_may_no_longer_be_retried_says_why(client_alice, done) -> None:
    _, last = first_and_last(done)
    url = reverse("step_retry", args=[done.pk, last])
    client_alice.post(url, {"instruction": "Write it shorter.", "downstream": "on"})
    # The last step is queued again, and the synthesis is pending: neither can be retried, and
    # the synthesis cannot be forked from.
    response = client_alice.get(
        reverse("step_again", args=[done.pk, "synthesis"]), HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<form" not in body
    assert "only a step that has finished or failed can be retried" in body
    missing = reverse("step_again", args=[done.pk, "no-such-step"])
    assert client_alice.get(missing, HTTP_HX_REQUEST="true").status_code == 404


def test_retry_from_the_page_queues_the_step_again(client_alice, done) -> None:
    _, last = first_and_last(done)
    url = reverse("step_retry", args=[done.pk, last])
    response = client_alice.post(url, {"instruction": "Write it shorter.", "downstream": "on"})
    assert response.status_code == 302
    done.refresh_from_db()
    assert done.status == RunStatus.RUNNING
    assert done.steps.get(step_id=last).instruction == "Write it shorter."
    assert done.steps.get(step_id="synthesis").status == StepStatus.PENDING
    # The same refusal a person would read: the step is queued, not finished.
    response = client_alice.post(url, {"instruction": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "only a step that has finished or failed can be retried" in response.content.decode()
    run = drive(done)
    assert run.status == RunStatus.SUCCEEDED, run.error


def test_a_fork_opens_for_approval_and_compares_with_its_original(client_alice, done) -> None:
    _, last = first_and_last(done)
    response = client_alice.post(reverse("run_fork", args=[done.pk, last]))
    fork = Run.objects.get(forked_from=done)
    assert response.status_code == 302 and response.url == reverse("run_detail", args=[fork.pk])
    page = client_alice.get(response.url).content.decode()
    assert f'Fork of <a href="{reverse("run_detail", args=[done.pk])}">run {done.pk}</a>' in page
    assert 'id="approve-plan"' in page and "Output reused from" in page
    deps = {s.step_id: s.depends_on for s in done.steps.all()}
    reused = fork.steps.filter(reused_from=done).count()
    assert reused == len(ancestors(deps, last)) and reused >= 2
    run_approve_plan(fork.pk)
    fork = drive(fork)
    assert fork.status == RunStatus.SUCCEEDED, fork.error
    compare = client_alice.get(reverse("run_compare", args=[fork.pk])).content.decode()
    assert f"Run {done.pk} beside run {fork.pk}" in compare
    assert f"({reused} reused)" in compare
    assert f"Fork of run {done.pk} from &#x27;{last}&#x27;" in compare
    original = client_alice.get(reverse("run_detail", args=[done.pk])).content.decode()
    assert f"?with={fork.pk}" in original


def test_another_users_run_cannot_be_retried_forked_or_compared(done, make_user) -> None:
    bob_user = make_user("bob")
    bob = Client()
    bob.force_login(bob_user)
    first, _ = first_and_last(done)
    assert bob.post(reverse("step_retry", args=[done.pk, first])).status_code == 404
    assert bob.post(reverse("run_fork", args=[done.pk, first])).status_code == 404
    own = Run.objects.create(owner=bob_user, task="Bob's own task")
    assert bob.get(reverse("run_compare", args=[own.pk]) + f"?with={done.pk}").status_code == 404
    assert not Run.objects.filter(forked_from=done).exists()
    assert done.steps.get(step_id=first).retries == 0


def test_retry_and_fork_need_a_post_with_csrf(alice, done) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    first, _ = first_and_last(done)
    assert strict.get(reverse("step_retry", args=[done.pk, first])).status_code == 405
    assert strict.post(reverse("run_fork", args=[done.pk, first])).status_code == 403
