"""The executor: a small tool-calling loop with a clean context per step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from planner_ui.core.errors import StepFailed, ToolError
from planner_ui.providers.base import ModelRequest, Provider, ToolResult, Usage
from planner_ui.tools import REGISTRY, ToolContext

from .prompts import executor_message, executor_system

# The callback receives (event type, payload); services persist and stream it.
EventSink = Callable[[str, dict[str, Any]], None]

MAX_TOOL_RESULT_CHARS = 20_000


class LiveText(Protocol):
    """Where the text of one model call goes while it is written (see services.streaming)."""

    def write(self, piece: str) -> None: ...

    def flush(self) -> None: ...


# Makes the LiveText of the n-th model call of a step.
LiveTextFactory = Callable[[int], LiveText]


@dataclass
class StepSpec:
    step_id: str
    title: str
    instruction: str
    role: str
    tools: list[str]


@dataclass
class StepOutcome:
    output: str
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0


def stop_reason_failure(stop_reason: str, text: str, who: str = "the model") -> str:
    """Why a reply with this stop reason cannot be used, or "" when it can."""
    if stop_reason == "refusal":
        quoted = text.strip()[:500]
        return f"{who} refused: {quoted}" if quoted else f"{who} refused"
    if stop_reason == "max_tokens":
        return f"{who}'s answer was cut off at its max_tokens limit"
    if stop_reason == "model_context_window_exceeded":
        return (
            f"{who} ran out of context window: the step's instruction, context and tool "
            "results are longer than the model can read"
        )
    return ""


def run_step(
    provider: Provider,
    step: StepSpec,
    context: Sequence[tuple[str, str, str]],
    tool_ctx: ToolContext,
    on_event: EventSink,
    *,
    max_iterations: int = 8,
    live_text: LiveTextFactory | None = None,
) -> StepOutcome:
    """Run one step to its final answer; raise StepFailed with the reason otherwise.

    Only the step's granted tools are offered, and a call to any other tool is answered with
    an error result instead of being run: the grant is enforced here, not trusted to the model.
    """
    granted = {name: REGISTRY[name] for name in step.tools if name in REGISTRY}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": executor_message(step.instruction, context)}
    ]
    outcome = StepOutcome(output="")
    for iteration in range(1, max_iterations + 1):
        live = live_text(iteration) if live_text is not None else None
        try:
            reply = provider.complete(
                ModelRequest(
                    system=executor_system(step.role),
                    messages=list(messages),
                    tools=[tool.spec() for tool in granted.values()],
                    purpose=f"executor:{step.role}",
                ),
                on_text=live.write if live is not None else None,
            )
        finally:
            if live is not None:
                live.flush()
        outcome.model_calls += 1
        outcome.usage = outcome.usage + reply.usage
        if reply.stop_reason in ("refusal", "model_context_window_exceeded"):
            raise StepFailed(stop_reason_failure(reply.stop_reason, reply.text))
        if not reply.tool_calls:
            if failure := stop_reason_failure(reply.stop_reason, reply.text):
                raise StepFailed(failure)
            outcome.output = reply.text.strip()
            if not outcome.output:
                raise StepFailed("the model finished without any output")
            return outcome
        messages.append(
            {"role": "assistant", "content": reply.text, "tool_calls": list(reply.tool_calls)}
        )
        results = []
        for call in reply.tool_calls:
            outcome.tool_calls += 1
            on_event(
                "step.tool_call",
                {"call_id": call.id, "tool": call.name, "arguments": call.arguments},
            )
            tool = granted.get(call.name)
            if call.parse_error:
                content, is_error = f"{call.name} was not run: {call.parse_error}", True
            elif tool is None:
                content = (
                    f"tool '{call.name}' is not granted to this step; "
                    f"granted tools: {', '.join(granted) or 'none'}"
                )
                is_error = True
            else:
                try:
                    content, is_error = tool.call(call.arguments, tool_ctx), False
                except ToolError as exc:
                    content, is_error = str(exc), True
                except Exception as exc:  # a tool's own bug must not crash the step
                    content, is_error = f"{call.name} failed: {type(exc).__name__}: {exc}", True
            if len(content) > MAX_TOOL_RESULT_CHARS:
                content = content[:MAX_TOOL_RESULT_CHARS] + "\n[truncated]"
            on_event(
                "step.tool_result",
                {"call_id": call.id, "tool": call.name, "content": content, "is_error": is_error},
            )
            results.append(ToolResult(call.id, content, is_error))
        messages.append({"role": "tool", "results": results})
    raise StepFailed(
        f"the step reached its cap of {max_iterations} model calls without a final answer"
    )
