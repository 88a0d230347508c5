"""The webhook's JSON paths: the root, names, quoted names and indexes, and nothing else; a
mapping written one `parameter = $.path` a line, each bad line named."""

from __future__ import annotations

import re

import pytest

from planner_ui.core.json_path import (
    JsonPathError,
    mapping_text,
    parse_mapping,
    parse_path,
    values_from_body,
)

BODY = {
    "ticket": {"title": "Printer on fire", "tags": ["urgent", "hw"], "odd key": 3},
    "items": [{"name": "first"}, {"name": "second"}],
}


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("$", ()),
        ("$.ticket.title", ("ticket", "title")),
        ("$.items[1].name", ("items", 1, "name")),
        ("$['ticket'][\"odd key\"]", ("ticket", "odd key")),
        ("  $.a-b_c  ", ("a-b_c",)),
    ],
)
def test_paths_are_read_step_by_step(path, steps) -> None:
    assert parse_path(path) == steps


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("ticket.title", "does not start at the body, '$'"),
        ("$.ticket.*", "at '.*'"),
        ("$..title", "at '..title'"),
        ("$.items[-1]", "at '[-1]'"),
        ("$.items[?(@.name)]", "at '[?(@.name)]'"),
        ("$" + ".a" * 101, "at most 200 characters"),
    ],
)
def test_anything_more_is_refused_saying_where(path, why) -> None:
    with pytest.raises(JsonPathError, match=re.escape(why)):
        parse_path(path)


def test_values_come_from_the_body_and_a_path_that_finds_nothing_leaves_the_value_out() -> None:
    mapping = parse_mapping(
        "title = $.ticket.title\n\n  tag = $.ticket.tags[0]\nsecond = $.items[1].name\n"
        "count = $.ticket['odd key']\nmissing = $.ticket.nothing\nfar = $.items[5].name"
    )
    assert values_from_body(BODY, mapping) == {
        "title": "Printer on fire",
        "tag": "urgent",
        "second": "second",
        "count": 3,
    }
    assert values_from_body(["not", "an", "object"], mapping) == {}
    assert parse_mapping(mapping_text(mapping)) == mapping


def test_a_bad_mapping_names_each_bad_line() -> None:
    with pytest.raises(JsonPathError) as exc:
        parse_mapping("title = $.ticket.title\nTitle = $.x\ncity $.city\nday = now\ntitle = $.y")
    assert str(exc.value) == (
        "line 2: write it as parameter = $.path; line 3: write it as parameter = $.path; "
        "line 4: 'now' does not start at the body, '$' (as in $.ticket.title); "
        "line 5: title is mapped twice"
    )
