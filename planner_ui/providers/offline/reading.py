"""Reading a task: sentences, clauses, enumerations, comparisons and lists."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .detect import urls
from .words import (
    ABBREVIATIONS,
    ACTION_VERBS,
    AND_VERB,
    COMMA_VERB,
    LEADING_MARKERS,
    POLITE_PREFIX,
    PRONOUN,
    QUESTION_WORDS,
    REFERS_BACK,
    SEQUENCE_BREAK,
    collapse,
    joined,
)

# --- reading a task: sentences, clauses, enumerations --------------------------------------------


def sentences_of(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in re.finditer(r"[.!?]+(?=\s|$)", line):
            before = re.search(r"([\w.]+)$", line[start : match.start()])
            if match.group().startswith(".") and before:
                if before.group(1).lower().rstrip(".") in ABBREVIATIONS:
                    continue
            sentences.append(line[start : match.end()].strip())
            start = match.end()
        sentences.append(line[start:].strip())
    return [s for s in sentences if s and not re.fullmatch(r"[\W_]+", s)]


def strip_markers(clause: str) -> str:
    stripped = re.sub(r"^(?:[-*•+]|\(?\d{1,3}[.)])\s+", "", clause.strip())  # a lone list item
    stripped = LEADING_MARKERS.sub("", stripped)
    stripped = POLITE_PREFIX.sub("", stripped)
    return LEADING_MARKERS.sub("", stripped).strip(" ,")


def is_action(clause: str) -> bool:
    if clause.rstrip().endswith("?"):
        return True
    # 'For each of these cities, find the population' acts after its leading phrase.
    for segment in re.split(r",\s*", clause):
        words = re.findall(r"[\w'-]+", segment.lower())
        if words and (words[0] in ACTION_VERBS or words[0] in QUESTION_WORDS):
            return True
    return False


def _split_on_and_verb(clause: str) -> list[str]:
    """'Draft an update and email it to x' is two actions; 'summarize A and B' is one."""
    parts: list[str] = []
    start = 0
    for match in AND_VERB.finditer(clause):
        left, right = clause[start : match.start()], clause[match.end() :]
        if len(left.split()) >= 2 and len(right.split()) >= 2:
            parts.append(left)
            start = match.end()
    parts.append(clause[start:])
    return [p.strip() for p in parts if p.strip()]


def _split_on_comma_verb(piece: str) -> list[tuple[str, bool]]:
    """'Fetch X, calculate Y' is two actions side by side; 'Read X, summarize it' is a sequence.

    Returns each part with whether it runs alongside the part before it.
    """
    parts: list[str] = []
    start = 0
    for match in COMMA_VERB.finditer(piece):
        left = piece[start : match.start()]
        if len(left.split()) >= 2 and is_action(strip_markers(left)):
            parts.append(left)
            start = match.end()
    parts.append(piece[start:])
    return [
        (part, n > 0 and not (PRONOUN.search(part) or REFERS_BACK.search(part)))
        for n, part in enumerate(parts)
    ]


@dataclass(frozen=True)
class Reading:
    """A task read as actions in order, the statements that are only background, and which
    actions run alongside the one before them rather than after it."""

    actions: list[str]
    background: list[str]
    alongside: frozenset[int] = frozenset()


def clauses_of(text: str) -> Reading:
    """Split text into actions in the order given, and the statements that are only background."""
    actions: list[str] = []
    background: list[str] = []
    alongside: set[int] = set()
    for sentence in sentences_of(text):
        for piece in SEQUENCE_BREAK.split(sentence):
            for part, beside in _split_on_comma_verb(piece):
                for n, raw in enumerate(_split_on_and_verb(part)):
                    clause = strip_markers(raw)
                    if not re.search(r"\w", clause):
                        continue
                    if not is_action(clause):
                        background.append(clause)
                        continue
                    if beside and n == 0 and actions:
                        alongside.add(len(actions))
                    actions.append(clause)
    if not actions:
        # A task of only markers ('first') is still a task: keep its words.
        whole = strip_markers(collapse(text)) or collapse(text)
        return Reading([whole] if whole else [], [])
    return Reading(actions, background, frozenset(alongside))


_ITEM_LINE = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|[-*•+])\s+(?:\[[ xX]\]\s+)?(?P<text>\S.*)$")


def enumeration_of(task: str) -> tuple[list[str], str, str]:
    """Numbered or bulleted items, with the text before and after them."""
    items: list[str] = []
    before: list[str] = []
    after: list[str] = []
    for line in task.splitlines():
        match = _ITEM_LINE.match(line)
        if match:
            if after and items:
                # Text between two items belongs to the item above it, not after the list.
                items[-1] = collapse(items[-1] + " " + " ".join(after))
                after.clear()
            items.append(match.group("text").strip())
        elif not items:
            before.append(line)
        elif line.startswith((" ", "\t")) and line.strip() and not after:
            items[-1] += " " + line.strip()  # an indented continuation of the item
        else:
            after.append(line)
    return items, "\n".join(before).strip(), "\n".join(after).strip()


# --- recognizing comparisons and lists ------------------------------------------------------------

_PREPOSITION = r"(?:of|in|for|on|about|at|from|with|by)"
_QUALIFIER = re.compile(
    r"\s+(?=(?:for|in\s+terms\s+of|regarding|with\s+respect\s+to|when\s+it\s+comes\s+to"
    r"|based\s+on|as\s+a|as\s+an)\b)",
    re.I,
)
_IDIOM = re.compile(
    r"\b(?:pros\s+and\s+cons|advantages\s+and\s+disadvantages|strengths\s+and\s+weaknesses"
    r"|benefits\s+and\s+drawbacks|dos\s+and\s+don'?ts|terms\s+and\s+conditions|trial\s+and\s+error"
    r"|research\s+and\s+development|supply\s+and\s+demand|ups\s+and\s+downs|black\s+and\s+white"
    r"|q\s*&\s*a|r\s*&\s*d|rock\s+and\s+roll|salt\s+and\s+pepper|bread\s+and\s+butter)\b",
    re.I,
)
_NOT_A_LIST = re.compile(r"\b(?:between|relationship|interplay|interaction|together)\b", re.I)
_LIST_VERB = re.compile(
    r"^(?P<verb>research|look\s+up|find\s+out\s+about|find|investigate|fetch|get|summari[sz]e"
    r"|explain|describe|analy[sz]e|calculate|compute|review|check|read|explore|define"
    r"|evaluate|assess)\s+(?P<rest>.+)$",
    re.I,
)


def split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
    """Split on `separator`, except inside parentheses or quotes."""
    parts, start = [], 0
    for match in separator.finditer(text):
        head = text[: match.start()]
        if head.count("(") > head.count(")") or head.count('"') % 2:
            continue
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    return [p.strip(" .?!") for p in parts]


LIST_SEPARATOR = re.compile(r",(?!\d{3}(?!\d))\s*(?:and\s+|or\s+)?|\s+and\s+", re.I)
_SIDE_SEPARATOR = re.compile(
    r",(?!\d{3}(?!\d))\s*(?:and\s+|or\s+)?|\s+(?:and|with|to|against|vs\.?|versus|or)\s+", re.I
)


def _distribute(items: list[str], tails: bool = True) -> list[str]:
    """Share a head or tail the items leave implicit.

    'the population of Paris, Berlin and Rome' → '... of Berlin', '... of Rome';
    'the history and culture of Japan' → 'the history of Japan', 'culture of Japan'.
    """
    has_preposition = re.compile(rf"\b{_PREPOSITION}\b", re.I)
    rest_short = all(len(i.split()) <= 3 and not has_preposition.search(i) for i in items[1:])
    head = re.match(rf"^(?P<head>.+\s{_PREPOSITION})\s+\S.*$", items[0], re.I)
    if head and rest_short:
        return [items[0]] + [f"{head.group('head')} {item}" for item in items[1:]]
    if not tails:
        return items
    tail = re.match(rf"^(?P<core>.+?)\s+(?P<tail>{_PREPOSITION}\s+.+)$", items[-1], re.I)
    first_short = all(len(i.split()) <= 2 and not has_preposition.search(i) for i in items[:-1])
    if tail and first_short and len(tail.group("core").split()) <= 2:
        return [f"{item} {tail.group('tail')}" for item in items[:-1]] + [items[-1]]
    # 'the French and the German election results': the noun comes once, at the end.
    last = items[-1].split()
    article = last[0].lower() if last else ""
    if article in {"the", "a", "an"} and len(last) > 2:
        if all(len(i.split()) == 2 and i.split()[0].lower() == article for i in items[:-1]):
            return [f"{item} {' '.join(last[2:])}" for item in items[:-1]] + [items[-1]]
    return items


def _qualified(sides: list[str]) -> tuple[list[str], str]:
    """Split a trailing 'for backend services' off the last side: it applies to every side."""
    parts = _QUALIFIER.split(sides[-1], maxsplit=1)
    if len(parts) == 2 and parts[0].strip():
        return sides[:-1] + [parts[0].strip()], " " + parts[1].strip(" .?!")
    return sides, ""


def comparison_of(clause: str) -> tuple[list[str], str, str] | None:
    """The sides, the shared qualifier and a label in the user's words, or None."""
    sides: list[str] = []
    text = clause.strip().rstrip(".?!")
    if match := re.match(r"^(?:compare|contrast|benchmark)\s+(?P<rest>.+)$", text, re.I):
        sides = split_top_level(match.group("rest"), _SIDE_SEPARATOR)
    elif match := re.search(
        r"\b(?:differences?|similarities|comparison)\s+between\s+(?P<rest>.+)$", text, re.I
    ):
        sides = split_top_level(match.group("rest"), LIST_SEPARATOR)
    elif re.search(r"\s(?:vs\.?|versus)\s", text, re.I):
        parts = re.split(r"\s+(?:vs\.?|versus)\s+", text, flags=re.I)
        left = re.split(r"[:;,?]\s*", parts[0])[-1]
        left = re.sub(
            r"^(?:compare|which\s+is\s+better|what\s+is\s+better|should\s+i\s+(?:use|choose|pick)"
            r"|is|choose|pick)\s*[:,]?\s*",
            "",
            left,
            flags=re.I,
        )
        right, _, remainder = re.split(r"([:;,?!]\s*|\.\s)", parts[-1] + "?", maxsplit=1)
        sides = [left, *parts[1:-1], right]
        purpose = re.search(r"\bfor\s+[^?.!,;]+", remainder)
        if purpose and not _QUALIFIER.search(" " + right):
            sides[-1] += " " + purpose.group()
    elif match := re.search(
        r"\b(?:(?:which|what)(?:\s+one)?(?:'s|\s+is|\s+are)?\s+(?:better|best|faster|cheaper"
        r"|preferable)|should\s+(?:i|we)\s+(?:use|choose|pick|learn|buy|go\s+with))\b(?P<rest>.+)$",
        text,
        re.I,
    ):
        rest = match.group("rest").strip(" ,:")
        qualifier = ""
        if "," in rest and " or " in rest.rsplit(",", 1)[-1]:
            qualifier, rest = (part.strip() for part in rest.rsplit(",", 1))
        if " or " not in rest:
            return None
        sides = [s.strip(" ,:") for s in re.split(r",\s*(?:or\s+)?|\s+or\s+", rest)]
        if qualifier:
            sides[-1] += " " + qualifier
    sides = [re.sub(r"^both\s+", "", s, flags=re.I).strip() for s in sides]
    if len(sides) < 2 or any(not s or len(s.split()) > 10 for s in sides):
        return None
    sides, qualifier = _qualified(sides)
    return _distribute(sides, tails=False), qualifier, joined(sides)


def verb_list(clause: str) -> tuple[str, list[str]] | None:
    """'research X, Y and Z' → ('research', [X, Y, Z]); None when the objects are not a list."""
    match = _LIST_VERB.match(clause.strip().rstrip(".?!"))
    if not match or _IDIOM.search(clause) or _NOT_A_LIST.search(clause):
        return None
    rest = match.group("rest")
    if urls(rest) and len(urls(rest)) == 1 and " and " not in rest.replace(urls(rest)[0], ""):
        return None
    items = [i for i in split_top_level(rest, LIST_SEPARATOR) if i]
    if len(items) < 2 or any(len(i.split()) > 8 for i in items):
        return None
    return match.group("verb"), _distribute(items)
