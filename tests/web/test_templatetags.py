"""planner_ui's template tags: {% memo %}, a fragment rendered once a page for each value of
its keys, then repeated; |clock, the time of day as |time:'H:i:s' shows it."""

from __future__ import annotations

from datetime import UTC, datetime, time
from itertools import count

import pytest
from django.template import Context, Engine, Template
from django.utils import timezone

LIBRARIES = {"planner_ui": "planner_ui.templatetags.planner_ui"}


def _engine(**templates: str) -> Engine:
    return Engine(
        loaders=[("django.template.loaders.locmem.Loader", templates)], libraries=LIBRARIES
    )


def test_the_body_renders_once_for_each_value_of_its_keys() -> None:
    # `tick` counts its calls: the body's output shows which rendering it is.
    engine = _engine(
        page="{% load planner_ui %}{% for s in steps %}"
        "{% memo s.role s.tools %}{{ s.role }}{{ tick }}{% endmemo %};{% endfor %}"
    )
    steps = [
        {"role": "writer", "tools": ["search"]},
        {"role": "critic", "tools": ["search"]},
        {"role": "writer", "tools": ["search"]},  # a list key: compared by value
        {"role": "writer", "tools": []},
    ]
    page = engine.get_template("page").render(Context({"steps": steps, "tick": count().__next__}))
    assert page == "writer0;critic1;writer0;writer2;"


def test_an_included_template_shares_the_page_s_memo_and_a_new_page_starts_afresh() -> None:
    # Each include renders in a scope of its own; the memo outlives them, not the page.
    engine = _engine(
        page="{% for s in steps %}{% include 'card' %}{% endfor %}",
        card="{% load planner_ui %}[{{ s }} {% memo %}{{ tick }}{% endmemo %}]",
    )
    tick = count().__next__
    template = engine.get_template("page")
    assert template.render(Context({"steps": "ab", "tick": tick})) == "[a 0][b 0]"
    assert template.render(Context({"steps": "ab", "tick": tick})) == "[a 1][b 1]"


def test_each_memo_in_a_template_keeps_its_own_output() -> None:
    engine = _engine(
        page="{% load planner_ui %}{% memo %}<form class=a>{% endmemo %}{% memo %}<form class=b>"
        "{% endmemo %}{% memo %}<form class=a>{% endmemo %}"
    )
    page = engine.get_template("page").render(Context({}))
    assert page == "<form class=a><form class=b><form class=a>"


@pytest.mark.parametrize(
    "value",
    [datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), datetime(2026, 1, 2, 23, 59, 9), time(7, 8, 9)],
)
@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_clock_shows_what_the_time_filter_shows(value: datetime | time, zone: str) -> None:
    template = Template("{% load planner_ui %}{{ v|time:'H:i:s' }} {{ v|clock }}")
    with timezone.override(zone):
        by_time, by_clock = template.render(Context({"v": value})).split()
    assert by_clock == by_time


def test_clock_shows_nothing_for_no_time() -> None:
    template = Template("{% load planner_ui %}[{{ v|clock }}][{{ missing|clock }}]")
    assert template.render(Context({"v": None})) == "[][]"
