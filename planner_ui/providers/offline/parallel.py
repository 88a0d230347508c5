"""Parallel work in the common ways people write it, found before any other reading of a task.

    for each of A, B, C and D, <do something>          (or: <do something> for each of A, B …)
    <write> one <poem> each about A, B and C
    day 1 …, day 2 …, day 3 …                          (weeks, chapters, parts, sections too)
    <write> three <pages> about …                      (a count of pieces to produce)
    <do A> and, separately, <do B>

Each becomes independent parts, one step each, and a goal for the step that joins them; None
when the task says none of these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner_ui.core.plan import MAX_STEPS

from .reading import LIST_SEPARATOR, is_action, split_top_level
from .words import collapse

NUMBER_WORDS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_COUNT = r"(?:" + "|".join(NUMBER_WORDS) + r"|[2-9]|1[0-2])"
# The joining step takes one of the plan's places.
MAX_PARTS = MAX_STEPS - 1


@dataclass(frozen=True)
class Part:
    title: str
    directive: str  # self-contained: the step sees only this


@dataclass(frozen=True)
class Parallel:
    parts: list[Part]
    join_goal: str  # what the step that joins them is for


def parallel_parts(task: str) -> Parallel | None:
    text = collapse(task).strip()
    for reading in (_for_each, _one_each, _numbered, _separately, _counted):
        found = reading(text)
        if found is not None and 2 <= len(found.parts) <= MAX_PARTS:
            return found
    return None


def _items(text: str) -> list[str]:
    return [item for item in split_top_level(text, LIST_SEPARATOR) if item]


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".;:")
    return text[:1].upper() + text[1:]


# --- for each of A, B and C ----------------------------------------------------------------------

_FOR_EACH = re.compile(r"\bfor\s+(?:each|every)\s+(?:one\s+)?of\s+", re.I)
# 'the three frameworks Django, …': a count and a noun before the first item name it.
_DESCRIPTOR = re.compile(rf"^(?:the\s+)?(?:{_COUNT}\s+)?(?:[a-z]+\s+){{0,2}}?[a-z]+s\s+(?=[A-Z])")


def _for_each(text: str) -> Parallel | None:
    match = _FOR_EACH.search(text)
    if match is None:
        return None
    head, rest = text[: match.start()].strip(" ,"), text[match.end() :]
    if head and is_action(head):
        # 'Find the population for each of Paris, Berlin and Rome.'
        action, listed = head, rest
    else:
        # 'For each of Paris, Berlin and Rome, find the population.': the action is the first
        # comma-separated piece after the list that starts with a verb.
        pieces = re.split(r",\s*", rest)
        start = next((i for i, piece in enumerate(pieces) if i > 0 and is_action(piece)), None)
        if start is None:
            return None
        listed, action = ", ".join(pieces[:start]), ", ".join(pieces[start:])
    items = _items(_DESCRIPTOR.sub("", listed.strip()))
    if len(items) < 2 or not action:
        return None
    action = action.strip().rstrip(".")
    parts = [
        Part(f"{_sentence(action)} for {item}", f"{_sentence(action)} for {item}") for item in items
    ]
    return Parallel(parts, _sentence(f"{action} for each of {', '.join(items)}"))


# --- one each about A, B and C --------------------------------------------------------------------

_ONE_EACH = re.compile(
    rf"^(?P<verb>[\w-]+)\s+(?:(?:one|a|an)\s+(?P<noun>[\w\s-]+?)\s+each"
    rf"|(?P<count>{_COUNT})\s+(?P<plural>[\w\s-]+?),?\s+one\s+each)"
    r"\s+(?P<prep>about|for|on|of|to|in|from|with)\s+(?P<items>[^.;]+)(?P<after>.*)$",
    re.I,
)


def _singular(noun: str) -> str:
    words = noun.split()
    last = words[-1]
    if last.endswith("ies"):
        last = last[:-3] + "y"
    elif last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return " ".join([*words[:-1], last])


def _one_each(text: str) -> Parallel | None:
    match = _ONE_EACH.match(text)
    if match is None or not is_action(match["verb"]):
        return None
    noun = match["noun"] or _singular(match["plural"])
    items = _items(match["items"])
    parts = [
        Part(
            f"{_sentence(match['verb'])} one {noun} {match['prep']} {item}",
            f"{_sentence(match['verb'])} one {noun} {match['prep']} {item}",
        )
        for item in items
    ]
    return Parallel(parts, f"Put the {len(items)} pieces together: {text.rstrip('.')}")


# --- day 1 …, day 2 … -----------------------------------------------------------------------------

_UNIT = r"(?:day|week|chapter|part|section|lesson|module)"
_NUMBERED = re.compile(rf"\b({_UNIT})\s+(\d{{1,2}})\b\s*[:,.\-–—]?\s*", re.I)


def _numbered(text: str) -> Parallel | None:
    marks = list(_NUMBERED.finditer(text))
    if len(marks) < 2 or len({m.group(1).lower() for m in marks}) != 1:
        return None
    numbers = [int(m.group(2)) for m in marks]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None  # 'day 3 and day 1' is not a sequence of parts
    goal = text[: marks[0].start()].strip(" :,-—")
    parts = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : following.start() if following else len(text)]
        body = body.strip(" ,;.")
        body = re.sub(r"\s*(?:,|;)?\s*(?:and|then)$", "", body, flags=re.I)
        if not body:
            return None
        label = f"{mark.group(1).capitalize()} {mark.group(2)}"
        within = f", as one part of this: {goal.rstrip('.')}" if goal else ""
        parts.append(Part(f"{label}: {body}", f"{label}{within}. {_sentence(body)}"))
    unit = marks[0].group(1).lower()
    return Parallel(parts, goal or f"Put the {len(parts)} {unit}s together in order")


# --- A and, separately, B -------------------------------------------------------------------------

_SEPARATELY = re.compile(r"\s*[,;]?\s*(?:and\s*,?\s*)?separately\s*,?\s*", re.I)


def _separately(text: str) -> Parallel | None:
    pieces = [piece.strip(" .;,") for piece in _SEPARATELY.split(text)]
    if len(pieces) < 2 or not all(pieces):
        return None
    if not all(is_action(piece) for piece in pieces):
        return None
    parts = [Part(_sentence(piece), _sentence(piece)) for piece in pieces]
    return Parallel(parts, "Report each result in turn")


# --- three pages about … --------------------------------------------------------------------------

_PRODUCE = r"(?:write|draft|compose|create|design|produce|sketch)"
_COUNTED = re.compile(
    rf"^(?P<verb>{_PRODUCE})\s+(?P<count>{_COUNT})\s+(?P<plural>(?:[a-z-]+\s+){{0,2}}[a-z-]+s)\b"
    r"(?P<rest>[^.;]*)[.;]?$",
    re.I,
)


# Too small to be pieces of work of their own: 'write two sentences' is one step.
_SMALL_UNITS = frozenset(
    """sentences words lines bullets points examples tips ideas names questions reasons steps
    items options tests letters characters""".split()
)


def _counted(text: str) -> Parallel | None:
    match = _COUNTED.match(text)
    if match is None or match["plural"].split()[-1].lower() in _SMALL_UNITS:
        return None
    count_word = match["count"].lower()
    count = NUMBER_WORDS.get(count_word) or int(count_word)
    plural, rest = match["plural"], match["rest"].rstrip()
    single = _singular(plural)
    parts = [
        Part(
            f"{_sentence(single)} {n} of {count}",
            f"{_sentence(match['verb'])} {single} {n} of {count}{rest}. Give it an angle of "
            f"its own, distinct from the other {plural}.",
        )
        for n in range(1, count + 1)
    ]
    return Parallel(parts, f"Assemble the {count} {plural}{rest} into one piece, in order")
