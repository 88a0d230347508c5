"""Where a long text folds on a page: whether it folds, and the part sent before "Show more".

A finished 1,000-step run's page was 10 MB, half of it step outputs sent whole inside folds that
show a few lines. Now a folded text sends its opening only (`Fold.opening`), enough to fill the
fold, and the rest comes when a person unfolds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Sent(NamedTuple):
    """What a page sends of a text: whether it folds, the part sent, and whether that part
    is cut short (then the rest is fetched when it unfolds)."""

    folds: bool
    shown: str
    cut: bool


@dataclass(frozen=True)
class Fold:
    """A text folds when it has `lines` lines or more, or more than `chars` characters; its
    opening is at most `opening_lines` lines and `opening_chars` characters, more than the
    fold shows so that it is always full."""

    lines: int
    chars: int
    opening_lines: int
    opening_chars: int

    def folds(self, text: str) -> bool:
        return text.count("\n") >= self.lines or len(text) > self.chars

    def sent(self, text: str) -> Sent:
        """`text` as a page sends it: whole when it does not fold, else its opening."""
        if not self.folds(text):
            return Sent(folds=False, shown=text, cut=False)
        shown = self.opening(text)
        return Sent(folds=True, shown=shown, cut=shown != text)

    def opening(self, text: str) -> str:
        """The first lines of `text`, cut at a space when a line is too long; `text` itself
        when it is that short."""
        head = "\n".join(text.split("\n", self.opening_lines)[: self.opening_lines])
        if len(head) <= self.opening_chars:
            return head
        cut = head[: self.opening_chars]
        space = cut.rfind(" ")
        # A word longer than the whole opening (a URL, a hash) is cut where it is.
        return cut[:space] if space > self.opening_chars // 2 else cut


# A step's output in its card folds to about six lines (graph.css: .step-output.collapsed).
STEP_OUTPUT = Fold(lines=6, chars=600, opening_lines=12, opening_chars=1200)
# The deliverable folds later: it is what the page is for, but a long one pushed the timeline
# and the rest of a finished run out of its two screens (24em: .result-body.collapsed).
RESULT = Fold(lines=20, chars=1500, opening_lines=40, opening_chars=3000)
