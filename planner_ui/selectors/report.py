"""A run's report, to download and keep: the task, every plan version, each step's output,
tool calls, approvals and receipts, tokens, cost and timing. One dict (the JSON download and
the API), and the same as Markdown and as an HTML page.

Most of a report is untrusted text (the task, model output, tool results): the Markdown is made
inert for any viewer and the HTML is sanitized like the run page, so opening a report fetches
nothing and runs nothing."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from markdown_it import MarkdownIt

from planner_ui.core.events import EventType
from planner_ui.core.outcome import OUTCOME_LABELS, RunOutcome
from planner_ui.core.pricing import dollars
from planner_ui.models import Run
from planner_ui.rendering import markdown_inert, markdown_to_safe_html

from .run_json import run_json
from .step_record import step_record
from .timeline import run_timing


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def run_report(run: Run) -> dict[str, Any]:
    calls: dict[str, list[dict[str, Any]]] = {}
    for step_id, kind, payload, at in run.events.filter(
        type__in=[EventType.STEP_TOOL_CALL, EventType.STEP_TOOL_RESULT]
    ).values_list("step_id", "type", "payload", "created_at"):
        calls.setdefault(step_id, []).append({"type": kind, "at": _iso(at), **payload})
    report = run_json(run)
    # The whole of each step's record, where run_json gives its summary.
    report["steps"] = [
        {**step_record(s).model_dump(), "tool_calls": calls.get(s.step_id, [])}
        for s in run.steps.all()
    ]
    timing = run_timing(run)
    report.update(
        task=run.task,
        owner=run.owner.get_username(),
        created_at=_iso(run.created_at),
        started_at=_iso(run.started_at),
        finished_at=_iso(run.finished_at),
        # Active time, without the waits for a person, pauses and idle gaps (listed apart).
        active_s=round(timing.active_s, 3),
        elapsed_s=round(timing.elapsed_s, 3),
        gaps=[
            {"reason": g.reason, "seconds": round(g.seconds, 3), "start": _iso(g.start)}
            for g in timing.gaps
        ],
        plan_versions=[
            {
                "number": v.number,
                "author": v.author,
                "note": v.note,
                "created_at": _iso(v.created_at),
                "approved": v.pk == run.approved_plan_id,
                "plan": v.plan,
            }
            for v in run.plan_versions.all()
        ],
        approvals=[
            {
                "step": a.step_id,
                "tool": a.tool,
                "effect": a.effect,
                "arguments": a.arguments,
                "approved_arguments": a.approved_arguments,
                "state": a.state,
                "reason": a.reason,
                "decided_by": a.decided_by.get_username() if a.decided_by else None,
                "decided_at": _iso(a.decided_at),
            }
            for a in run.approvals.select_related("decided_by")
        ],
        receipts=[
            {
                "step": r.step_id,
                "tool": r.tool,
                "idempotency_key": r.idempotency_key,
                "decision": r.decision,
                "authorized_by": r.authorized_by,
                "state": r.state,
                "result": r.result,
                "started_at": _iso(r.started_at),
                "finished_at": _iso(r.finished_at),
            }
            for r in run.receipts.all()
        ],
        files=[
            {"path": f.path, "size": f.size, "sha256": f.sha256, "step": f.step_id}
            for f in run.files.defer("content")
        ],
    )
    return report


def report_markdown(report: dict[str, Any]) -> str:
    """The report for people: headings, the outputs as they were written (but inert: no raw
    HTML, images as links; their headings under the report's own, so the outline holds),
    figures in lists, and the deliverable once, at the end."""
    title = OUTCOME_LABELS.get(report["outcome"], report["status"].replace("_", " "))
    lines = [f"# Run {report['run_id']}: {title}", ""]
    if report["outcome_reason"] and report["outcome"] != RunOutcome.SUCCEEDED:
        lines += [f"**Outcome:** {report['outcome_reason']}", ""]
    lines += [
        "**Task:**",
        "",
        _quoted(report["task"]),
        "",
        f"- Owner: {report['owner']}",
        f"- Started: {report['started_at'] or '—'}; finished: {report['finished_at'] or '—'}"
        + (f" ({report['active_s']:.1f} s active)" if report["active_s"] else ""),
        f"- Model calls: {report['model_calls']}; tokens: {report['tokens']['input']:,} in, "
        f"{report['tokens']['output']:,} out; cost: {dollars(Decimal(report['cost_usd']), 4)}",
    ]
    if report["error"]:
        lines += ["", f"**What went wrong:** {_one_line(report['error'])}"]
    for warning in report["warnings"]:
        lines += ["", f"**Warning:** {_one_line(warning)}"]
    lines += ["", "## Plan versions", ""]
    for version in report["plan_versions"]:
        approved = ", approved" if version["approved"] else ""
        note = f": {_one_line(version['note'])}" if version["note"] else ""
        lines.append(f"- v{version['number']} by the {version['author']}{approved}{note}")
    lines += ["", "## Steps"]
    for step in report["steps"]:
        lines += [
            "",
            f"### {step['id']}: {_one_line(step['title'])} ({step['status']})",
            "",
            f"*{step['role']}*, tools: {', '.join(step['tools']) or 'none'}; "
            f"{step['model_calls']} model calls, {step['tokens']['input']:,} / "
            f"{step['tokens']['output']:,} tokens; {step['started_at'] or '—'} → "
            f"{step['finished_at'] or '—'}",
            "",
            _quoted(step["instruction"]),
        ]
        if step["tool_calls"]:
            lines.append("")
        for call in step["tool_calls"]:
            if call["type"] == EventType.STEP_TOOL_CALL:
                arguments = json.dumps(call["arguments"], ensure_ascii=False)
                lines.append(f"- → `{call['tool']}` {_code(arguments)}")
            else:
                lines.append(f"- ← {_one_line(call['content'][:300])}")
        if step["output"] and step["output"] == report["result"]:
            lines += ["", "*Its output is the deliverable, at the end of this report.*"]
        elif step["output"]:
            lines += ["", _embedded(step["output"], below=3)]
        if step["error"]:
            lines += ["", f"**Error:** {_one_line(step['error'])}"]
    if report["approvals"]:
        lines += ["", "## Approvals", ""]
        for a in report["approvals"]:
            by = f" by {a['decided_by']}" if a["decided_by"] else ""
            why = f": {_one_line(a['reason'])}" if a["reason"] else ""
            lines.append(f"- {a['step']}: `{a['tool']}` ({a['effect']}) {a['state']}{by}{why}")
    if report["receipts"]:
        lines += ["", "## Receipts of irreversible calls", ""]
        for r in report["receipts"]:
            lines.append(
                f"- {r['step']}: `{r['tool']}` {r['state']} ({r['decision']}, authorized by "
                f"{r['authorized_by']}), key `{r['idempotency_key']}`"
            )
    if report["files"]:
        lines += ["", "## Files", ""]
        lines += [f"- {f['path']} ({f['size']:,} bytes, by {f['step']})" for f in report["files"]]
    if report["result"]:
        lines += ["", "## Deliverable", "", _embedded(report["result"], below=2)]
    return markdown_inert("\n".join(lines)) + "\n"


# Reads a piece of Markdown as any CommonMark viewer would, to find its headings and fences.
_commonmark = MarkdownIt("commonmark", {"html": True})


def _embedded(text: str, *, below: int) -> str:
    """Markdown written on its own, made to sit under a heading of level `below`: its headings
    go down as many levels (at most to 6, written with #), and a fenced code block it left
    open is closed, so it neither breaks the report's outline nor swallows what follows."""
    lines = text.rstrip("\n").split("\n")
    folded: set[int] = set()  # a setext heading's other lines and underline, now one line
    closing = ""
    tokens = _commonmark.parse("\n".join(lines))
    for index, token in enumerate(tokens):
        # Only the outermost: a heading in a quote or a list is not part of the outline.
        if token.level != 0 or token.map is None:
            continue
        first, end = token.map
        if token.type == "heading_open":
            level = min(int(token.tag[1:]) + below, 6)
            lines[first] = f"{'#' * level} {' '.join(tokens[index + 1].content.split())}"
            folded.update(range(first + 1, end))
        elif token.type == "fence":
            last = lines[end - 1].strip() if end - 1 > first else ""
            if not (set(last) == {token.markup[0]} and len(last) >= len(token.markup)):
                closing = token.markup  # only the last fence can run to the end
    kept = [line for n, line in enumerate(lines) if n not in folded]
    return "\n".join([*kept, closing] if closing else kept)


def _quoted(text: str) -> str:
    # Inside a quote, a heading or a fence the text holds stays in the quote.
    return "\n".join(f"> {line}".rstrip() for line in text.strip("\n").split("\n"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    """`text` as an inline code span, however many backticks it holds."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# Opened from disk, the page has no server to send it a policy: it carries its own.
_REPORT_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<title>Run {run_id}</title>
<style>body {{ font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; \
padding: 0 1rem; }} pre {{ white-space: pre-wrap; }} blockquote {{ color: #555; }}</style>
</head>
<body>
{body}
</body>
</html>
"""
REPORT_PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'"


def report_html(report: dict[str, Any]) -> str:
    """The Markdown report as one self-contained page, sanitized like the run page."""
    return _REPORT_PAGE.format(
        policy=REPORT_PAGE_POLICY,
        run_id=int(report["run_id"]),
        body=markdown_to_safe_html(report_markdown(report)),
    )
