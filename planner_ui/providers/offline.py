"""A deterministic, no-network model: the default without an API key, and the tests' fixture.

It plays the planner, an executor or the synthesizer (chosen by `request.purpose`) by recognizing
structure in the text it is given: enumerations, sequences, comparisons, lists under a verb,
arithmetic, URLs, email addresses and file names. It never looks answers up in a table, and what
it cannot know (facts about the world) it says it cannot know instead of inventing them.

The request formats it reads are those of planner_ui.agents.prompts: a <task> and a <tools>
block for the planner, an <instruction> and a <context> of <output> blocks for an executor, a
<task> and <output> blocks for the synthesizer. Block contents are HTML-escaped by the prompts.
"""

from __future__ import annotations

import ast
import html
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner_ui.core.plan import MAX_INSTRUCTION_CHARS, MAX_STEPS, SYNTHESIS_STEP_ID

from .base import (
    Message,
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    TextSink,
    ToolCall,
    Usage,
)

DEFAULT_MODEL = "offline-v1"

# The order in which tools are granted and called, so plans and replies are stable.
TOOL_ORDER = (
    "calculator",
    "fetch_url",
    "read_file",
    "list_files",
    "write_file",
    "shell",
    "delete_file",
    "send_email",
    "http_post",
)
# Tools that act on the world rather than gather material: a step that gathers should run
# before the step that saves or sends, so the effect can carry what was gathered.
EFFECT_TOOLS = frozenset({"write_file", "send_email", "http_post", "shell", "delete_file"})

# Sections the planner appends to an instruction for a real model's benefit. The offline
# executor acts only on the directive above them, so the overall task's URLs, addresses and
# expressions do not leak into every step.
_SECTION_BREAK = re.compile(r"\n\s*\n(?:Inputs|Background|Context):")

# Together these stay under the schema's 4000-character instruction limit.
_MAX_DIRECTIVE_CHARS = 2200
_MAX_INPUTS_CHARS = 500
_MAX_BACKGROUND_CHARS = 400
_MAX_CONTEXT_CHARS = 600
_MAX_EMAIL_BODY_CHARS = 19_000


# --- request parsing --------------------------------------------------------------------------


def _raw_block(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    return match.group(1) if match else None


def _block(text: str, tag: str) -> str | None:
    raw = _raw_block(text, tag)
    return html.unescape(raw).strip() if raw is not None else None


@dataclass(frozen=True)
class _Output:
    step_id: str
    title: str
    text: str


_OUTPUT_BLOCK = re.compile(r'<output step="([^"]*)" title="([^"]*)">(.*?)</output>', re.S)


def _outputs(text: str) -> list[_Output]:
    return [
        _Output(html.unescape(step), html.unescape(title), html.unescape(body).strip())
        for step, title, body in _OUTPUT_BLOCK.findall(text)
    ]


def _tool_names(block: str) -> list[str]:
    """Names from lines of 'name: description'."""
    names = []
    for line in block.splitlines():
        name = line.strip().lstrip("-*• ").split(":", 1)[0].strip()
        if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and name not in names:
            names.append(name)
    return names


def _first_user_text(request: ModelRequest, part: str) -> str:
    if not request.messages:
        raise ProviderError(f"offline {part}: the request has no messages")
    content = request.messages[0].get("content")
    if not isinstance(content, str):
        raise ProviderError(f"offline {part}: the first message must have text content")
    return content


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """Read a ToolCall/ToolResult attribute, or the same key when a caller passed a dict."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


# --- detectors: what a piece of text asks for ----------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`]+", re.I)
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_FILENAME = re.compile(
    r"(?<![\w/@.-])((?:[\w-]+/)*[\w-]+\."
    r"(?:md|markdown|txt|csv|tsv|json|html?|xml|ya?ml|log|rst|py|toml|ini|sql))(?![\w-]|\.\w)",
    re.I,
)
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*%\s+of\s+(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
_EXPRESSION_SPAN = re.compile(r"(?:\(|\.\d|\d)[\d\s.,+\-*/%^×÷()]*")
_EMAIL_INTENT = re.compile(
    r"\b(?:e-?mail(?:ed|ing)?|mail|send|sending|notify|forward|reply|write\s+to|cc)\b",
    re.I,
)
_SAVE_INTENT = re.compile(
    r"\b(?:save|saving|store|export)\b|\b(?:to|into)\s+(?:a|the)\s+(?:new\s+)?file\b",
    re.I,
)
# A URL after one of these is somewhere to send to, not a page to read.
_POST_INTENT = re.compile(r"\b(?:post(?:ed|ing)?|publish|webhook|notify|submit|upload)\b", re.I)
# `run `make test`` or `execute `ls -la``: a command in backticks after a verb that runs it.
_SHELL_COMMAND = re.compile(r"\b(?:run|execute)\b[^`\n]{0,40}`([^`\n]{1,500})`", re.I)
_DELETE_INTENT = re.compile(r"\b(?:delete|remove)\b", re.I)
_LIST_INTENT = re.compile(
    r"\blist\s+(?:all\s+|the\s+)?(?:\w+\s+)?files\b|\b(?:what|which)\s+files\b"
    r"|\bfiles\s+(?:in|of)\s+the\s+workspace\b|\b(?:read|open|load)\s+(?:all\s+)?(?:the\s+)?files\b",
    re.I,
)
_READ_VERBS = re.compile(
    r"\b(?:read|open|load|summari[sz]e|analy[sz]e|review|parse|check|use|inspect|look\s+at)\b",
    re.I,
)
_WRITE_VERBS = re.compile(
    r"\b(?:save|write|store|export|create|put|output|record|append|dump)\b", re.I
)
_FILE_PREPOSITION = re.compile(
    r"\b(of|from|to|into|as|in|at)\s+(?:(?:the|a|an|new|file|called|named|my|our|your)\s+)*[`'\"]?$",
    re.I,
)


def _mask(text: str, pattern: re.Pattern[str]) -> str:
    """Blank out matches, keeping positions, so one detector does not see another's data."""
    return pattern.sub(lambda m: " " * len(m.group()), text)


def _urls(text: str) -> list[str]:
    found: list[str] = []
    for match in _URL.finditer(text):
        url = match.group()
        # Sentence punctuation and an unbalanced closing bracket belong to the prose.
        while url and (
            url[-1] in ".,;:!?'\"" or url[-1] in ")]}" and url.count("(") < url.count(")")
        ):
            url = url[:-1]
        if url not in found:
            found.append(url)
    return found


def _emails(text: str) -> list[str]:
    found: list[str] = []
    for address in _EMAIL.findall(_mask(text, _URL)):
        if address not in found:
            found.append(address)
    return found


def _shell_commands(text: str) -> list[str]:
    return [m.group(1).strip() for m in _SHELL_COMMAND.finditer(text)]


def _deleted_files(text: str) -> list[str]:
    """File names after 'delete' or 'remove' in the same clause."""
    found: list[str] = []
    masked = _mask(_mask(text, _URL), _EMAIL)
    for verb in _DELETE_INTENT.finditer(masked):
        clause = re.split(r"[.;!?]\s|\band\s+then\b", masked[verb.end() :])[0]
        for match in _FILENAME.finditer(clause):
            if match.group(1) not in found:
                found.append(match.group(1))
    return found


def _file_mentions(text: str) -> list[tuple[str, str]]:
    """(path, 'read' or 'write') for each file name, judged by the words just before it."""
    masked = _mask(_mask(text, _URL), _EMAIL)
    found: list[tuple[str, str]] = []
    for match in _FILENAME.finditer(masked):
        before = masked[max(0, match.start() - 80) : match.start()]
        before = re.split(r"[.;!?]\s|\band\b", before)[-1]
        preposition = _FILE_PREPOSITION.search(before)
        verbs = [(m.start(), "read") for m in _READ_VERBS.finditer(before)]
        verbs += [(m.start(), "write") for m in _WRITE_VERBS.finditer(before)]
        verb_intent = max(verbs)[1] if verbs else "read"
        # 'a summary of notes.txt' reads it, 'save it to report.md' writes it; 'in' defers to
        # the verb ('save the table in out.csv', 'find the typo in draft.md').
        if preposition and preposition.group(1).lower() in {"of", "from"}:
            intent = "read"
        elif preposition and preposition.group(1).lower() in {"to", "into", "as"}:
            intent = "write"
        else:
            intent = verb_intent
        entry = (match.group(1), intent)
        if entry not in found:
            found.append(entry)
    return found


def _clean_expression(candidate: str, allow_bare_minus: bool) -> str | None:
    text = candidate.strip().rstrip(".,").strip()
    while text and text[-1] in "+-*/%^×÷":
        text = text[:-1].rstrip()
    while text.startswith("(") and text.count("(") > text.count(")"):
        text = text[1:].lstrip()
    while text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1].rstrip()
    if not text or text.count("(") != text.count(")"):
        return None
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text).replace("×", "*").replace("÷", "/")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError:
        return None
    if not any(isinstance(node, ast.BinOp) for node in ast.walk(tree)):
        return None
    operators = re.findall(r"\*\*|//|(?<=[\d)\s])[-+*/%^]", text)
    # '3-4 pages', '2024-05-01' and '555-1234' are ranges, dates and numbers, not sums.
    if set(operators) <= {"-"} and " - " not in text and not allow_bare_minus:
        return None
    if re.fullmatch(r"\d{1,4}/\d{1,2}/\d{1,4}", text):
        return None
    return text


def _expressions(text: str) -> list[str]:
    """Arithmetic written in the text, in order, as the calculator accepts it."""
    masked = _mask(_mask(_mask(text, _URL), _EMAIL), _FILENAME)
    wants_arithmetic = bool(re.search(r"\b(?:calculat|comput|evaluat|minus|subtract)", text, re.I))
    found: list[tuple[int, str]] = []
    for match in _PERCENT_OF.finditer(masked):
        whole = match.group(2).replace(",", "")
        found.append((match.start(), f"{whole} * {match.group(1)} / 100"))
    masked = _mask(masked, _PERCENT_OF)
    for span in _EXPRESSION_SPAN.finditer(masked):
        offset = span.start()
        # A comma followed by a space separates expressions; '1,500' is one number.
        for piece in re.split(r",(?!\d{3}(?!\d))\s*|\s{2,}", span.group()):
            for candidate in re.split(r"(?<=[\d)])\s+(?=[\d(.])", piece):
                expression = _clean_expression(candidate, wants_arithmetic)
                if expression:
                    found.append((offset, expression))
    unique: list[str] = []
    for _, expression in sorted(found, key=lambda item: item[0]):
        if expression not in unique:
            unique.append(expression)
    return unique


def _needed_tools(text: str) -> list[str]:
    """The tools the text's own data and verbs call for, in TOOL_ORDER."""
    needed = set()
    if _expressions(_mask(text, _SHELL_COMMAND)):
        needed.add("calculator")
    if _urls(text):
        needed.add("http_post" if _POST_INTENT.search(_mask(text, _URL)) else "fetch_url")
    if _shell_commands(text):
        needed.add("shell")
    if _deleted_files(text):
        needed.add("delete_file")
    # Sending mail is irreversible: an address alone ('who owns info@x.org?') is not a request
    # to write to it.
    if _emails(text) and _EMAIL_INTENT.search(_mask(text, _EMAIL)):
        needed.add("send_email")
    mentions = _file_mentions(text)
    if any(intent == "read" for _, intent in mentions):
        needed.add("read_file")
    if any(intent == "write" for _, intent in mentions) or _SAVE_INTENT.search(text):
        needed.add("write_file")
    if _LIST_INTENT.search(text):
        needed.update(
            {"list_files", "read_file"}
            if re.search(r"\b(?:read|open|load)\b", text, re.I)
            else {"list_files"}
        )
    return [name for name in TOOL_ORDER if name in needed]


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


def _role(text: str) -> str:
    """The role whose keyword comes first; arithmetic with no other cue goes to the coder."""
    hits = []
    for rank, (role, pattern) in enumerate(_ROLE_PATTERNS):
        match = pattern.search(text)
        if match:
            hits.append((match.start(), rank, role))
    role = min(hits)[2] if hits else "researcher"
    if role == "writer" and _CODE_NOUN.search(text) and _COMPOSE_VERB.search(text.strip()):
        return "coder"  # 'write a script that ...' is code, not prose
    if role == "researcher" and _expressions(text):
        return "coder"
    return role


_ACTION_VERBS = frozenset(
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
_QUESTION_WORDS = frozenset(
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
_AND_VERB = re.compile(rf"\s*,?\s+and\s+(?=(?:{_CHAIN_VERBS})\b)", re.I)
_COMMA_VERB = re.compile(rf",\s+(?=(?:{_CHAIN_VERBS})\b)", re.I)
_PRONOUN = re.compile(r"\b(?:it|them|this|that|these|those|the\s+results?)\b", re.I)
_SEQUENCE_BREAK = re.compile(
    r"\s*[,;:]?\s*\band\s+(?:then|after\s+that|afterwards|finally)\b,?\s*"
    r"|\s*[,;]\s*(?:then|after\s+that|afterwards|finally|next|lastly)\b,?\s*"
    r"|\s*;\s*"
    r"|\s+then\s+",
    re.I,
)
_LEADING_MARKERS = re.compile(
    r"^(?:(?:and|also|then|first(?:ly)?|second(?:ly)?|third(?:ly)?|next|finally|lastly|"
    r"after\s+that|after\s+this|afterwards|now|please|kindly)\b[\s,:]*)+",
    re.I,
)
_POLITE_PREFIX = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need|would\s+like|'d\s+like)"
    r"\s+(?:you\s+)?to\s+|help\s+me\s+(?:to\s+)?|please\s+|kindly\s+)",
    re.I,
)
_REFERS_BACK = re.compile(
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
_STOPWORDS = frozenset(
    """a an the of to and or for in on at by with about from into as is are be it its this that
    these those me my our your their them us i you we please can could would will should what
    which who how do does some any all each every than then also just very more most""".split()
)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "v", "mr", "mrs", "ms", "dr", "st", "no"})


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _excerpt(text: str, limit: int) -> str:
    """The text on one line, cut at a word boundary when longer than `limit`."""
    flat = _collapse(text)
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _title(text: str) -> str:
    flat = _collapse(text).rstrip(".!;:,")
    flat = flat[:1].upper() + flat[1:]
    return _excerpt(flat, 120) or "Step"


def _sentence(text: str) -> str:
    flat = _collapse(text).rstrip(",;:")
    flat = flat[:1].upper() + flat[1:]
    return flat if flat.endswith((".", "?", "!")) else flat + "."


def _slug(text: str, max_words: int = 4) -> str:
    text = _URL.sub(lambda m: re.sub(r"^https?://(?:www\.)?", "", m.group()).split("/")[0], text)
    text = _EMAIL.sub(lambda m: m.group().split("@")[0], text)
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS]
    slug = ""
    for word in words[:max_words]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > 40:
            break
        slug = candidate
    return slug or (words[0][:40] if words else "step")


def _unique_id(slug: str, used: set[str]) -> str:
    if slug == SYNTHESIS_STEP_ID:
        slug = "synthesis-step"
    candidate, number = slug, 2
    while candidate in used:
        suffix = f"-{number}"
        candidate = slug[: 40 - len(suffix)] + suffix
        number += 1
    used.add(candidate)
    return candidate


def _joined(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- reading a task: sentences, clauses, enumerations --------------------------------------------


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in re.finditer(r"[.!?]+(?=\s|$)", line):
            before = re.search(r"([\w.]+)$", line[start : match.start()])
            if match.group().startswith(".") and before:
                if before.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                    continue
            sentences.append(line[start : match.end()].strip())
            start = match.end()
        sentences.append(line[start:].strip())
    return [s for s in sentences if s and not re.fullmatch(r"[\W_]+", s)]


def _strip_markers(clause: str) -> str:
    stripped = re.sub(r"^(?:[-*•+]|\(?\d{1,3}[.)])\s+", "", clause.strip())  # a lone list item
    stripped = _LEADING_MARKERS.sub("", stripped)
    stripped = _POLITE_PREFIX.sub("", stripped)
    return _LEADING_MARKERS.sub("", stripped).strip(" ,")


def _is_action(clause: str) -> bool:
    if clause.rstrip().endswith("?"):
        return True
    # 'For each of these cities, find the population' acts after its leading phrase.
    for segment in re.split(r",\s*", clause):
        words = re.findall(r"[\w'-]+", segment.lower())
        if words and (words[0] in _ACTION_VERBS or words[0] in _QUESTION_WORDS):
            return True
    return False


def _split_on_and_verb(clause: str) -> list[str]:
    """'Draft an update and email it to x' is two actions; 'summarize A and B' is one."""
    parts: list[str] = []
    start = 0
    for match in _AND_VERB.finditer(clause):
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
    for match in _COMMA_VERB.finditer(piece):
        left = piece[start : match.start()]
        if len(left.split()) >= 2 and _is_action(_strip_markers(left)):
            parts.append(left)
            start = match.end()
    parts.append(piece[start:])
    return [
        (part, n > 0 and not (_PRONOUN.search(part) or _REFERS_BACK.search(part)))
        for n, part in enumerate(parts)
    ]


@dataclass(frozen=True)
class _Reading:
    """A task read as actions in order, the statements that are only background, and which
    actions run alongside the one before them rather than after it."""

    actions: list[str]
    background: list[str]
    alongside: frozenset[int] = frozenset()


def _clauses(text: str) -> _Reading:
    """Split text into actions in the order given, and the statements that are only background."""
    actions: list[str] = []
    background: list[str] = []
    alongside: set[int] = set()
    for sentence in _sentences(text):
        for piece in _SEQUENCE_BREAK.split(sentence):
            for part, beside in _split_on_comma_verb(piece):
                for n, raw in enumerate(_split_on_and_verb(part)):
                    clause = _strip_markers(raw)
                    if not re.search(r"\w", clause):
                        continue
                    if not _is_action(clause):
                        background.append(clause)
                        continue
                    if beside and n == 0 and actions:
                        alongside.add(len(actions))
                    actions.append(clause)
    if not actions:
        # A task of only markers ('first') is still a task: keep its words.
        whole = _strip_markers(_collapse(text)) or _collapse(text)
        return _Reading([whole] if whole else [], [])
    return _Reading(actions, background, frozenset(alongside))


_ITEM_LINE = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|[-*•+])\s+(?:\[[ xX]\]\s+)?(?P<text>\S.*)$")


def _enumeration(task: str) -> tuple[list[str], str, str]:
    """Numbered or bulleted items, with the text before and after them."""
    items: list[str] = []
    before: list[str] = []
    after: list[str] = []
    for line in task.splitlines():
        match = _ITEM_LINE.match(line)
        if match:
            if after and items:
                # Text between two items belongs to the item above it, not after the list.
                items[-1] = _collapse(items[-1] + " " + " ".join(after))
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


def _split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
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


_LIST_SEPARATOR = re.compile(r",(?!\d{3}(?!\d))\s*(?:and\s+|or\s+)?|\s+and\s+", re.I)
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


def _comparison(clause: str) -> tuple[list[str], str, str] | None:
    """The sides, the shared qualifier and a label in the user's words, or None."""
    sides: list[str] = []
    text = clause.strip().rstrip(".?!")
    if match := re.match(r"^(?:compare|contrast|benchmark)\s+(?P<rest>.+)$", text, re.I):
        sides = _split_top_level(match.group("rest"), _SIDE_SEPARATOR)
    elif match := re.search(
        r"\b(?:differences?|similarities|comparison)\s+between\s+(?P<rest>.+)$", text, re.I
    ):
        sides = _split_top_level(match.group("rest"), _LIST_SEPARATOR)
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
    return _distribute(sides, tails=False), qualifier, _joined(sides)


def _verb_list(clause: str) -> tuple[str, list[str]] | None:
    """'research X, Y and Z' → ('research', [X, Y, Z]); None when the objects are not a list."""
    match = _LIST_VERB.match(clause.strip().rstrip(".?!"))
    if not match or _IDIOM.search(clause) or _NOT_A_LIST.search(clause):
        return None
    rest = match.group("rest")
    if _urls(rest) and len(_urls(rest)) == 1 and " and " not in rest.replace(_urls(rest)[0], ""):
        return None
    items = [i for i in _split_top_level(rest, _LIST_SEPARATOR) if i]
    if len(items) < 2 or any(len(i.split()) > 8 for i in items):
        return None
    return match.group("verb"), _distribute(items)


# --- building a plan ------------------------------------------------------------------------------


@dataclass
class _Draft:
    title: str
    directive: str
    role: str
    tools: list[str]
    depends_on: list[int] = field(default_factory=list)
    slug: str = ""


class _PlanBuilder:
    """Turns a task into drafts (dependencies by index), then into a plan dict."""

    def __init__(self, task: str, available: Sequence[str]) -> None:
        self.task = task
        self.available = list(available)
        self.drafts: list[_Draft] = []
        self.background = ""

    # Tools -----------------------------------------------------------------------------------

    def grant(self, text: str, only: Iterable[str] | None = None) -> list[str]:
        allowed = set(self.available if only is None else only) & set(self.available)
        return [name for name in _needed_tools(text) if name in allowed]

    def complete_data(self, directive: str) -> str:
        """Give a step the concrete data its effect needs when the task gave it elsewhere."""
        needed = _needed_tools(directive)
        if _EMAIL_INTENT.search(directive) and not _emails(directive):
            addresses = _emails(self.task)
            if addresses and re.search(r"\b(?:e-?mail|mail|send)\b", directive, re.I):
                directive = _sentence(directive) + f" Send it to {addresses[0]}."
        if "write_file" in needed and not any(i == "write" for _, i in _file_mentions(directive)):
            written = [path for path, intent in _file_mentions(self.task) if intent == "write"]
            name = written[0] if written else _slug(self.task, 3) + ".md"
            directive = _sentence(directive) + f" Save it to {name}."
        return directive

    # Steps -----------------------------------------------------------------------------------

    def add(
        self,
        title: str,
        directive: str,
        role: str,
        tools: list[str],
        depends_on: Iterable[int] = (),
        slug: str = "",
    ) -> int:
        self.drafts.append(
            _Draft(_title(title), _sentence(directive), role, tools, list(depends_on), slug)
        )
        return len(self.drafts) - 1

    def add_clause(self, clause: str, depends_on: Iterable[int] = ()) -> int:
        directive = self.complete_data(clause)
        return self.add(clause, directive, _role(clause), self.grant(directive), depends_on)

    def add_join(self, depends_on: list[int], goal: str = "", extra: str = "") -> int:
        titles = [self.drafts[i].title for i in depends_on]
        directive = (
            f"Combine the results of {_joined([f'“{t}”' for t in titles])} into one clear, "
            "well-structured answer"
        )
        directive += f" to: {goal.rstrip('.:')}." if goal else "."
        if extra:
            directive += " " + _sentence(self.complete_data(extra))
        tools = self.grant(extra, only=EFFECT_TOOLS) if extra else []
        return self.add(
            "Write the combined report", directive, "writer", tools, depends_on, "write-report"
        )

    def expand_clause(self, clause: str, depends_on: list[int]) -> list[int]:
        """Add a clause's steps: a comparison or a list fans out; returns the new frontier."""
        if comparison := _comparison(clause):
            sides, qualifier, label = comparison
            research = [
                self.add(
                    f"Research {side}",
                    f"Research {side}{qualifier}: the key facts and figures, strengths and "
                    f"weaknesses, as one side of a comparison of {label}",
                    "researcher",
                    self.grant(side),
                    depends_on,
                    "research-" + _slug(side, 3),
                )
                for side in sides
            ]
            compare = self.add(
                f"Compare {label}",
                f"Compare {label}{qualifier} point by point, using the research on "
                f"each: where each is stronger, where they differ, and which fits better. "
                f"The request was: “{_excerpt(clause, 300)}”",
                "critic",
                [],
                research,
                "compare",
            )
            return [compare]
        if listed := _verb_list(clause):
            verb, items = listed
            verb = verb[:1].upper() + verb[1:].lower()
            return [
                self.add(
                    f"{verb} {item}",
                    self.complete_data(f"{verb} {item}"),
                    _role(f"{verb} {item}"),
                    self.grant(f"{verb} {item}"),
                    depends_on,
                    _slug(f"{verb} {item}", 4),
                )
                for item in items
            ]
        return [self.add_clause(clause, depends_on)]

    # Shapes ----------------------------------------------------------------------------------

    def single(self, clause: str) -> None:
        """One action: fan out if it is a comparison or a list, and end with a writer."""
        if _comparison(clause):
            frontier = self.expand_clause(clause, [])
            _, qualifier, label = _comparison(clause) or ([], "", "")
            self.add(
                "Write the comparison",
                self.complete_data(
                    f"Write the final comparison of {label}{qualifier} for the reader: "
                    "a short overview, the key differences and a recommendation, based on the "
                    "assessment"
                ),
                "writer",
                self.grant(clause, only=EFFECT_TOOLS),
                frontier,
                "write-comparison",
            )
            return
        if _verb_list(clause):
            frontier = self.expand_clause(clause, [])
            self.add_join(frontier, clause)
            return
        role, tools = _role(clause), self.grant(self.complete_data(clause))
        gather = [t for t in tools if t not in EFFECT_TOOLS]
        effects = [t for t in tools if t in EFFECT_TOOLS]
        if role == "writer":
            # The piece comes last; what it needs is gathered first, by a step of its own.
            first = self.add(
                "Gather the material",
                f"Gather the facts, figures and results needed for this task, and report them "
                f"plainly without writing the final piece: {clause}",
                "coder" if _expressions(clause) else "researcher",
                gather,
                slug="gather-material",
            )
            self.add(clause, self.complete_data(clause), "writer", effects, [first])
            return
        first = self.add(clause, clause, role, gather)
        self.add(
            "Write the answer",
            self.complete_data(
                f"Write the final answer for the reader from the previous step's result. "
                f"The task was: {clause}"
            ),
            "writer",
            effects,
            [first],
            "write-answer",
        )

    def chain(self, reading: _Reading) -> None:
        """Actions in stages: side-by-side actions share a stage, and each stage waits for all
        the steps of the stage before it."""
        waits_for: list[int] = []
        stage: list[int] = []
        for number, clause in enumerate(reading.actions):
            if number not in reading.alongside:
                waits_for, stage = stage, []
            stage += self.expand_clause(clause, waits_for)
        if len(stage) > 1:
            self.add_join(stage, self.task_sentence())

    def enumeration(self, items: list[str], before: str, after: str) -> None:
        intro = _clauses(before).actions if before else []
        effects = [c for c in intro if set(_needed_tools(c)) & EFFECT_TOOLS]
        gathering = [c for c in intro if c not in effects]
        roles = [_role(_strip_markers(item)) for item in items]
        tails: list[int] = []
        frontier: list[int] = []
        for number, item in enumerate(items):
            # A closing piece of writing ('3. Draft the invitation') uses what the items before
            # it found, unless every item is a piece of writing of its own.
            closes = (
                number == len(items) - 1
                and roles[number] == "writer"
                and any(role != "writer" for role in roles[:-1])
            )
            refers_back = number > 0 and (closes or bool(_REFERS_BACK.search(item)))
            depends_on = list(frontier) if refers_back else []
            clauses = _clauses(item).actions
            if gathering and not _is_action(_strip_markers(item)):
                # A bare item ('- Paris') takes its verb from the text before the list.
                action = re.sub(r"^(?:for\s+(?:each|every|all)\b[^,]*,\s*)", "", gathering[-1])
                clauses = [f"{action.rstrip(':')}: {_strip_markers(item)}"]
            for clause in clauses or [item]:
                depends_on = [self.add_clause(clause, depends_on)]
            tails.append(depends_on[0])
            frontier = depends_on if refers_back else frontier + depends_on
        extra = " ".join(effects + ([after] if after else []))
        if len(frontier) > 1 or extra:
            self.add_join(tails, gathering[-1] if gathering else "", extra)

    def batched_enumeration(self, items: list[str]) -> None:
        """More items than steps allowed: each step takes a batch of items."""
        size = math.ceil(len(items) / (MAX_STEPS - 1))
        tails = []
        for start in range(0, len(items), size):
            batch = items[start : start + size]
            refers_back = bool(tails) and any(_REFERS_BACK.search(item) for item in batch)
            directive = "Do each of these: " + " ".join(
                f"({start + n + 1}) {item.rstrip('.')}." for n, item in enumerate(batch)
            )
            tails.append(
                self.add(
                    f"Items {start + 1}–{start + len(batch)}",
                    directive,
                    _role(" ".join(batch)),
                    self.grant(" ".join(batch)),
                    tails[-1:] if refers_back else [],
                    f"items-{start + 1}-{start + len(batch)}",
                )
            )
        self.add_join(tails, self.task_sentence())

    def task_sentence(self) -> str:
        return _excerpt(_strip_markers(self.task), 300)

    # Output ----------------------------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        items, before, after = _enumeration(self.task)
        if len(items) >= 2:
            self.enumeration(items, before, after)
            if len(self.drafts) > MAX_STEPS:
                self.drafts = []
                self.batched_enumeration(items)
        else:
            reading = _clauses(self.task)
            clauses = reading.actions
            self.background = _excerpt(" ".join(reading.background), _MAX_BACKGROUND_CHARS)
            if len(clauses) == 1:
                self.single(clauses[0])
            else:
                self.chain(reading)
                if len(self.drafts) > MAX_STEPS:
                    self.drafts = []
                    size = math.ceil(len(clauses) / MAX_STEPS)
                    merged = [
                        "; then ".join(clauses[i : i + size]) for i in range(0, len(clauses), size)
                    ]
                    frontier: list[int] = []
                    for clause in merged:
                        frontier = [self.add_clause(clause, frontier)]
        return self.render()

    def render(self) -> dict[str, Any]:
        used: set[str] = set()
        ids = [_unique_id(d.slug or _slug(d.title), used) for d in self.drafts]
        task = _excerpt(self.task, _MAX_CONTEXT_CHARS)
        steps = []
        for draft, step_id in zip(self.drafts, ids, strict=True):
            instruction = _excerpt_keep_lines(draft.directive, _MAX_DIRECTIVE_CHARS)
            if draft.depends_on:
                # 'Summarize it' is only self-contained once it says what 'it' is.
                sources = _joined([f"“{self.drafts[i].title}”" for i in draft.depends_on])
                instruction += "\n\n" + _excerpt(
                    f"Inputs: work from the output of {sources}.", _MAX_INPUTS_CHARS
                )
            if self.background and task != _collapse(self.task):
                # Only when the quoted task below is cut short and might lose it.
                instruction += f"\n\nBackground: {self.background}"
            instruction += f"\n\nContext: this step is one part of the task “{task}”."
            # A last guard: the capped parts above add up to about 3800 characters.
            instruction = instruction[:MAX_INSTRUCTION_CHARS]
            steps.append(
                {
                    "id": step_id,
                    "title": draft.title,
                    "instruction": instruction,
                    "role": draft.role,
                    "tools": draft.tools,
                    "depends_on": [ids[i] for i in draft.depends_on],
                }
            )
        return {"goal": _excerpt(self.task, 200), "steps": steps}


def _excerpt_keep_lines(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


# --- composing Markdown from material ------------------------------------------------------------


def _digest(text: str, limit: int) -> str:
    """Markdown shortened for quoting: headings become plain lines, fences and blanks go."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("```") or stripped == "---":
            continue
        lines.append(re.sub(r"^#{1,6}\s*", "", stripped))
    joined = "\n".join(lines)
    if len(joined) <= limit:
        return joined
    cut = joined[: limit - 1]
    boundary = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[: boundary + 1] if boundary > limit // 2 else cut.rsplit(" ", 1)[0]).rstrip() + " …"


def _plain_text(page: str) -> str:
    page = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", " ", page)
    return _collapse(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _capitalized(text: str) -> str:
    # 'https://…', 'notes.txt' and 'bob@x.org' keep their case.
    first = text.split(" ", 1)[0]
    return text if re.search(r"[./@:]", first) else text[:1].upper() + text[1:]


_LEADING_VERB = re.compile(
    r"^(?:(?:please|then|first|finally)\s+)?(?:research|find(?:\s+out)?|look\s+up|investigate"
    r"|fetch|get|read|summari[sz]e|explain|describe|analy[sz]e|calculate|compute|review"
    r"|check|verify|critique|assess|evaluate|write|draft|compose|prepare|create|make"
    r"|gather|collect|compare|email|e-mail|send|save|store|export)\b\s*",
    re.I,
)


def _subject(directive: str) -> str:
    """What a directive is about: its words after the leading verb phrase, as written."""
    text = directive.split("\n", 1)[0].strip().rstrip(".?!")
    head, colon, tail = text.partition(": ")
    # 'Research X: the key facts…' is about X; 'Step 2: research X' is about what follows.
    if colon and not _LEADING_VERB.match(head) and len(tail.split()) >= 2:
        text = tail
    elif colon:
        text = head
    text = _LEADING_VERB.sub("", text)
    # Who receives it is not what it is about: 'bob@x.org that the demo moved'.
    text = re.sub(r"^\S+@\S+\s+(?:that\s+|about\s+|regarding\s+)?", "", text, flags=re.I)
    # Nor where it goes: 'the summary to bob@x.org'.
    text = re.split(
        r"\s+(?:to|into|as|in)\s+(?=\S*@|\S+\.[a-z]{2,4}\b)|\s+point\s+by\s+point\b|,\s|\s+using\s",
        text,
        maxsplit=1,
    )[0]
    text = re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.I)
    return _excerpt(text, 90).rstrip(".,:;")


_WEAK_SUBJECT = re.compile(
    r"^(?:it|them|this|that|these|those|everything|all|(?:final\s+)?(?:results?|summary|list"
    r"|answer|output|findings?|report|draft|text|piece))?$",
    re.I,
)


def _topic(directive: str, outputs: Sequence[_Output]) -> str:
    """A heading: the directive's subject, or the material's own when the directive says 'it'."""
    subject = _subject(directive)
    if not _WEAK_SUBJECT.match(subject):
        return _capitalized(subject)
    if len(outputs) == 1:
        heading = re.match(r"\s*#{1,6}\s+(.+)", outputs[0].text)
        own = _subject(outputs[0].title)
        if heading:
            return _excerpt(heading.group(1), 90)
        if not _WEAK_SUBJECT.match(own):
            return _capitalized(own)
    return "Results"


def _terms(text: str) -> Counter[str]:
    words = re.findall(r"[a-z][a-z0-9-]{3,}", text.lower())
    return Counter(w for w in words if w not in _STOPWORDS)


def _top(terms: Iterable[str], counts: Counter[str], n: int = 6) -> list[str]:
    return sorted(terms, key=lambda t: (-counts[t], t))[:n]


def _points(text: str, n: int = 4) -> list[str]:
    """The first few substantial lines or sentences of a text."""
    lines = [line for line in _digest(text, 4000).splitlines() if len(line.split()) >= 2]
    if len(lines) < 2:
        # One paragraph: its sentences are the points.
        prose = _collapse(" ".join(lines))
        lines = [s for s in re.split(r"(?<=[.!?])\s+", prose) if len(s.split()) >= 2]
    return [_excerpt(re.sub(r"^[-*•]\s+|^\d+[.)]\s+", "", line), 220) for line in lines[:n]]


@dataclass(frozen=True)
class _Used:
    """One tool call and its result, as the final answer reports it."""

    name: str
    arguments: dict[str, Any]
    content: str
    is_error: bool

    def line(self) -> str:
        args, content = self.arguments, self.content.strip()
        if self.name == "calculator":
            return (
                f"Could not compute {args.get('expression', '')}: {content}"
                if self.is_error
                else content
            )
        if self.name == "fetch_url":
            url = args.get("url", "the page")
            if self.is_error:
                return f"Could not fetch {url}: {content}"
            status = re.match(r"HTTP (\d+) from \S+\s*", content)
            body = content[status.end() :] if status else content
            title = re.search(r"(?is)<title[^>]*>(.*?)</title>", body)
            text = _plain_text(body)
            named = f" — “{_collapse(html.unescape(title.group(1)))}”" if title else ""
            code = f" (HTTP {status.group(1)})" if status else ""
            return f"Fetched {url}{code}{named}: “{_excerpt(text, 300)}”"
        if self.name == "send_email":
            to = args.get("to", "the recipient")
            if self.is_error:
                return f"The email to {to} was not sent: {content}"
            return f"Sent email to {to} with subject “{args.get('subject', '')}”."
        if self.name == "http_post":
            url = args.get("url", "the URL")
            if self.is_error:
                return f"The post to {url} failed: {content}"
            return f"Posted to {url}: {_excerpt(content.splitlines()[0] if content else '', 120)}."
        if self.name == "shell":
            command = args.get("command", "")
            if self.is_error:
                return f"`{command}` did not run: {content}"
            return f"Ran `{command}`: {_excerpt(content, 300)}"
        if self.name == "delete_file":
            path = args.get("path", "the file")
            return f"Could not delete {path}: {content}" if self.is_error else f"Deleted {path}."
        if self.name == "write_file":
            path = args.get("path", "the file")
            return (
                f"Could not save {path}: {content}"
                if self.is_error
                else f"Saved {path}: {content}."
            )
        if self.name == "read_file":
            path = args.get("path", "the file")
            if self.is_error:
                return f"Could not read {path}: {content}"
            return f"Read {path}: “{_excerpt(content, 300)}”"
        if self.name == "list_files":
            return (
                f"Could not list files: {content}"
                if self.is_error
                else f"Workspace files: {_excerpt(content, 300)}"
            )
        prefix = f"{self.name} failed: " if self.is_error else f"{self.name}: "
        return prefix + _excerpt(content, 300)


def _document(directive: str, outputs: Sequence[_Output], path: str) -> str:
    """What a step saves to a file: the material it was given, whole."""
    if outputs and not path.lower().endswith((".md", ".markdown", ".txt")):
        # 'save it to fib.py' wants the code, not the Markdown around it.
        fenced = re.search(r"```[\w+-]*\n(.*?)```", outputs[0].text, re.S)
        if fenced:
            return fenced.group(1)
    if len(outputs) == 1:
        return outputs[0].text + "\n"
    if not outputs:
        return f"# {_topic(directive, outputs)}\n\n{_sentence(directive.split(chr(10))[0])}\n"
    sections = "\n\n".join(f"## {o.title}\n\n{o.text}" for o in outputs)
    return f"# {_topic(directive, outputs)}\n\n{sections}\n"


def _email_subject(directive: str, outputs: Sequence[_Output]) -> str:
    quoted = re.search(r"\bsubject(?:\s+line)?\s*[:\"“']\s*([^\"”'\n]+)", directive, re.I)
    if quoted:
        return _excerpt(quoted.group(1), 150)
    topic = _topic(directive, outputs)
    return _excerpt(topic, 150) if topic != "Results" or outputs else "Update"


def _email_body(directive: str, outputs: Sequence[_Output]) -> str:
    if outputs:
        material = "\n\n".join(
            (
                f"{o.title}\n\n{_digest(o.text, 6000)}"
                if len(outputs) > 1
                else _digest(o.text, 12000)
            )
            for o in outputs
        )
    else:
        material = _message(directive)
    body = f"Hello,\n\n{material}\n\nBest regards"
    return body if len(body) <= _MAX_EMAIL_BODY_CHARS else body[:_MAX_EMAIL_BODY_CHARS] + "…"


def _message(directive: str) -> str:
    """What an email with no inputs says: 'Email x@y.org that the demo moved' → 'The demo moved.'"""
    line = directive.split("\n", 1)[0]
    addresses = _emails(line)
    said = line.split(addresses[-1], 1)[1] if addresses else ""
    said = re.sub(
        r"^\W*(?:that|saying|to\s+say(?:\s+that)?|to\s+tell\s+(?:him|her|them)(?:\s+that)?)\s+",
        "",
        said.strip(),
        flags=re.I,
    )
    said = re.sub(r"^(?:about|regarding)\s+", "Regarding ", said.strip(" .,:;"), flags=re.I)
    return _sentence(_capitalized(said)) if said else _sentence(_topic(directive, []))


def _file_path(directive: str) -> str:
    written = [path for path, intent in _file_mentions(directive) if intent == "write"]
    return written[0] if written else _slug(directive, 3) + ".md"


def _planned_calls(
    directive: str, outputs: Sequence[_Output], granted: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The calls an executor's first turn makes, using only granted tools."""
    calls: list[tuple[str, dict[str, Any]]] = []
    if "calculator" in granted:
        calls += [("calculator", {"expression": e}) for e in _expressions(directive)]
    if "fetch_url" in granted and not ("http_post" in granted and _POST_INTENT.search(directive)):
        calls += [("fetch_url", {"url": url}) for url in _urls(directive)]
    if "shell" in granted:
        calls += [("shell", {"command": command}) for command in _shell_commands(directive)]
    if "delete_file" in granted:
        calls += [("delete_file", {"path": path}) for path in _deleted_files(directive)]
    if "list_files" in granted and _LIST_INTENT.search(directive):
        calls.append(("list_files", {}))
    mentions = _file_mentions(directive)
    if "read_file" in granted:
        calls += [("read_file", {"path": path}) for path, intent in mentions if intent == "read"]
    if "write_file" in granted and (
        any(i == "write" for _, i in mentions) or _SAVE_INTENT.search(directive)
    ):
        path = _file_path(directive)
        calls.append(("write_file", {"path": path, "content": _document(directive, outputs, path)}))
    if "http_post" in granted and _POST_INTENT.search(_mask(directive, _URL)):
        body = {
            "task": _collapse(directive.split("\n", 1)[0])[:200],
            "summary": _email_body(directive, outputs)[:2000],
        }
        calls += [
            ("http_post", {"url": url, "body": json.dumps(body, ensure_ascii=False)})
            for url in _urls(directive)
        ]
    if "send_email" in granted:
        for address in _emails(directive):
            calls.append(
                (
                    "send_email",
                    {
                        "to": address,
                        "subject": _email_subject(directive, outputs),
                        "body": _email_body(directive, outputs),
                    },
                )
            )
    return calls


def _describe_call(name: str, arguments: dict[str, Any]) -> str:
    shown = (
        arguments.get("expression")
        or arguments.get("url")
        or arguments.get("path")
        or arguments.get("to")
    )
    return f"{name} ({shown})" if shown else name


def _material_section(outputs: Sequence[_Output], limit: int) -> list[str]:
    return [f"- From “{o.title}”: {_excerpt(_digest(o.text, limit), limit)}" for o in outputs]


def _researcher_answer(directive: str, outputs: Sequence[_Output], used: Sequence[_Used]) -> str:
    subject = _topic(directive, outputs)
    lines = [f"## Findings: {subject}", ""]
    lines += [f"- {u.line()}" for u in used]
    lines += _material_section(outputs, 600)
    if not used and not outputs:
        question = directive.split("\n", 1)[0].strip()
        about = f"to answer “{question}”" if question.endswith("?") else f"about {subject}"
        lines += [
            f"Working offline, with no tool or source to consult, I cannot report verified "
            f"facts {about}. What this step should establish:",
            "",
            f"- What {subject} is, with its key facts and figures",
            f"- The main strengths and weaknesses of {subject}",
            f"- Recent developments and open questions about {subject}",
        ]
    sources = [u.arguments["url"] for u in used if u.name == "fetch_url" and not u.is_error]
    if sources:
        lines += ["", "Sources: " + ", ".join(sources)]
    return "\n".join(lines)


def _coder_answer(directive: str, outputs: Sequence[_Output], used: Sequence[_Used]) -> str:
    lines = ["## Result", ""]
    lines += [f"- {u.line()}" for u in used]
    values = [
        u.content.rsplit(" = ", 1)[-1] for u in used if u.name == "calculator" and not u.is_error
    ]
    if len(values) == 1:
        lines += ["", f"**Answer: {values[0]}**"]
    expressions = _expressions(directive)
    if not used and expressions:
        lines += [
            f"- {e}: not computed, because no calculator was granted to this step"
            for e in expressions
        ]
    if outputs:
        lines += ["", "Inputs used:"] + _material_section(outputs, 400)
    if not used and not outputs and not expressions:
        lines += [f"Nothing to compute was given for: {_sentence(directive.split(chr(10))[0])}"]
    return "\n".join(lines)


def _critic_answer(directive: str, outputs: Sequence[_Output], used: Sequence[_Used]) -> str:
    lines = [f"## Assessment: {_topic(directive, outputs)}", ""]
    lines += [f"- {u.line()}" for u in used]
    if len(outputs) >= 2:
        counts = [_terms(o.text) for o in outputs]
        shared = set.intersection(*(set(c) for c in counts))
        total = sum(counts, Counter())
        for output in outputs:
            points = _points(output.text)
            lines += [f"### {output.title}", ""] + [f"- {p}" for p in points] + [""]
        lines += ["### Where they differ", ""]
        for output, terms in zip(outputs, counts, strict=True):
            own = _top(set(terms) - shared, terms)
            lines.append(
                f"- Only in “{output.title}”: {', '.join(own) if own else 'nothing distinctive'}"
            )
        common = _top(shared, total)
        lines.append(f"- Common ground: {', '.join(common) if common else 'none'}")
        sizes = [len(_points(o.text, 50)) for o in outputs]
        richest = max(range(len(outputs)), key=lambda i: (sizes[i], -i))
        if len(set(sizes)) == 1:
            verdict = f"The inputs are covered evenly ({sizes[0]} points each)"
        else:
            others = ", ".join(str(s) for i, s in enumerate(sizes) if i != richest)
            verdict = (
                f"“{outputs[richest].title}” is backed by the most material "
                f"({sizes[richest]} points against {others})"
            )
        lines += [
            "",
            "### Verdict",
            "",
            f"{verdict}; weigh the differences above against what the task needs before deciding.",
        ]
    elif outputs:
        text = outputs[0].text
        points = _points(text, 50)
        gaps = []
        if not re.search(r"\d", text):
            gaps.append("it gives no figures")
        if not _URL.search(text) and not re.search(r"\bsource", text, re.I):
            gaps.append("it cites no sources")
        if len(points) < 3:
            gaps.append("it makes fewer than three points")
        lines += [f"“{outputs[0].title}” makes {len(points)} point(s):", ""] + [
            f"- {p}" for p in points[:6]
        ]
        lines += [
            "",
            "Gaps: "
            + (
                "; ".join(gaps) + "."
                if gaps
                else "none found: it has figures, sources and several points."
            ),
        ]
    elif not used:
        lines.append("Nothing was given to assess: this step has no inputs and no tool results.")
    return "\n".join(lines)


def _writer_answer(directive: str, outputs: Sequence[_Output], used: Sequence[_Used]) -> str:
    lines = [f"## {_topic(directive, outputs)}", ""]
    if len(outputs) == 1:
        lines.append(_digest(outputs[0].text, 3000))
    elif outputs:
        lines += [
            f"This brings together {len(outputs)} inputs: {_joined([o.title for o in outputs])}.",
            "",
        ]
        for output in outputs:
            lines += [f"### {output.title}", "", _digest(output.text, 1500), ""]
        firsts = [p[0] for p in (_points(o.text, 1) for o in outputs) if p]
        if firsts:
            lines += ["In short: " + " ".join(_sentence(f) for f in firsts)]
    else:
        lines.append(
            f"{_sentence(directive.split(chr(10))[0])} No material was given to this step, and "
            "working offline I add no facts of my own."
        )
    effects = [u.line() for u in used]
    if effects:
        lines += ["", "---", ""] + [f"- {line}" for line in effects]
    return "\n".join(lines).strip()


_ANSWERS = {
    "researcher": _researcher_answer,
    "coder": _coder_answer,
    "critic": _critic_answer,
    "writer": _writer_answer,
}


def _tool_rounds(messages: Sequence[Message]) -> list[_Used]:
    """Every tool result in the conversation, paired with the call that asked for it."""
    calls: dict[str, Any] = {}
    used: list[_Used] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            calls[_field(call, "id", "")] = call
        for result in message.get("results") or []:
            call = calls.get(_field(result, "tool_call_id", ""))
            used.append(
                _Used(
                    name=_field(call, "name", "tool") if call is not None else "tool",
                    arguments=dict(_field(call, "arguments", {}) or {}) if call is not None else {},
                    content=str(_field(result, "content", "")),
                    is_error=bool(_field(result, "is_error", False)),
                )
            )
    return used


# --- the synthesizer ------------------------------------------------------------------------------


def _deliverable(task: str, outputs: Sequence[_Output]) -> str:
    items, before, _ = _enumeration(task)
    first = before.splitlines()[0] if before else (items[0] if items else task)
    heading = _title(_strip_markers(_sentences(first)[0] if _sentences(first) else first))
    lines = [f"# {_excerpt(heading, 100)}", ""]
    if not outputs:
        lines += ["No step produced an output, so there is nothing to assemble yet."]
        return "\n".join(lines)
    for output in outputs:
        body = output.text.strip()
        # The section heading is ours; a step's own top heading would repeat it.
        body = re.sub(r"\A#{1,6}\s+[^\n]*\n+", "", body) if body.startswith("#") else body
        body = re.sub(r"(?m)^#{1,2}(?=\s)", "###", body)
        lines += [f"## {output.title}", "", _excerpt_keep_lines(body, 6000) or "(no output)", ""]
    last = _points(outputs[-1].text, 1)
    lines += [
        "## Conclusion",
        "",
        f"This brings together {len(outputs)} step result(s): "
        f"{_joined([o.title for o in outputs])}."
        + (f" The last step concluded: {_sentence(last[0])}" if last else ""),
    ]
    return "\n".join(lines)


# --- the provider ---------------------------------------------------------------------------------


def _message_chars(message: Message) -> int:
    chars = len(message["content"]) if isinstance(message.get("content"), str) else 0
    for call in message.get("tool_calls") or []:
        chars += len(json.dumps(_field(call, "arguments", {}), ensure_ascii=False))
    for result in message.get("results") or []:
        chars += len(str(_field(result, "content", "")))
    return chars


def _stream_pieces(text: str, count: int = 8) -> list[str]:
    """The text cut into about `count` pieces at word boundaries, for simulated streaming."""
    words = re.split(r"(?<=\s)", text)
    size = max(1, math.ceil(len(words) / count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class OfflineProvider(Provider):
    """Plans, executes and synthesizes from the structure of its input; no network, no chance."""

    name = "offline"

    def __init__(self, model: str = DEFAULT_MODEL, latency_s: float = 0.0) -> None:
        super().__init__(model)
        self.latency_s = latency_s

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        reply = self._answer(request)
        # Simulated latency lets tests prove that parallel branches really overlap. With a
        # listener, the text is "written" across that time, as a streaming model would.
        if on_text is not None and reply.text:
            pieces = _stream_pieces(reply.text)
            for piece in pieces:
                if self.latency_s > 0:
                    time.sleep(self.latency_s / len(pieces))
                on_text(piece)
        elif self.latency_s > 0:
            time.sleep(self.latency_s)
        return reply

    def _answer(self, request: ModelRequest) -> ModelReply:
        purpose = request.purpose
        if purpose == "planner":
            return self._reply(request, self._plan(request))
        if purpose == "synthesizer":
            return self._reply(request, self._synthesize(request))
        if purpose == "executor" or purpose.startswith("executor:"):
            return self._execute(request, purpose.partition(":")[2] or "researcher")
        raise ProviderError(
            f"offline provider: unknown purpose {purpose!r}; expected 'planner', "
            "'executor:<role>' or 'synthesizer'"
        )

    def _plan(self, request: ModelRequest) -> str:
        # A repair request repeats the task in its first message; a fresh plan answers it.
        content = _first_user_text(request, "planner")
        task = _block(content, "task")
        if task is None:
            raise ProviderError("offline planner: the first message has no <task>…</task> block")
        if not task.strip():
            raise ProviderError("offline planner: the <task> block is empty")
        tools = _tool_names(_block(content, "tools") or "")
        # Offline, a revision request is read as more of the task: 'and mate' adds a branch.
        revision = (_block(content, "revision_request") or "").strip()
        if revision:
            joiner = " " if revision[:1].islower() or revision.lower().startswith("and ") else ". "
            task = task.strip().rstrip(".") + joiner + revision
        plan = _PlanBuilder(task.strip(), tools).build()
        # Asked to re-plan after failures, it routes around them: the failed steps go, and
        # what depended on them does without their output.
        failed = set(re.findall(r'<failure step="([^"]+)"', content))
        if failed:
            plan["steps"] = [
                {**step, "depends_on": [d for d in step["depends_on"] if d not in failed]}
                for step in plan["steps"]
                if step["id"] not in failed
            ]
        return json.dumps(plan, ensure_ascii=False, indent=2)

    def _execute(self, request: ModelRequest, role: str) -> ModelReply:
        content = _first_user_text(request, "executor")
        instruction = _block(content, "instruction")
        if instruction is None:
            raise ProviderError("offline executor: the first message has no <instruction> block")
        directive = _SECTION_BREAK.split(instruction, maxsplit=1)[0].strip()
        # Parsed before unescaping, so an output quoting '</output>' cannot end its own block.
        outputs = _outputs(_raw_block(content, "context") or "")
        answer = _ANSWERS.get(role, _researcher_answer)
        if len(request.messages) == 1:
            granted = {spec.name for spec in request.tools}
            planned = _planned_calls(directive, outputs, granted)
            if planned:
                calls = [
                    ToolCall(f"call_{n}", name, arguments)
                    for n, (name, arguments) in enumerate(planned, start=1)
                ]
                text = (
                    "Using " + ", ".join(_describe_call(c.name, c.arguments) for c in calls) + "."
                )
                return self._reply(request, text, calls, "tool_use")
        # After one round of tool results (or none needed) the step finishes: never loop.
        used = _tool_rounds(request.messages)
        if used and all(u.is_error for u in used):
            # Every tool it needed failed: nothing to build on, so it says it cannot proceed.
            reasons = "; ".join(u.line() for u in used)
            return self._reply(request, f"STEP FAILED: {reasons}")
        return self._reply(request, answer(directive, outputs, used))

    def _synthesize(self, request: ModelRequest) -> str:
        content = _first_user_text(request, "synthesizer")
        task = _block(content, "task")
        if task is None:
            raise ProviderError(
                "offline synthesizer: the first message has no <task>…</task> block"
            )
        return _deliverable(task, _outputs(content))

    def _reply(
        self,
        request: ModelRequest,
        text: str,
        calls: Sequence[ToolCall] = (),
        stop_reason: str = "end_turn",
    ) -> ModelReply:
        input_chars = len(request.system) + sum(_message_chars(m) for m in request.messages)
        output_chars = len(text) + sum(
            len(json.dumps(c.arguments, ensure_ascii=False)) for c in calls
        )
        return ModelReply(
            text=text,
            tool_calls=list(calls),
            stop_reason=stop_reason,
            usage=Usage(math.ceil(input_chars / 4), math.ceil(output_chars / 4)),
            model=self.model,
        )
