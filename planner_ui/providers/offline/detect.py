"""Detectors: what a piece of text asks for (URLs, addresses, files, arithmetic, effects)."""

from __future__ import annotations

import ast
import re

from .request import TOOL_ORDER

# --- detectors: what a piece of text asks for ----------------------------------------------------

URL = re.compile(r"https?://[^\s<>\"'`]+", re.I)
EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_FILENAME = re.compile(
    r"(?<![\w/@.-])((?:[\w-]+/)*[\w-]+\."
    r"(?:md|markdown|txt|csv|tsv|json|html?|xml|ya?ml|log|rst|py|toml|ini|sql))(?![\w-]|\.\w)",
    re.I,
)
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*%\s+of\s+(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
_EXPRESSION_SPAN = re.compile(r"(?:\(|\.\d|\d)[\d\s.,+\-*/%^×÷()]*")
EMAIL_INTENT = re.compile(
    r"\b(?:e-?mail(?:ed|ing)?|mail|send|sending|notify|forward|reply|write\s+to|cc)\b",
    re.I,
)
SAVE_INTENT = re.compile(
    r"\b(?:save|saving|store|export)\b|\b(?:to|into)\s+(?:a|the)\s+(?:new\s+)?file\b",
    re.I,
)
# A URL after one of these is somewhere to send to, not a page to read.
POST_INTENT = re.compile(r"\b(?:post(?:ed|ing)?|publish|webhook|notify|submit|upload)\b", re.I)
# `run `make test`` or `execute `ls -la``: a command in backticks after a verb that runs it.
_SHELL_COMMAND = re.compile(r"\b(?:run|execute)\b[^`\n]{0,40}`([^`\n]{1,500})`", re.I)
_DELETE_INTENT = re.compile(r"\b(?:delete|remove)\b", re.I)
LIST_INTENT = re.compile(
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


def mask(text: str, pattern: re.Pattern[str]) -> str:
    """Blank out matches, keeping positions, so one detector does not see another's data."""
    return pattern.sub(lambda m: " " * len(m.group()), text)


def urls(text: str) -> list[str]:
    found: list[str] = []
    for match in URL.finditer(text):
        url = match.group()
        # Sentence punctuation and an unbalanced closing bracket belong to the prose.
        while url and (
            url[-1] in ".,;:!?'\"" or url[-1] in ")]}" and url.count("(") < url.count(")")
        ):
            url = url[:-1]
        if url not in found:
            found.append(url)
    return found


def emails(text: str) -> list[str]:
    found: list[str] = []
    for address in EMAIL.findall(mask(text, URL)):
        if address not in found:
            found.append(address)
    return found


def shell_commands(text: str) -> list[str]:
    return [m.group(1).strip() for m in _SHELL_COMMAND.finditer(text)]


def deleted_files(text: str) -> list[str]:
    """File names after 'delete' or 'remove' in the same clause."""
    found: list[str] = []
    masked = mask(mask(text, URL), EMAIL)
    for verb in _DELETE_INTENT.finditer(masked):
        clause = re.split(r"[.;!?]\s|\band\s+then\b", masked[verb.end() :])[0]
        for match in _FILENAME.finditer(clause):
            if match.group(1) not in found:
                found.append(match.group(1))
    return found


def file_mentions(text: str) -> list[tuple[str, str]]:
    """(path, 'read' or 'write') for each file name, judged by the words just before it."""
    masked = mask(mask(text, URL), EMAIL)
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


def expressions_in(text: str) -> list[str]:
    """Arithmetic written in the text, in order, as the calculator accepts it."""
    masked = mask(mask(mask(text, URL), EMAIL), _FILENAME)
    wants_arithmetic = bool(re.search(r"\b(?:calculat|comput|evaluat|minus|subtract)", text, re.I))
    found: list[tuple[int, str]] = []
    for match in _PERCENT_OF.finditer(masked):
        whole = match.group(2).replace(",", "")
        found.append((match.start(), f"{whole} * {match.group(1)} / 100"))
    masked = mask(masked, _PERCENT_OF)
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


def needed_tools(text: str) -> list[str]:
    """The tools the text's own data and verbs call for, in TOOL_ORDER."""
    needed = set()
    if expressions_in(mask(text, _SHELL_COMMAND)):
        needed.add("calculator")
    if urls(text):
        needed.add("http_post" if POST_INTENT.search(mask(text, URL)) else "fetch_url")
    if shell_commands(text):
        needed.add("shell")
    if deleted_files(text):
        needed.add("delete_file")
    # Sending mail is irreversible: an address alone ('who owns info@x.org?') is not a request
    # to write to it.
    if emails(text) and EMAIL_INTENT.search(mask(text, EMAIL)):
        needed.add("send_email")
    mentions = file_mentions(text)
    if any(intent == "read" for _, intent in mentions):
        needed.add("read_file")
    if any(intent == "write" for _, intent in mentions) or SAVE_INTENT.search(text):
        needed.add("write_file")
    if LIST_INTENT.search(text):
        needed.update(
            {"list_files", "read_file"}
            if re.search(r"\b(?:read|open|load)\b", text, re.I)
            else {"list_files"}
        )
    return [name for name in TOOL_ORDER if name in needed]
