"""Whether a deliverable's figures come from its material: the numbers a text states that
none of its sources holds (a small model's synthesizer has written 300 over steps that all
said 375)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A figure: digits with optional thousands separators and decimals, not inside a word
# ("v2", "gpt4o") or an identifier ("step_3"); a sign or unit around it does not matter.
# The look-behind comes after the first digit so that the scan can skip to digits in C
# (one before the first would be tried at every character: twice the time on 40 KB).
_NUMBER = re.compile(r"(\d(?<![\w.,]\d)(?:\d{0,2}(?:,\d{3})+|\d*))(?:\.(\d+))?(?!\w)")
# Where digits are not figures the text states: links, and the numbers of list items.
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)
# Single digits count steps, items and list entries far more often than they state facts.
_SMALLEST = 10


def figures(text: str) -> list[str]:
    """The numbers a text states, normalised (1,500.00 -> 1500, 0.20 -> 0.2), in order."""
    return [_normal(whole, decimals) for whole, decimals in _NUMBER.findall(_bare(text))]


def unsupported_figures(text: str, sources: Iterable[str]) -> list[str]:
    """The figures of `text` that no source states, each once, in order (a single digit is
    never one)."""
    raw = dict.fromkeys(_NUMBER.findall(_bare(text)))
    stated = [v for v in dict.fromkeys(_normal(*figure) for figure in raw) if not _small(v)]
    if not stated:
        return []
    # A synthesis's sources run to a hundred kilobytes of nested outputs that repeat each
    # other's figures: the regex finds them in C, and each distinct one is normalised once.
    found: set[tuple[str, str]] = set()
    for source in sources:
        found.update(_NUMBER.findall(_bare(source)))
    known = {_normal(whole, decimals) for whole, decimals in found}
    return [v for v in stated if v not in known]


def _bare(text: str) -> str:
    if "://" in text or "www." in text.lower():  # a tenth of the URL pattern's time
        text = _URL.sub(" ", text)
    return _LIST_MARKER.sub(r"\1", text)


def _normal(whole: str, decimals: str) -> str:
    whole = str(int(whole.replace(",", "")))
    decimals = decimals.rstrip("0")
    return f"{whole}.{decimals}" if decimals else whole


def _small(value: str) -> bool:
    return "." not in value and int(value) < _SMALLEST
