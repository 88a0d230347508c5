"""The synthesizer: one call that turns the step outputs into the deliverable."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from planner_ui.core.errors import StepFailed
from planner_ui.core.messages import ModelRequest, Usage
from planner_ui.core.prompt_contract import echoes_scaffolding
from planner_ui.providers.base import Provider

from .executor import LiveText, StepOutcome, stop_reason_failure
from .prompts import SYNTHESIZER_SYSTEM, output_block, task_block

MAX_ATTEMPTS = 2
ECHO_CORRECTION = (
    "Your reply repeated the request's <task> and <output> tags instead of writing the "
    "deliverable. Write only the deliverable itself, as Markdown, without any of those tags."
)


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
        if not echoes_scaffolding(reply.text, task):
            return StepOutcome(output=reply.text.strip(), usage=usage, model_calls=calls)
        if attempt < MAX_ATTEMPTS:
            # Once more, told what went wrong: the prompt's structure came back, not a deliverable.
            request = dataclasses.replace(
                request,
                messages=[
                    *request.messages,
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": ECHO_CORRECTION},
                ],
            )
    raise StepFailed(
        "the synthesizer wrote the prompt's <task>/<output> structure back instead of a "
        "deliverable, twice"
    )
