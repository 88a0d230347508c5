"""Composing Markdown from the material a step was given or gathered."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from planner_ui.core.prompt_contract import Output

from .detect import emails
from .request import MAX_EMAIL_BODY_CHARS
from .words import STOPWORDS, collapse, excerpt, sentence

# --- composing Markdown from material ------------------------------------------------------------


_HEADING = re.compile(r"^#{1,6}\s*")


def digest(text: str, limit: int) -> str:
    """Markdown shortened for quoting: headings become plain lines, fences and blanks go."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("```") or stripped == "---":
            continue
        lines.append(_HEADING.sub("", stripped) if stripped.startswith("#") else stripped)
    joined = "\n".join(lines)
    if len(joined) <= limit:
        return joined
    cut = joined[: limit - 1]
    boundary = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[: boundary + 1] if boundary > limit // 2 else cut.rsplit(" ", 1)[0]).rstrip() + " …"


def _plain_text(page: str) -> str:
    page = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", " ", page)
    return collapse(html.unescape(re.sub(r"<[^>]+>", " ", page)))


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
    return excerpt(text, 90).rstrip(".,:;")


_WEAK_SUBJECT = re.compile(
    r"^(?:it|them|this|that|these|those|everything|all|(?:final\s+)?(?:results?|summary|list"
    r"|answer|output|findings?|report|draft|text|piece))?$",
    re.I,
)


def topic_of(directive: str, outputs: Sequence[Output]) -> str:
    """A heading: the directive's subject, or the material's own when the directive says 'it'."""
    subject = _subject(directive)
    if not _WEAK_SUBJECT.match(subject):
        return _capitalized(subject)
    if len(outputs) == 1:
        heading = re.match(r"\s*#{1,6}\s+(.+)", outputs[0].text)
        own = _subject(outputs[0].title)
        if heading:
            return excerpt(heading.group(1), 90)
        if not _WEAK_SUBJECT.match(own):
            return _capitalized(own)
    return "Results"


def terms_of(text: str) -> Counter[str]:
    words = re.findall(r"[a-z][a-z0-9-]{3,}", text.lower())
    return Counter(w for w in words if w not in STOPWORDS)


def top(terms: Iterable[str], counts: Counter[str], n: int = 6) -> list[str]:
    return sorted(terms, key=lambda t: (-counts[t], t))[:n]


def points_of(text: str, n: int = 4) -> list[str]:
    """The first few substantial lines or sentences of a text."""
    lines = [line for line in digest(text, 4000).splitlines() if len(line.split()) >= 2]
    if len(lines) < 2:
        # One paragraph: its sentences are the points.
        prose = collapse(" ".join(lines))
        lines = [s for s in re.split(r"(?<=[.!?])\s+", prose) if len(s.split()) >= 2]
    return [excerpt(re.sub(r"^[-*•]\s+|^\d+[.)]\s+", "", line), 220) for line in lines[:n]]


@dataclass(frozen=True)
class Used:
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
            named = f" — “{collapse(html.unescape(title.group(1)))}”" if title else ""
            code = f" (HTTP {status.group(1)})" if status else ""
            return f"Fetched {url}{code}{named}: “{excerpt(text, 300)}”"
        if self.name == "send_email":
            to = args.get("to", "the recipient")
            if self.is_error:
                return f"The email to {to} was not sent: {content}"
            return f"Sent email to {to} with subject “{args.get('subject', '')}”."
        if self.name == "http_post":
            url = args.get("url", "the URL")
            if self.is_error:
                return f"The post to {url} failed: {content}"
            return f"Posted to {url}: {excerpt(content.splitlines()[0] if content else '', 120)}."
        if self.name == "shell":
            command = args.get("command", "")
            if self.is_error:
                return f"`{command}` did not run: {content}"
            return f"Ran `{command}`: {excerpt(content, 300)}"
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
            return f"Read {path}: “{excerpt(content, 300)}”"
        if self.name == "list_files":
            return (
                f"Could not list files: {content}"
                if self.is_error
                else f"Workspace files: {excerpt(content, 300)}"
            )
        prefix = f"{self.name} failed: " if self.is_error else f"{self.name}: "
        return prefix + excerpt(content, 300)


def document(directive: str, outputs: Sequence[Output], path: str) -> str:
    """What a step saves to a file: the material it was given, whole."""
    if outputs and not path.lower().endswith((".md", ".markdown", ".txt")):
        # 'save it to fib.py' wants the code, not the Markdown around it.
        fenced = re.search(r"```[\w+-]*\n(.*?)```", outputs[0].text, re.S)
        if fenced:
            return fenced.group(1)
    if len(outputs) == 1:
        return outputs[0].text + "\n"
    if not outputs:
        return f"# {topic_of(directive, outputs)}\n\n{sentence(directive.split(chr(10))[0])}\n"
    sections = "\n\n".join(f"## {o.title}\n\n{o.text}" for o in outputs)
    return f"# {topic_of(directive, outputs)}\n\n{sections}\n"


def email_subject(directive: str, outputs: Sequence[Output]) -> str:
    quoted = re.search(r"\bsubject(?:\s+line)?\s*[:\"“']\s*([^\"”'\n]+)", directive, re.I)
    if quoted:
        return excerpt(quoted.group(1), 150)
    topic = topic_of(directive, outputs)
    return excerpt(topic, 150) if topic != "Results" or outputs else "Update"


def email_body(directive: str, outputs: Sequence[Output]) -> str:
    if outputs:
        material = "\n\n".join(
            (f"{o.title}\n\n{digest(o.text, 6000)}" if len(outputs) > 1 else digest(o.text, 12000))
            for o in outputs
        )
    else:
        material = _message(directive)
    body = f"Hello,\n\n{material}\n\nBest regards"
    return body if len(body) <= MAX_EMAIL_BODY_CHARS else body[:MAX_EMAIL_BODY_CHARS] + "…"


def _message(directive: str) -> str:
    """What an email with no inputs says: 'Email x@y.org that the demo moved' → 'The demo moved.'"""
    line = directive.split("\n", 1)[0]
    addresses = emails(line)
    said = line.split(addresses[-1], 1)[1] if addresses else ""
    said = re.sub(
        r"^\W*(?:that|saying|to\s+say(?:\s+that)?|to\s+tell\s+(?:him|her|them)(?:\s+that)?)\s+",
        "",
        said.strip(),
        flags=re.I,
    )
    said = re.sub(r"^(?:about|regarding)\s+", "Regarding ", said.strip(" .,:;"), flags=re.I)
    return sentence(_capitalized(said)) if said else sentence(topic_of(directive, []))
