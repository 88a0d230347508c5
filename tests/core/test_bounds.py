"""core.bounds: ids in ASCII digits, JSON depth read without recursion, NUL in text."""

from __future__ import annotations

import json

import pytest

from planner_ui.core.bounds import (
    MAX_BUDGET_USD,
    MAX_INT,
    JsonTooDeep,
    NulInText,
    check_no_nul,
    json_depth,
    loads_bounded,
    row_id,
    too_long,
)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1", 1),
        ("0042", 42),
        (str(MAX_INT), MAX_INT),
        (str(MAX_INT + 1), None),
        ("0", None),
        ("-1", None),
        ("²", None),
        ("٣", None),
        ("v1", None),
        (" 1", None),
        ("1_000", None),
        ("1e3", None),
        ("", None),
        (None, None),
        ("9" * 100, None),
    ],
)
def test_row_id_takes_ascii_digits_in_range_only(text, number):
    assert row_id(text) == number


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "\\"[[["]', 1),  # brackets inside strings, escaped quotes
        ("[" * 5000, 5000),
    ],
)
def test_json_depth_counts_brackets_outside_strings(text, depth):
    assert json_depth(text) == depth


def test_loads_bounded_parses_up_to_the_limit_and_refuses_beyond():
    assert loads_bounded("[" * 32 + "]" * 32) == json.loads("[" * 32 + "]" * 32)
    with pytest.raises(JsonTooDeep, match="nested deeper than 32 levels"):
        loads_bounded("[" * 33 + "]" * 33)
    with pytest.raises(JsonTooDeep):
        loads_bounded(b"[" * 100_000)


def test_check_no_nul_finds_a_nul_in_keys_and_nested_values():
    check_no_nul({"a": ["b", {"c": 1}], "d": None})
    with pytest.raises(NulInText):
        check_no_nul({"a": [{"c": "x\x00"}]})
    with pytest.raises(NulInText):
        check_no_nul({"a\x00": 1})


def test_the_largest_budget_fits_the_column():
    assert str(MAX_BUDGET_USD) == "99999999.9999"


def test_too_long_says_the_length_and_the_limit():
    assert too_long("The task", "x" * 10, 10) == ""
    assert too_long("The task", "x" * 100_000, 10_000) == (
        "The task is 100000 characters long; at most 10000 are allowed."
    )
