"""core.search: the text a run's search document holds."""

from __future__ import annotations

from planner_ui.core.search import MAX_DOCUMENT_CHARS, outputs_text


def test_a_runs_outputs_and_deliverable_are_indexed_each_line_once() -> None:
    outputs = ["Paris: 21 C\nsunny", "", "  Paris: 21 C  \nOslo: 4 C"]
    deliverable = "# Weather\n\nParis: 21 C\nOslo: 4 C\nPack a coat for Oslo."
    assert outputs_text(outputs, deliverable).splitlines() == [
        "Paris: 21 C",
        "sunny",
        "Oslo: 4 C",
        "# Weather",
        "Pack a coat for Oslo.",
    ]


def test_a_long_document_is_cut() -> None:
    lines = [f"line {n} " + "x" * 90 for n in range(2000)]
    text = outputs_text(["\n".join(lines)], "")
    assert len(text) == MAX_DOCUMENT_CHARS
    assert text.startswith("line 0 ")
