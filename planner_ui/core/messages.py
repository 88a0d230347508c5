"""What goes to a model and comes back, in a neutral shape no vendor owns.

Messages:

    {"role": "user", "content": "text"}
    {"role": "assistant", "content": "text", "tool_calls": [ToolCall, ...]}
    {"role": "tool", "results": [ToolResult, ...]}

Providers map these to and from their wire formats privately; agents, tools, accounting and
estimates use only these types.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]

# Receives a reply's text piece by piece while the model writes it (streaming providers).
TextSink = Callable[[str], None]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments could not be read (e.g. malformed JSON from a small local
    # model): the executor answers with this error instead of running the tool.
    parse_error: str = ""


@dataclass(frozen=True)
class ToolResult:
    tool_call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Usage:
    """A call's tokens (or a sum of calls'). `input_tokens` counts every prompt token, cached or
    not; the cache figures are parts of it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    # When set, the reply's text must be one JSON document matching this schema.
    output_schema: dict[str, Any] | None = None
    # Who is asking: "planner", "executor:<role>" or "synthesizer". Used for routing and
    # accounting; the offline provider also uses it to know which part to play.
    purpose: str = "executor"
    max_tokens: int = 4096
    # "auto": the model may call the tools or answer; "none": it must answer now. The tools
    # stay declared, since a history holding calls needs them (Anthropic refuses it otherwise).
    tool_choice: str = "auto"
    # The tools one of which the reply must call, where the server can hold it to that (a
    # grammar, a named tool_choice); empty: no such hold. The tools above stay declared.
    required_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelReply:
    text: str
    tool_calls: list[ToolCall]
    stop_reason: str  # end_turn, tool_use, max_tokens, refusal, ...
    usage: Usage
    model: str
    # On a route with a tool mode (providers.openai_compat): how its model is asked for tool
    # calls after this reply, "native" or "prompted" ("auto" switches); "" elsewhere.
    tool_mode: str = ""


# A token is about four characters of English prose; code, JSON and numbers take more tokens a
# character. Three is the side a budget errs on: it sizes what is left for an answer.
CHARS_PER_TOKEN_ESTIMATE = 3


def message_chars(message: Message) -> int:
    """The characters a message sends: its text, its tool calls' arguments, its results."""
    chars = len(message["content"]) if isinstance(message.get("content"), str) else 0
    for call in message.get("tool_calls") or []:
        arguments = call.get("arguments", {}) if isinstance(call, dict) else call.arguments
        chars += len(json.dumps(arguments, ensure_ascii=False))
    for result in message.get("results") or []:
        chars += len(str(result.get("content", "") if isinstance(result, dict) else result.content))
    return chars


def input_tokens_estimate(request: ModelRequest) -> int:
    """About how many tokens `request` sends, before a vendor counts them: its system prompt,
    messages and tool declarations, at CHARS_PER_TOKEN_ESTIMATE characters a token."""
    chars = len(request.system) + sum(message_chars(m) for m in request.messages)
    for spec in request.tools:
        chars += len(spec.name) + len(spec.description) + len(json.dumps(spec.input_schema))
    if request.output_schema is not None:
        chars += len(json.dumps(request.output_schema))
    return math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE)
