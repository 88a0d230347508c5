"""Synthesizing: the deliverable assembled from the outputs of the plan."""

from __future__ import annotations

import re
from collections.abc import Sequence

from planner_ui.core.prompt_contract import Output

from .compose import _points
from .planning import _excerpt_keep_lines
from .reading import _enumeration, _sentences, _strip_markers
from .words import _excerpt, _joined, _sentence, _title

# --- the synthesizer ------------------------------------------------------------------------------


def _deliverable(task: str, outputs: Sequence[Output]) -> str:
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
