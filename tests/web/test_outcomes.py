"""Wherever a finished run's badge shows (its page, the history, the inbox), it shows its
outcome in its own colour, with the one-line reason when it lost something."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from planner_ui.services.runs import run_approve_plan
from tests.services.test_outcomes import rejected_run
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

WARNING_BADGE = (
    '<span class="badge status-succeeded_with_warnings"{id}>succeeded with warnings</span>'
)


@pytest.fixture
def warned(alice):
    return rejected_run(alice)


@pytest.fixture
def clean(alice):
    run = planned(alice, "Compute 1500 * 0.2 + 75")
    run_approve_plan(run.pk)
    return drive(run)


def page(client, name: str, *args, **query) -> str:
    response = client.get(reverse(name, args=args), query)
    assert response.status_code == 200
    return response.content.decode()


def reason(run, id_: str = "") -> str:
    where = f' id="{id_}"' if id_ else ""
    return (
        f'<span class="outcome-reason outcome-succeeded_with_warnings"{where}>'
        f"{escape(run.outcome_reason)}</span>"
    )


def history_rows(html: str) -> dict[str, str]:
    """Each row of the history: run number → its status cell."""
    return dict(
        re.findall(
            r'<tr>\s*<td><a href="/runs/(\d+)/">.*?<td class="status-cell">(.*?)</td>', html, re.S
        )
    )


def test_the_run_page_header_shows_the_warning_and_why(client_alice, warned):
    html = page(client_alice, "run_detail", warned.pk)
    header = html[html.index('id="run-header"') : html.index('class="task"')]
    assert WARNING_BADGE.format(id=' id="run-status"') in header
    assert reason(warned, "run-status-reason") in header


def test_a_clean_run_shows_no_reason(client_alice, clean):
    html = page(client_alice, "run_detail", clean.pk)
    assert '<span class="badge status-succeeded" id="run-status">succeeded</span>' in html
    assert "run-status-reason" not in html


def test_the_history_shows_outcomes_and_filters_by_them(client_alice, warned, clean):
    rows = history_rows(page(client_alice, "run_list"))
    assert rows.keys() == {str(warned.pk), str(clean.pk)}
    assert WARNING_BADGE.format(id="") in rows[str(warned.pk)]
    assert reason(warned) in rows[str(warned.pk)]
    assert "outcome-reason" not in rows[str(clean.pk)]
    assert '<span class="badge status-succeeded">succeeded</span>' in rows[str(clean.pk)]

    only = page(client_alice, "run_list", outcome="succeeded_with_warnings")
    assert history_rows(only).keys() == {str(warned.pk)}
    assert '<option value="succeeded_with_warnings" selected>' in only
    assert 'id="history-none"' in page(client_alice, "run_list", outcome="failed")
    # An unknown filter shows every run rather than an error.
    assert len(history_rows(page(client_alice, "run_list", outcome="green"))) == 2


def test_the_inbox_says_how_the_runs_of_recent_decisions_ended(client_alice, warned):
    html = page(client_alice, "approvals_inbox")
    item = html[html.index(f'<li data-run="{warned.pk}">') :]
    item = item[: item.index("</li>")]
    assert WARNING_BADGE.format(id="") in item and reason(warned) in item
