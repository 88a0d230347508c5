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
    _digest,
    _document,
    _email_body,
    _email_subject,
    _points,
    _terms,
    _top,
    _topic,
    _Used,
)
from .detect import (
    _LIST_INTENT,
    _POST_INTENT,
    _SAVE_INTENT,
    _URL,
    _deleted_files,
    _emails,
    _expressions,
    _file_mentions,
    _mask,
    _shell_commands,
    _urls,
)
from .request import _field
from .words import _collapse, _excerpt, _joined, _sentence, _slug


def _file_path(directive: str) -> str:
    written = [path for path, intent in _file_mentions(directive) if intent == "write"]
    return written[0] if written else _slug(directive, 3) + ".md"


def _planned_calls(
    directive: str, outputs: Sequence[Output], granted: set[str]
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


def _material_section(outputs: Sequence[Output], limit: int) -> list[str]:
    return [f"- From “{o.title}”: {_excerpt(_digest(o.text, limit), limit)}" for o in outputs]


def _researcher_answer(directive: str, outputs: Sequence[Output], used: Sequence[_Used]) -> str:
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


def _coder_answer(directive: str, outputs: Sequence[Output], used: Sequence[_Used]) -> str:
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


def _critic_answer(directive: str, outputs: Sequence[Output], used: Sequence[_Used]) -> str:
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


def _writer_answer(directive: str, outputs: Sequence[Output], used: Sequence[_Used]) -> str:
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
