"""The run page's log going back (views.log): earlier events a page at a time, newest first,
each cut to fit a log line, for the run's owner only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import Run
from planner_ui.services.events import events_append
from planner_ui.views.log import EVENT_CHARS, LOG_PAGE

pytestmark = pytest.mark.django_db


@pytest.fixture
def long_run(alice) -> Run:
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    queued = [("step.queued", {}, f"s{n:03d}") for n in range(LOG_PAGE + 20)]
    events_append(run.pk, queued)
    long_output = {
        "output": "tea " * 20_000, "tokens_in": 10, "tokens_out": 20_000, "model_calls": 1,
        "cost_usd": "0.01", "duration_s": 1.5, "model": "offline",
    }  # fmt: skip
    events_append(run.pk, [("step.succeeded", long_output, "s001")])
    return run


def _earlier(client: Client, run: Run, before: str):
    return client.get(reverse("run_log", args=[run.pk]), {"before": before})


def test_earlier_events_come_a_page_at_a_time_newest_first(client_alice, long_run):
    # Before the largest seq there can be, or before nothing said: the latest page.
    latest = client_alice.get(reverse("run_log", args=[long_run.pk])).json()
    assert latest == _earlier(client_alice, long_run, str(2**63 - 1)).json()

    last = long_run.events.order_by("-seq").first().seq
    assert last == LOG_PAGE + 21

    page = _earlier(client_alice, long_run, str(last + 1)).json()
    assert page == latest
    seqs = [event["seq"] for event in page["events"]]
    assert seqs == list(range(last, last - LOG_PAGE, -1)) and page["more"] is True
    # The long output is cut to fit a line of the log, and says so; what the line reads stays.
    newest = page["events"][0]
    assert newest["type"] == "step.succeeded" and newest["cut"] is True
    assert len(newest["payload"]["output"]) < EVENT_CHARS
    assert newest["payload"]["duration_s"] == 1.5

    rest = _earlier(client_alice, long_run, str(seqs[-1])).json()
    assert [event["seq"] for event in rest["events"]] == list(range(seqs[-1] - 1, 0, -1))
    assert rest["more"] is False
    assert rest["events"][-1] == {
        "seq": 1,
        "type": "step.queued",
        "step_id": "s000",
        "payload": {},
        "at": rest["events"][-1]["at"],
    }


@pytest.mark.parametrize("before", ["", "x", "0", "-3", "1e9", "٣", str(2**63)])
def test_a_before_that_is_no_seq_is_a_clear_error(client_alice, long_run, before):
    response = _earlier(client_alice, long_run, before)
    assert response.status_code == 400
    assert "before" in response.json()["error"]


def test_nobody_else_reads_the_log(long_run, make_user):
    bob = Client()
    bob.force_login(make_user("bob"))
    assert _earlier(bob, long_run, "10").status_code == 404
    assert _earlier(Client(), long_run, "10").status_code == 302  # to the login page


def test_the_run_page_says_how_many_events_its_log_shows(client_alice, long_run):
    body = client_alice.get(reverse("run_detail", args=[long_run.pk])).content.decode()
    assert f'data-log-url="{reverse("run_log", args=[long_run.pk])}"' in body
    assert f'data-log-page="{LOG_PAGE}"' in body
