"""A provider that replies from a script: exactly the replies a test queued, in order.

For tests that need a model's exact words (a plan with these steps, a tool call with these
arguments, a failure) without depending on what the offline model's heuristics happen to write.
Route a run to it with "scripted:<name>" after `script("<name>")` has queued its replies; the
script records every request it answered.

    script("tea").plan({"goal": ..., "steps": [...]}).tool_call("calculator", {...}).text("42")
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .base import ModelReply, ModelRequest, Provider, ProviderError, TextSink, ToolCall, Usage

DEFAULT_USAGE = Usage(input_tokens=100, output_tokens=20)


@dataclass
class Script:
    name: str
    replies: deque[ModelReply] = field(default_factory=deque)
    requests: list[ModelRequest] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def text(self, text: str, *, usage: Usage = DEFAULT_USAGE, stop: str = "end_turn") -> Script:
        """A reply of plain text (a step's answer, a deliverable)."""
        self.replies.append(ModelReply(text, [], stop, usage, f"scripted-{self.name}"))
        return self

    def plan(self, plan: dict[str, Any], *, usage: Usage = DEFAULT_USAGE) -> Script:
        """A planner's reply: the plan as one JSON document."""
        return self.text(json.dumps(plan), usage=usage)

    def tool_call(
        self, name: str, arguments: dict[str, Any], *, text: str = "", usage: Usage = DEFAULT_USAGE
    ) -> Script:
        """A reply asking for one tool call."""
        call = ToolCall(f"call-{next(self._ids)}", name, arguments)
        self.replies.append(ModelReply(text, [call], "tool_use", usage, f"scripted-{self.name}"))
        return self


_SCRIPTS: dict[str, Script] = {}


def script(name: str) -> Script:
    """A new, empty script under `name` (replacing any earlier one of that name)."""
    _SCRIPTS[name] = Script(name)
    return _SCRIPTS[name]


class ScriptedProvider(Provider):
    name = "scripted"

    def __init__(self, model: str, script_: Script | None = None) -> None:
        super().__init__(model)
        found = script_ or _SCRIPTS.get(model)
        if found is None:
            raise ProviderError(
                f"No script named {model!r}: queue its replies with "
                f"planner_ui.providers.scripted.script({model!r}) first."
            )
        self.script = found

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        self.script.requests.append(request)
        if not self.script.replies:
            raise ProviderError(
                f"The script {self.model!r} has no reply left for the {request.purpose} "
                f"(request {len(self.script.requests)}): queue one more."
            )
        reply = self.script.replies.popleft()
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply
