"""The one small interface every model provider implements.

The message, request and reply types live in planner_ui.core.messages; they are re-exported here
so that a provider file needs one import.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from planner_ui.core.errors import ProviderError
from planner_ui.core.messages import (
    Message,
    ModelReply,
    ModelRequest,
    TextSink,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    input_tokens_estimate,
)

__all__ = [
    "Message",
    "ModelReply",
    "ModelRequest",
    "Provider",
    "ProviderError",
    "ToolCall",
    "ToolResult",
    "TextSink",
    "ToolSpec",
    "Usage",
]


class Provider(ABC):
    """A model behind one method. Subclasses map to and from their vendor's format privately."""

    name: str = "provider"

    def __init__(self, model: str) -> None:
        self.model = model

    @property
    def label(self) -> str:
        """How the run page names this model, e.g. 'anthropic:claude-sonnet-5-5'."""
        return f"{self.name}:{self.model}"

    def carry_tool_mode(self, mode: str) -> None:
        """Start in `mode`, the tool mode an earlier call of this route switched to (a route
        in "auto" mode that needed prompting once keeps it for the rest of its run). Only
        providers with tool modes have anything to carry."""
        return None  # the others ask for tools one way only

    def input_tokens(self, request: ModelRequest, *, counted: bool = False) -> int:
        """About how many tokens sending `request` costs, before the vendor counts them: what a
        budget leaves for the answer is what is left after this (core.messages' estimate,
        which errs on the high side; a provider that knows its count says it). `counted`: the
        vendor's own count where it gives one, asked for near a budget's end."""
        return input_tokens_estimate(request)

    @abstractmethod
    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        """Send one request and return the reply; raise ProviderError on any vendor failure.

        A provider that streams passes the reply's text to `on_text` as it arrives; the
        returned reply holds all of it either way.
        """
