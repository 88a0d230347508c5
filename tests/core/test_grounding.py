"""core.grounding: the figures a deliverable states that its material does not."""

from __future__ import annotations

import pytest

from planner_ui.core.grounding import figures, unsupported_figures


def test_figures_are_normalised() -> None:
    assert figures("1,500 * 0.20 = 300.00, then 375 and 12.5% of $1,000,000") == [
        "1500",
        "0.2",
        "300",
        "375",
        "12.5",
        "1000000",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "see https://example.com/2024/375 and www.example.org/12345",
        "gpt4o, v2, step_375, sha 3f99a",
        "1. first\n2) second\n  3. third",
        "SEE HTTPS://EXAMPLE.COM/375 AND WWW.EXAMPLE.ORG/12345",
    ],
)
def test_links_identifiers_and_list_markers_are_no_figures(text: str) -> None:
    assert [f for f in figures(text) if int(float(f)) >= 10] == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("42 at the start", ["42"]),
        ("x1,000 .25 ,75 a.12", []),  # inside a word or after a point or comma: no figure
        ("12,34 and 1,2345", ["12", "1"]),  # not thousands: what follows the comma is not one
        ("1,234,567.890 and 5. then 10.", ["1234567.89", "5", "10"]),
        ("(1,000) -20 +30%", ["1000", "20", "30"]),
        ("99a 7", ["7"]),
    ],
)
def test_where_a_figure_starts_and_ends(text: str, found: list[str]) -> None:
    assert figures(text) == found


def test_the_number_a_small_model_invented_is_found() -> None:
    # Qwen2.5-Coder-1.5B's synthesizer, over steps that all said 375.
    outputs = ["1500 * 0.2 = 300", "300 + 75 = **375**", "The result is 375."]
    assert unsupported_figures("The final result is 305.", outputs) == ["305"]
    assert unsupported_figures("1500 * 0.2 + 75 = **375**", outputs) == []


def test_a_figure_counts_as_stated_in_any_of_its_forms() -> None:
    assert unsupported_figures("Revenue: 1,500.0 (20%)", ["revenue 1500", "a 20 % rise"]) == []


def test_single_digits_and_repeats() -> None:
    assert unsupported_figures("3 steps, 2 haikus; 42 and 42 again, 7.5", ["nothing"]) == [
        "42",
        "7.5",
    ]
