"""The synthesizer: one call that turns the step outputs into the deliverable."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from planner_ui.core.errors import StepFailed
from planner_ui.core.grounding import figures, unsupported_figures
from planner_ui.core.messages import ModelRequest, Usage
from planner_ui.core.prompt_contract import echoes_scaffolding, output_block, unwrapped
from planner_ui.core.text_calls import description_examples, echoed_example, is_call_shaped
from planner_ui.providers.base import Provider
from planner_ui.tools import REGISTRY

from .executor import LiveText, StepOutcome, stop_reason_failure
from .prompts import SYNTHESIZER_SYSTEM, task_block

MAX_ATTEMPTS = 2
ECHO_CORRECTION = (
    "Your reply repeated the request's <task> and <output> tags instead of writing the "
    "deliverable. Write only the deliverable itself, as Markdown, without any of those tags."
)
ECHO_FAILURE = (
    "the synthesizer wrote the prompt's <task>/<output> structure back instead of a "
    "deliverable, twice"
)
# The problem of a reply that wrote the prompt's blocks back: it has its own words for both.
SCAFFOLDING = "the prompt's own blocks written back"
# A deliverable this short that holds a tool description's example is taken for a copy of it.
_ECHO_MAX_CHARS = 300
# The reply asked for after an echo of the prompt's blocks is held to this (a grammar, where the
# server has one): Qwen2.5-Coder-1.5B wrote the prompt's layout back, tags and all, twice over
# (seed 99 of the opt-in run), while its answers held to {"answer": …} as an executor never did.
DELIVERABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"deliverable": {"type": "string", "maxLength": 20_000}},
    "required": ["deliverable"],
}


DELIVERABLE_FORM = 'Reply with one JSON object: {"deliverable": "<the deliverable, as Markdown>"}.'


def _read_deliverable(text: str) -> str:
    """The deliverable of a reply held to DELIVERABLE_SCHEMA; the text as it is when it is no
    such JSON (a server that holds nothing to a schema), for the checks to judge."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text
    deliverable = data.get("deliverable") if isinstance(data, dict) else None
    return deliverable if isinstance(deliverable, str) else text


def not_a_deliverable(text: str, task: str, outputs: Sequence[tuple[str, str, str]]) -> str:
    """Why a reply is not a deliverable ("" when it may be one): the prompt written back, a
    tool call written as text (the synthesizer calls no tools), or a tool's example copied."""
    if echoes_scaffolding(text, task):
        return SCAFFOLDING
    if is_call_shaped(text, REGISTRY):
        return (
            "it is a tool call written as text, not a deliverable (the synthesizer calls no "
            "tools: the steps did, and their outputs are all there is)"
        )
    given = "\n".join([task, *(output for _, _, output in outputs)])
    if len(text.strip()) <= _ECHO_MAX_CHARS:
        for name, tool in REGISTRY.items():
            spec = tool.spec()
            shown = description_examples(spec.description, spec.input_schema)
            if example := echoed_example(text, shown, given):
                return (
                    f"it repeats {example!r}, the example from the {name} tool's description, "
                    "which neither the task nor the step outputs hold"
                )
    return ""


def ungrounded(text: str, task: str, outputs: Sequence[tuple[str, str, str]]) -> str:
    """Why a deliverable's figures are in doubt ("" when every one is in the material): the
    numbers it states that neither the task nor any step output holds."""
    invented = unsupported_figures(text, [task, *(output for _, _, output in outputs)])
    if not invented:
        return ""
    listed = ", ".join(invented[:5]) + (" …" if len(invented) > 5 else "")
    return f"it states {listed}, which neither the task nor any step output holds"


def synthesize(
    provider: Provider,
    task: str,
    outputs: Sequence[tuple[str, str, str]],
    live: LiveText | None = None,
) -> StepOutcome:
    blocks = "\n".join(output_block(step_id, title, text) for step_id, title, text in outputs)
    request = ModelRequest(
        system=SYNTHESIZER_SYSTEM,
        messages=[
            {
                "role": "user",
                "content": f"{task_block(task)}\n\nStep outputs, in plan order:\n{blocks}",
            }
        ],
        purpose="synthesizer",
        max_tokens=8192,
    )
    usage, calls = Usage(), 0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            reply = provider.complete(request, on_text=live.write if live is not None else None)
        finally:
            if live is not None:
                live.flush()
        usage, calls = usage + reply.usage, calls + 1
        if failure := stop_reason_failure(reply.stop_reason, reply.text, "the synthesizer"):
            raise StepFailed(failure)
        if not reply.text.strip():
            raise StepFailed(f"the synthesizer produced no deliverable ({reply.stop_reason})")
        held = request.output_schema is not None
        text = unwrapped((_read_deliverable(reply.text) if held else reply.text).strip())
        problem = not_a_deliverable(text, task, outputs)
        doubt = "" if problem else ungrounded(text, task, outputs)
        if not problem and (not doubt or attempt == MAX_ATTEMPTS):
            # A figure still unaccounted for after a second look may be the model's own sum:
            # the deliverable stands, and the run says what is in doubt.
            warnings = [f"the deliverable's figures are in doubt: {doubt}"] if doubt else []
            return StepOutcome(output=text, usage=usage, model_calls=calls, warnings=warnings)
        problem = problem or doubt
        if attempt < MAX_ATTEMPTS:
            # Once more, told what went wrong.
            request = dataclasses.replace(
                request,
                messages=[
                    *request.messages,
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": _correction(problem, _stated(outputs))},
                ],
                output_schema=DELIVERABLE_SCHEMA if problem == SCAFFOLDING else None,
            )
    if problem == SCAFFOLDING:
        raise StepFailed(ECHO_FAILURE)
    raise StepFailed(f"the synthesizer's reply was not a deliverable, twice: {problem}")


def _correction(problem: str, stated: str = "") -> str:
    if problem == SCAFFOLDING:
        return f"{ECHO_CORRECTION} {DELIVERABLE_FORM}"
    if problem.startswith("it states "):
        return (
            f"Check your figures: {problem}. Take every number from the step outputs as they "
            "state it, or say how it follows from them; write the corrected deliverable."
            + (f" The step outputs state: {stated}." if stated else "")
        )
    return (
        f"Your reply is not the deliverable: {problem}. Write the deliverable itself from the "
        "step outputs, as Markdown."
    )


def _stated(outputs: Sequence[tuple[str, str, str]]) -> str:
    """The figures the step outputs state, for a model told its own are not among them (a
    1.5B model wrote 300 again when only told to check; the outputs said 375)."""
    values = dict.fromkeys(v for _, _, output in outputs for v in figures(output))
    return ", ".join(list(values)[:12])
