"""Whether a deliverable's figures come from its material: the numbers a text states that
none of its sources holds (a small model's synthesizer has written 300 over steps that all
said 375)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A figure: digits with optional thousands separators and decimals, not inside a word
# ("v2", "gpt4o") or an identifier ("step_3"); a sign or unit around it does not matter.
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])")
# Where digits are not figures the text states: links, and the numbers of list items.
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)
# Single digits count steps, items and list entries far more often than they state facts.
_SMALLEST = 10


def figures(text: str) -> list[str]:
    """The numbers a text states, normalised (1,500.00 -> 1500, 0.20 -> 0.2), in order."""
    text = _LIST_MARKER.sub(r"\1", _URL.sub(" ", text))
    values = []
    for match in _NUMBER.finditer(text):
        whole = match.group(1).replace(",", "")
        decimals = (match.group(2) or "").rstrip("0")
        values.append(f"{int(whole)}.{decimals}" if decimals else str(int(whole)))
    return values


def unsupported_figures(text: str, sources: Iterable[str]) -> list[str]:
    """The figures of `text` that no source states, each once, in order (a single digit is
    never one)."""
    known = {value for source in sources for value in figures(source)}
    missing = [v for v in figures(text) if v not in known and not _small(v)]
    return list(dict.fromkeys(missing))


def _small(value: str) -> bool:
    return "." not in value and int(value) < _SMALLEST
