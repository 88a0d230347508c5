"""The synthesizer: one call that turns the step outputs into the deliverable."""

from __future__ import annotations

from collections.abc import Sequence

from planner_ui.core.errors import StepFailed
from planner_ui.core.messages import ModelRequest
from planner_ui.providers.base import Provider

from .executor import LiveText, StepOutcome, stop_reason_failure
from .prompts import SYNTHESIZER_SYSTEM, output_block, task_block


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
    try:
        reply = provider.complete(request, on_text=live.write if live is not None else None)
    finally:
        if live is not None:
            live.flush()
    if failure := stop_reason_failure(reply.stop_reason, reply.text, "the synthesizer"):
        raise StepFailed(failure)
    if not reply.text.strip():
        raise StepFailed(f"the synthesizer produced no deliverable ({reply.stop_reason})")
    return StepOutcome(output=reply.text.strip(), usage=reply.usage, model_calls=1)
