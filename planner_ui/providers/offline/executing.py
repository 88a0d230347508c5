"""Executing a step: which tools to call with which arguments, and the answer by role."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from planner_ui.core.prompt_contract import Output

from ..base import (
    Message,
)
from .compose import (
    Used,
    digest,
    document,
    email_body,
    email_subject,
    points_of,
    terms_of,
    top,
    topic_of,
)
from .detect import (
    LIST_INTENT,
    POST_INTENT,
    SAVE_INTENT,
    URL,
    deleted_files,
    emails,
    expressions_in,
    file_mentions,
    mask,
    shell_commands,
    urls,
)
from .request import field
from .words import collapse, excerpt, joined, sentence, slug_of


def _file_path(directive: str) -> str:
    written = [path for path, intent in file_mentions(directive) if intent == "write"]
    return written[0] if written else slug_of(directive, 3) + ".md"


def planned_calls(
    directive: str, outputs: Sequence[Output], granted: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The calls an executor's first turn makes, using only granted tools."""
    calls: list[tuple[str, dict[str, Any]]] = []
    if "calculator" in granted:
        calls += [("calculator", {"expression": e}) for e in expressions_in(directive)]
    if "fetch_url" in granted and not ("http_post" in granted and POST_INTENT.search(directive)):
        calls += [("fetch_url", {"url": url}) for url in urls(directive)]
    if "shell" in granted:
        calls += [("shell", {"command": command}) for command in shell_commands(directive)]
    if "delete_file" in granted:
        calls += [("delete_file", {"path": path}) for path in deleted_files(directive)]
    if "list_files" in granted and LIST_INTENT.search(directive):
        calls.append(("list_files", {}))
    mentions = file_mentions(directive)
    if "read_file" in granted:
        calls += [("read_file", {"path": path}) for path, intent in mentions if intent == "read"]
    if "write_file" in granted and (
        any(i == "write" for _, i in mentions) or SAVE_INTENT.search(directive)
    ):
        path = _file_path(directive)
        calls.append(("write_file", {"path": path, "content": document(directive, outputs, path)}))
    if "http_post" in granted and POST_INTENT.search(mask(directive, URL)):
        body = {
            "task": collapse(directive.split("\n", 1)[0])[:200],
            "summary": email_body(directive, outputs)[:2000],
        }
        calls += [
            ("http_post", {"url": url, "body": json.dumps(body, ensure_ascii=False)})
            for url in urls(directive)
        ]
    if "send_email" in granted:
        for address in emails(directive):
            calls.append(
                (
                    "send_email",
                    {
                        "to": address,
                        "subject": email_subject(directive, outputs),
                        "body": email_body(directive, outputs),
                    },
                )
            )
    return calls


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    shown = (
        arguments.get("expression")
        or arguments.get("url")
        or arguments.get("path")
        or arguments.get("to")
    )
    return f"{name} ({shown})" if shown else name


def _material_section(outputs: Sequence[Output], limit: int) -> list[str]:
    return [f"- From “{o.title}”: {excerpt(digest(o.text, limit), limit)}" for o in outputs]


def researcher_answer(directive: str, outputs: Sequence[Output], used: Sequence[Used]) -> str:
    subject = topic_of(directive, outputs)
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


def _coder_answer(directive: str, outputs: Sequence[Output], used: Sequence[Used]) -> str:
    lines = ["## Result", ""]
    lines += [f"- {u.line()}" for u in used]
    values = [
        u.content.rsplit(" = ", 1)[-1] for u in used if u.name == "calculator" and not u.is_error
    ]
    if len(values) == 1:
        lines += ["", f"**Answer: {values[0]}**"]
    expressions = expressions_in(directive)
    if not used and expressions:
        lines += [
            f"- {e}: not computed, because no calculator was granted to this step"
            for e in expressions
        ]
    if outputs:
        lines += ["", "Inputs used:"] + _material_section(outputs, 400)
    if not used and not outputs and not expressions:
        lines += [f"Nothing to compute was given for: {sentence(directive.split(chr(10))[0])}"]
    return "\n".join(lines)


def _critic_answer(directive: str, outputs: Sequence[Output], used: Sequence[Used]) -> str:
    lines = [f"## Assessment: {topic_of(directive, outputs)}", ""]
    lines += [f"- {u.line()}" for u in used]
    if len(outputs) >= 2:
        counts = [terms_of(o.text) for o in outputs]
        shared = set.intersection(*(set(c) for c in counts))
        total = sum(counts, Counter())
        for output in outputs:
            points = points_of(output.text)
            lines += [f"### {output.title}", ""] + [f"- {p}" for p in points] + [""]
        lines += ["### Where they differ", ""]
        for output, terms in zip(outputs, counts, strict=True):
            own = top(set(terms) - shared, terms)
            lines.append(
                f"- Only in “{output.title}”: {', '.join(own) if own else 'nothing distinctive'}"
            )
        common = top(shared, total)
        lines.append(f"- Common ground: {', '.join(common) if common else 'none'}")
        sizes = [len(points_of(o.text, 50)) for o in outputs]
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
        points = points_of(text, 50)
        gaps = []
        if not re.search(r"\d", text):
            gaps.append("it gives no figures")
        if not URL.search(text) and not re.search(r"\bsource", text, re.I):
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


def _writer_answer(directive: str, outputs: Sequence[Output], used: Sequence[Used]) -> str:
    lines = [f"## {topic_of(directive, outputs)}", ""]
    if len(outputs) == 1:
        lines.append(digest(outputs[0].text, 3000))
    elif outputs:
        lines += [
            f"This brings together {len(outputs)} inputs: {joined([o.title for o in outputs])}.",
            "",
        ]
        for output in outputs:
            lines += [f"### {output.title}", "", digest(output.text, 1500), ""]
        firsts = [p[0] for p in (points_of(o.text, 1) for o in outputs) if p]
        if firsts:
            lines += ["In short: " + " ".join(sentence(f) for f in firsts)]
    else:
        lines.append(
            f"{sentence(directive.split(chr(10))[0])} No material was given to this step, and "
            "working offline I add no facts of my own."
        )
    effects = [u.line() for u in used]
    if effects:
        lines += ["", "---", ""] + [f"- {line}" for line in effects]
    return "\n".join(lines).strip()


ANSWERS = {
    "researcher": researcher_answer,
    "coder": _coder_answer,
    "critic": _critic_answer,
    "writer": _writer_answer,
}


def tool_rounds(messages: Sequence[Message]) -> list[Used]:
    """Every tool result in the conversation, paired with the call that asked for it."""
    calls: dict[str, Any] = {}
    used: list[Used] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            calls[field(call, "id", "")] = call
        for result in message.get("results") or []:
            call = calls.get(field(result, "tool_call_id", ""))
            used.append(
                Used(
                    name=field(call, "name", "tool") if call is not None else "tool",
                    arguments=dict(field(call, "arguments", {}) or {}) if call is not None else {},
                    content=str(field(result, "content", "")),
                    is_error=bool(field(result, "is_error", False)),
                )
            )
    return used
