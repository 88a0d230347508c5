"""Full-text search: what a run or a template is found by, and a person's words as a query for
either database (SQLite FTS5 on the embedded default, PostgreSQL's tsquery on a server).

A query is built from words only: letters and digits, lowercase, without the little words
every task has. Nothing a person types reaches either query language as syntax, so a quote,
a colon or `NEAR` in a task is a word or nothing, never an operator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_TERMS = 16
# Longer documents are cut: an index row is for finding a run, not for keeping its outputs.
MAX_DOCUMENT_CHARS = 100_000

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words that say nothing about what a task is about: kept out of queries, else a plan for
# "the weather in Paris" would be close to every task that says "the".
STOP_WORDS = frozenset(
    """
    a about after all also am an and any are as at be been before being below between both
    but by can could did do does doing down during each few for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our ours out over own same she should so
    some such than that the their theirs them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours please each every make write then using use give get
    """.split()
)


def search_terms(text: str, limit: int = MAX_TERMS) -> list[str]:
    """The words of `text` a search looks for: lowercase, in order, each once, at most `limit`."""
    found: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) < 2 or word in STOP_WORDS:
            continue
        found[word] = None
        if len(found) >= limit:
            break
    return list(found)


def fts5_query(terms: Iterable[str], *, match_all: bool, prefix_last: bool = False) -> str:
    """An FTS5 MATCH expression: each term quoted (so it is a word, never an operator), joined
    by AND (a search box) or OR (finding close plans, ranked by how much they share)."""
    quoted = [f'"{term}"' for term in terms]
    if quoted and prefix_last:
        quoted[-1] += "*"
    return (" AND " if match_all else " OR ").join(quoted)


def tsquery(terms: Iterable[str], *, match_all: bool, prefix_last: bool = False) -> str:
    """The same as a PostgreSQL to_tsquery text; terms are letters and digits only."""
    parts = list(terms)
    if parts and prefix_last:
        parts[-1] += ":*"
    return (" & " if match_all else " | ").join(parts)


def _stem(word: str) -> str:
    # Rough, and only to count shared words (shared_terms): the databases stem properly.
    for suffix, instead in (("ies", "i"), ("es", ""), ("s", ""), ("ing", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + instead
            break
    if word.endswith("y"):
        word = word[:-1] + "i"
    return word[:6]


def shared_terms(terms: Iterable[str], text: str) -> int:
    """How many of `terms` `text` holds, near enough (cities ~ city, reports ~ report)."""
    have = {_stem(word) for word in _WORD.findall(text.lower())}
    return sum(1 for term in terms if _stem(term) in have)


def close_enough(terms: list[str], text: str) -> bool:
    """Whether a past plan is close enough to offer for a task of `terms`: it shares two of
    its words (one, for a task of one word). One word in common is chance: "report"."""
    if not terms:
        return False
    return shared_terms(terms, text) >= min(2, len(terms))


def plan_text(task: str, plan: Mapping[str, Any] | None) -> str:
    """What a plan is found by: its task, goal, and each step's title and instruction."""
    lines = [task]
    if plan:
        lines.append(str(plan.get("goal", "")))
        for step in plan.get("steps", []):
            lines += [str(step.get("title", "")), str(step.get("instruction", ""))]
    return "\n".join(line for line in lines if line)[:MAX_DOCUMENT_CHARS]


def outputs_text(outputs: Iterable[str], result: str) -> str:
    """What else a run is found by in the history: its steps' outputs and its deliverable,
    each line once. A deliverable quotes its steps and a step its parents: a line met before
    finds nothing more, and the database would tokenize it again for the index and for every
    ranking (at a run's close, with its row locked: 35 ms for a 32-step plan's 90 KB)."""
    seen: set[str] = set()
    lines = []
    for text in [*outputs, result]:
        for line in text.splitlines():
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                lines.append(line)
    return "\n".join(lines)[:MAX_DOCUMENT_CHARS]
