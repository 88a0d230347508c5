"""Synthesizing: the deliverable assembled from the outputs of the plan."""

from __future__ import annotations

import re
from collections.abc import Sequence

from planner_ui.core.prompt_contract import Output

from .compose import points_of
from .planning import excerpt_keep_lines
from .reading import enumeration_of, sentences_of, strip_markers
from .words import excerpt, joined, sentence, title_of

# --- the synthesizer ------------------------------------------------------------------------------


def deliverable(task: str, outputs: Sequence[Output]) -> str:
    items, before, _ = enumeration_of(task)
    first = before.splitlines()[0] if before else (items[0] if items else task)
    heading = title_of(strip_markers(sentences_of(first)[0] if sentences_of(first) else first))
    lines = [f"# {excerpt(heading, 100)}", ""]
    if not outputs:
        lines += ["No step produced an output, so there is nothing to assemble yet."]
        return "\n".join(lines)
    for output in outputs:
        body = output.text.strip()
        # The section heading is ours; a step's own top heading would repeat it.
        body = re.sub(r"\A#{1,6}\s+[^\n]*\n+", "", body) if body.startswith("#") else body
        body = re.sub(r"(?m)^#{1,2}(?=\s)", "###", body)
        lines += [f"## {output.title}", "", excerpt_keep_lines(body, 6000) or "(no output)", ""]
    last = points_of(outputs[-1].text, 1)
    lines += [
        "## Conclusion",
        "",
        f"This brings together {len(outputs)} step result(s): "
        f"{joined([o.title for o in outputs])}."
        + (f" The last step concluded: {sentence(last[0])}" if last else ""),
    ]
    return "\n".join(lines)
