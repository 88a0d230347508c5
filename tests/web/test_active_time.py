"""The pages show a run's active time: the history, the run page's header and its usage."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from planner_ui.selectors.timeline import run_timing
from planner_ui.templatetags.planner_ui import seconds
from tests.selectors.test_compare import retried  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def test_the_history_and_the_run_page_show_active_time_not_the_idle_gap(client, retried):  # noqa: F811
    client.force_login(retried.owner)
    active = seconds(run_timing(retried).active_s)
    assert "min" not in active

    history = client.get(reverse("run_list")).content.decode()
    assert re.search(rf"<td>{re.escape(active)}</td>", history)
    assert "3 min" not in history

    page = client.get(reverse("run_detail", args=[retried.pk])).content.decode()
    assert re.search(rf'id="run-active-time"[^>]*>{re.escape(active)}<', page)
    # The gaps are listed apart, the idle one too.
    assert re.search(r"not counted: waiting for approval [\d.]+ s .*, idle 3 min", page, re.S)
    assert 'data-reason="idle"' in page
