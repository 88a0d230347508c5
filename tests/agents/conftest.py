"""A scripted fake model for the agents: it answers with a fixed sequence of replies and keeps
every request it was sent, so tests can assert what the agent asked as well as what it did."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from planner_ui.providers.base import (
    ModelReply,
    ModelRequest,
    Provider,
    TextSink,
    ToolCall,
    Usage,
)
from planner_ui.tools import ToolContext

# Frozen, so one instance can be every reply's default.
DEFAULT_USAGE = Usage(input_tokens=100, output_tokens=20)


class ScriptedProvider(Provider):
    name = "scripted"

    def __init__(self, replies: Iterable[ModelReply], model: str = "scripted-1") -> None:
        super().__init__(model)
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(
                f"the script has no reply left for request {len(self.requests)} "
                f"(purpose {request.purpose!r})"
            )
        answer = self.replies.pop(0)
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer


def reply(
    text: str = "",
    *tool_calls: ToolCall,
    stop_reason: str | None = None,
    usage: Usage = DEFAULT_USAGE,
    model: str = "scripted-1",
) -> ModelReply:
    """A model reply; the stop reason follows from whether it calls tools unless given."""
    if stop_reason is None:
        stop_reason = "tool_use" if tool_calls else "end_turn"
    return ModelReply(
        text=text, tool_calls=list(tool_calls), stop_reason=stop_reason, usage=usage, model=model
    )


class RecordingLiveText:
    """A LiveText that keeps what it was given, to check what a watcher would have seen."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.flushes = 0

    def write(self, piece: str) -> None:
        self.pieces.append(piece)

    def flush(self) -> None:
        self.flushes += 1


@pytest.fixture
def tool_ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(run_id=1, step_id="step", workspace=tmp_path / "workspace")
