"""{% memo %}: a fragment rendered once a page for each value of its keys, then repeated."""

from __future__ import annotations

from itertools import count

from django.template import Context, Engine

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
