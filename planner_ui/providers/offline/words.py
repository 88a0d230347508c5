"""Words: roles, verbs, slugs and titles."""

from __future__ import annotations

import re
from collections.abc import Sequence

from planner_ui.core.plan import SYNTHESIS_STEP_ID

from .detect import EMAIL, URL, expressions_in

# --- words: roles, verbs, slugs, titles --------------------------------------------------------

_ROLE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (role, re.compile(rf"\b(?:{pattern})\b", re.I))
    for role, pattern in (
        (
            "coder",
            r"calculat\w*|comput\w*|sum|total|how\s+(?:much|many)|code|coding|script|programs?"
            r"|programming|implement\w*|average|multiply|divide",
        ),
        (
            "critic",
            r"review\w*|critiqu\w*|check\w*|verify|verif\w+|fact-check\w*|evaluat\w*|assess\w*"
            r"|compar\w*|contrast\w*|suggest\w*|recommend\w*|improv\w*"
            r"|audit\w*|proofread\w*|validat\w*",
        ),
        (
            "writer",
            r"write|writing|wrote|draft\w*|summari[sz]\w*|summary|report|e-?mail\w*|compos\w*"
            r"|send|save|letter|essay|memo|rewrit\w*|translat\w*|tell",
        ),
        (
            "researcher",
            r"research\w*|find|finding\s+out|look\w*\s+up|investigat\w*|fetch\w*|search\w*"
            r"|explor\w*|gather\w*|collect\w*|discover\w*|read",
        ),
    )
)
_CODE_NOUN = re.compile(r"\b(?:script|code|program|function|class|module)\b", re.I)
_COMPOSE_VERB = re.compile(r"^(?:write|draft|compose|create)\b", re.I)


def role_for(text: str) -> str:
    """The role whose keyword comes first; arithmetic with no other cue goes to the coder."""
    hits = []
    for rank, (role, pattern) in enumerate(_ROLE_PATTERNS):
        match = pattern.search(text)
        if match:
            hits.append((match.start(), rank, role))
    role = min(hits)[2] if hits else "researcher"
    if role == "writer" and _CODE_NOUN.search(text) and _COMPOSE_VERB.search(text.strip()):
        return "coder"  # 'write a script that ...' is code, not prose
    if role == "researcher" and expressions_in(text):
        return "coder"
    return role


ACTION_VERBS = frozenset(
    """research find look search investigate fetch get download read open load list calculate
    compute sum add multiply divide estimate convert count code implement build create make
    generate write draft compose summarize summarise report email e-mail send mail save store
    export review critique check verify evaluate assess audit proofread compare contrast
    explain describe analyze analyse outline plan translate rewrite edit tell give suggest
    recommend identify collect gather prepare propose design test debug fix show produce post
    publish rank combine merge define determine figure pick choose select name study explore
    discover learn browse scrape extract track monitor update format brainstorm decide solve
    work put use visit notify forward reply""".split()
)
QUESTION_WORDS = frozenset(
    "what whats what's how why who which when where is are can could should do does did will "
    "would".split()
)
# Verbs after which ' and ' starts a new action rather than continuing a list of objects.
_CHAIN_VERBS = (
    "save|store|export|email|e-mail|send|mail|write|draft|compose|summari[sz]e|calculate|compute"
    "|fetch|download|research|look\\s+up|investigate|compare|review|check|verify|critique"
    "|translate|post|publish|create|list|read|explain|report|tell|give|produce|prepare|make"
    "|evaluate|assess|estimate|recommend|suggest|outline|convert|rank|notify|forward|share"
)
AND_VERB = re.compile(rf"\s*,?\s+and\s+(?=(?:{_CHAIN_VERBS})\b)", re.I)
COMMA_VERB = re.compile(rf",\s+(?=(?:{_CHAIN_VERBS})\b)", re.I)
PRONOUN = re.compile(r"\b(?:it|them|this|that|these|those|the\s+results?)\b", re.I)
SEQUENCE_BREAK = re.compile(
    r"\s*[,;:]?\s*\band\s+(?:then|after\s+that|afterwards|finally)\b,?\s*"
    r"|\s*[,;]\s*(?:then|after\s+that|afterwards|finally|next|lastly)\b,?\s*"
    r"|\s*;\s*"
    r"|\s+then\s+",
    re.I,
)
LEADING_MARKERS = re.compile(
    r"^(?:(?:and|also|then|first(?:ly)?|second(?:ly)?|third(?:ly)?|next|finally|lastly|"
    r"after\s+that|after\s+this|afterwards|now|please|kindly)\b[\s,:]*)+",
    re.I,
)
POLITE_PREFIX = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need|would\s+like|'d\s+like)"
    r"\s+(?:you\s+)?to\s+|help\s+me\s+(?:to\s+)?|please\s+|kindly\s+)",
    re.I,
)
REFERS_BACK = re.compile(
    r"^\s*(?:and\s+)?(?:then|after\s+that|afterwards|next|finally|lastly)\b"
    r"|\busing\s+(?:the|these|those|that|this|its|their)\s+"
    r"(?:results?|outputs?|findings?|answers?|data|numbers?|information)\b"
    r"|\bbased\s+on\s+(?:the|these|those|that|this)\b"
    r"|\b(?:these|those)\s+(?:results|findings|outputs|answers|options|numbers)\b"
    r"|\bthe\s+above\b|\bthe\s+previous\s+(?:steps?|results?|items?|answers?)\b"
    r"|\b(?:compar\w*|summari[sz]\w*|combin\w*|merg\w*|rank\w*|consolidat\w*)\s+"
    r"(?:them|these|those|all|everything)\b",
    re.I,
)
STOPWORDS = frozenset(
    """a an the of to and or for in on at by with about from into as is are be it its this that
    these those me my our your their them us i you we please can could would will should what
    which who how do does some any all each every than then also just very more most""".split()
)
ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "v", "mr", "mrs", "ms", "dr", "st", "no"})


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def excerpt(text: str, limit: int) -> str:
    """The text on one line, cut at a word boundary when longer than `limit`."""
    flat = collapse(text)
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def title_of(text: str) -> str:
    flat = collapse(text).rstrip(".!;:,")
    flat = flat[:1].upper() + flat[1:]
    return excerpt(flat, 120) or "Step"


def sentence(text: str) -> str:
    flat = collapse(text).rstrip(",;:")
    flat = flat[:1].upper() + flat[1:]
    return flat if flat.endswith((".", "?", "!")) else flat + "."


def slug_of(text: str, max_words: int = 4) -> str:
    text = URL.sub(lambda m: re.sub(r"^https?://(?:www\.)?", "", m.group()).split("/")[0], text)
    text = EMAIL.sub(lambda m: m.group().split("@")[0], text)
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]
    slug = ""
    for word in words[:max_words]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > 40:
            break
        slug = candidate
    return slug or (words[0][:40] if words else "step")


def unique_id(slug: str, used: set[str]) -> str:
    if slug == SYNTHESIS_STEP_ID:
        slug = "synthesis-step"
    candidate, number = slug, 2
    while candidate in used:
        suffix = f"-{number}"
        candidate = slug[: 40 - len(suffix)] + suffix
        number += 1
    used.add(candidate)
    return candidate


def joined(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
