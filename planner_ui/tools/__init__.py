"""The tool registry: every tool an executor can be granted, by name."""

from __future__ import annotations

from .base import Tool, ToolContext
from .calculator import Calculator
from .delete_file import DeleteFile
from .email import SendEmail
from .fetch import FetchUrl
from .files import ListFiles, ReadFile, WriteFile
from .http_post import HttpPost
from .shell import Shell

__all__ = ["REGISTRY", "Tool", "ToolContext", "get_tool", "tool_names"]

REGISTRY: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Calculator(),
        ReadFile(),
        WriteFile(),
        ListFiles(),
        DeleteFile(),
        FetchUrl(),
        HttpPost(),
        SendEmail(),
        Shell(),
    )
}


def tool_names() -> list[str]:
    return sorted(REGISTRY)


def get_tool(name: str) -> Tool:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown tool '{name}'; known tools: {', '.join(tool_names())}") from None
