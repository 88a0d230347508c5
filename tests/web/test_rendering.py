"""The Markdown cache (planner_ui.rendering): a text is rendered once, long ones too, and the
cache keeps within its budget of characters, dropping the least recently shown first."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from planner_ui import rendering
from planner_ui.rendering import markdown_to_safe_html


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A cache of 1,000 characters, empty; the texts actually rendered, in order."""
    monkeypatch.setattr(rendering, "_CACHED_CHARS", 1000)
    monkeypatch.setattr(rendering, "_cached", OrderedDict())
    monkeypatch.setattr(rendering, "_cached_chars", 0)
    calls: list[str] = []
    real = rendering._safe_html

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(rendering, "_safe_html", counting)
    return calls


def test_a_text_is_rendered_once_and_shown_the_same_after(rendered: list[str]) -> None:
    text = "# Result\n\n" + "A long answer. " * 16  # 250 characters: a quarter of the cache

    first = markdown_to_safe_html(text)

    assert markdown_to_safe_html(text) == first
    assert rendered == [text]
    assert first.startswith("<h1>Result</h1>\n<p>A long answer.")


def test_a_text_longer_than_a_quarter_of_the_cache_is_rendered_each_time(
    rendered: list[str],
) -> None:
    text = "x" * 251

    assert markdown_to_safe_html(text) == markdown_to_safe_html(text) == f"<p>{text}</p>\n"
    assert rendered == [text, text]


def test_the_least_recently_shown_go_first_when_the_budget_is_spent(rendered: list[str]) -> None:
    texts = [f"{n}" * 200 for n in range(6)]  # 1,200 characters in all
    for text in texts[:5]:
        markdown_to_safe_html(text)
    markdown_to_safe_html(texts[0])  # shown again: now the most recent
    markdown_to_safe_html(texts[5])  # over budget: the least recent (texts[1]) goes

    assert rendering._cached_chars <= 1000
    assert list(rendering._cached) == [texts[2], texts[3], texts[4], texts[0], texts[5]]
