"""Judging: an evaluation's judge, deterministic. It passes a deliverable when every phrase the
rubric quotes ("…" or “…”) is in the deliverable or one of the files shown, whatever else the
rubric or the deliverable says; a rubric that quotes nothing gives it nothing to look for."""

from __future__ import annotations

import json
import re

from planner_ui.core.prompt_contract import Block, raw_block, read_block, read_outputs

_QUOTED = re.compile(r'"([^"\n]+)"|“([^”\n]+)”')


def required_phrases(rubric: str) -> list[str]:
    return [a or b for a, b in _QUOTED.findall(rubric)]


def judge_answer(content: str) -> str:
    """The verdict as the judge is asked to give it: one JSON object, verdict and reason."""
    rubric = read_block(content, Block.RUBRIC) or ""
    # Parsed before unescaping, so a deliverable quoting '</output>' cannot end its block.
    outputs = read_outputs(raw_block(content, Block.OUTPUTS) or "")
    phrases = required_phrases(rubric)
    if not phrases:
        verdict, reason = (
            "fail",
            "The rubric quotes no phrase; the offline judge passes only on quoted phrases.",
        )
    else:
        material = "\n".join(output.text for output in outputs).casefold()
        missing = [phrase for phrase in phrases if phrase.casefold() not in material]
        if missing:
            verdict = "fail"
            reason = "Missing: " + ", ".join(json.dumps(p, ensure_ascii=False) for p in missing)
        else:
            verdict = "pass"
            reason = "It has " + ", ".join(json.dumps(p, ensure_ascii=False) for p in phrases)
    return json.dumps({"verdict": verdict, "reason": reason + "."}, ensure_ascii=False)
