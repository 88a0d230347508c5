"""An executor's state between two moments of its loop, as JSON a database can keep.

The loop saves it after every model reply and every tool result, so a step can stop — to wait
for a person's approval, or because its worker died — and carry on later from where it was,
without asking the model again and so with the same tool calls (and idempotency keys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner_ui.core.messages import Message, ToolCall, ToolResult, Usage


@dataclass
class Checkpoint:
    messages: list[Message]
    # Results so far for the tool calls of the last assistant turn, in call order.
    results: list[ToolResult] = field(default_factory=list)
    iteration: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)

    @property
    def pending_calls(self) -> list[ToolCall]:
        """The calls of the last assistant turn that have no result yet."""
        last = self.messages[-1] if self.messages else {}
        if last.get("role") != "assistant":
            return []
        calls = last.get("tool_calls") or []
        return list(calls[len(self.results) :])

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": [_message_to_json(m) for m in self.messages],
            "results": [_result_to_json(r) for r in self.results],
            "iteration": self.iteration,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "usage": [
                self.usage.input_tokens,
                self.usage.output_tokens,
                self.usage.cache_read_tokens,
                self.usage.cache_write_tokens,
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            messages=[_message_from_json(m) for m in data["messages"]],
            results=[ToolResult(**r) for r in data.get("results", [])],
            iteration=data.get("iteration", 0),
            model_calls=data.get("model_calls", 0),
            tool_calls=data.get("tool_calls", 0),
            usage=Usage(*data.get("usage", [])),
        )


def _message_to_json(message: Message) -> dict[str, Any]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "parse_error": c.parse_error}
            for c in out["tool_calls"]
        ]
    if "results" in out:
        out["results"] = [_result_to_json(r) for r in out["results"]]
    return out


def _message_from_json(data: dict[str, Any]) -> Message:
    out = dict(data)
    if "tool_calls" in out:
        out["tool_calls"] = [ToolCall(**c) for c in out["tool_calls"]]
    if "results" in out:
        out["results"] = [ToolResult(**r) for r in out["results"]]
    return out


def _result_to_json(result: ToolResult) -> dict[str, Any]:
    return {
        "tool_call_id": result.tool_call_id,
        "content": result.content,
        "is_error": result.is_error,
    }
