"""Helpers the provider tests share: a request with defaults, a calculator tool spec, a port
nothing listens on, and a sink that keeps streamed text."""

from __future__ import annotations

import socket
from typing import Any

from planner_ui.core.messages import ModelRequest, ToolSpec

CALCULATOR = ToolSpec(
    "calculator",
    "Do arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}},
)


def ask(**kwargs: Any) -> ModelRequest:
    kwargs.setdefault("system", "You are terse.")
    kwargs.setdefault("messages", [{"role": "user", "content": "Say hi"}])
    return ModelRequest(**kwargs)


class Pieces(list):
    """An on_text sink that keeps what it was given."""

    def __call__(self, text: str) -> None:
        self.append(text)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
