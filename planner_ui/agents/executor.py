"""The executor: a small tool-calling loop with a clean context per step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner_ui.core.errors import StepFailed, ToolError
from planner_ui.providers.base import ModelRequest, Provider, ToolResult, Usage
from planner_ui.tools import REGISTRY, ToolContext

from .prompts import executor_message, executor_system

# The callback receives (event type, payload); services persist and stream it.
EventSink = Callable[[str, dict[str, Any]], None]

MAX_TOOL_RESULT_CHARS = 20_000


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


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(a.input_tokens + b.input_tokens, a.output_tokens + b.output_tokens)


def run_step(
    provider: Provider,
    step: StepSpec,
    context: Sequence[tuple[str, str, str]],
    tool_ctx: ToolContext,
    on_event: EventSink,
    *,
    max_iterations: int = 8,
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
        reply = provider.complete(
            ModelRequest(
                system=executor_system(step.role),
                messages=list(messages),
                tools=[tool.spec() for tool in granted.values()],
                purpose=f"executor:{step.role}",
            )
        )
        outcome.model_calls += 1
        outcome.usage = _add(outcome.usage, reply.usage)
        on_event(
            "step.tokens",
            {
                "model": reply.model,
                "input_tokens": reply.usage.input_tokens,
                "output_tokens": reply.usage.output_tokens,
                "iteration": iteration,
            },
        )
        if reply.stop_reason == "refusal":
            raise StepFailed(f"the model refused the step: {reply.text[:500]}")
        if not reply.tool_calls:
            if reply.stop_reason == "max_tokens":
                raise StepFailed("the model's answer was cut off at its max_tokens limit")
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
            if tool is None:
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
