"""Where a long text folds, and the opening a page sends of it (core.fold)."""

from __future__ import annotations

from planner_ui.core.fold import RESULT, STEP_OUTPUT, Fold

SMALL = Fold(lines=3, chars=40, opening_lines=4, opening_chars=30)


def test_a_text_folds_at_its_lines_or_its_characters() -> None:
    assert not SMALL.folds("one\ntwo\nthree")
    assert SMALL.folds("one\ntwo\nthree\nfour")
    assert not SMALL.folds("x" * 40)
    assert SMALL.folds("x" * 41)


def test_the_opening_is_the_first_lines_within_the_characters() -> None:
    assert SMALL.opening("a\nb\nc\nd\ne\nf") == "a\nb\nc\nd"
    # Too long: cut at the last space, never inside a word...
    text = "the quick brown fox jumps over the lazy dog"
    assert SMALL.opening(text) == "the quick brown fox jumps"
    # ...unless the word is most of the opening (a URL), which is cut where it is.
    assert SMALL.opening("see https://example.org/" + "a" * 40) == "see https://example.org/aaaaaa"


def test_a_short_text_is_its_own_opening() -> None:
    assert SMALL.opening("a\nb") == "a\nb"
    assert SMALL.opening("") == ""


def test_an_opening_is_longer_than_its_fold_shows() -> None:
    # The fold is always full: the opening reaches past where it folds.
    for fold in (STEP_OUTPUT, RESULT):
        assert fold.opening_lines > fold.lines and fold.opening_chars > fold.chars
        text = "\n".join(f"line {n} " + "word " * 30 for n in range(100))
        assert fold.folds(text) and len(fold.opening(text)) > fold.chars


def test_what_a_page_sends_of_a_text() -> None:
    assert SMALL.sent("a\nb") == (False, "a\nb", False)
    # It folds, but its opening holds it all (four lines): sent whole, nothing to fetch.
    assert SMALL.sent("a\nb\nc\nd") == (True, "a\nb\nc\nd", False)
    assert SMALL.sent("a\nb\nc\nd\ne") == (True, "a\nb\nc\nd", True)
