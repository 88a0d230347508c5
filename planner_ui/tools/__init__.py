"""The tool registry: every tool an executor can be granted, by name.

The command tools (`shell`, `python`) are in it only where they can run as AGENTSITE_SHELL says
(tools.sandbox): COMMANDS tells how they run, or why they are not offered.
"""

from __future__ import annotations

from .base import Tool, ToolContext
from .calculator import Calculator
from .delete_file import DeleteFile
from .email import SendEmail
from .fetch import FetchUrl
from .files import ListFiles, ReadFile, WriteFile
from .http_post import HttpPost
from .python_code import PythonCode
from .sandbox import Commands, commands_from_environment
from .shell import Shell

__all__ = ["COMMANDS", "REGISTRY", "Tool", "ToolContext", "get_tool", "registry", "tool_names"]


def registry(commands: Commands) -> dict[str, Tool]:
    """Every built-in tool, with the command tools only where `commands` offers them."""
    tools: list[Tool] = [
        Calculator(),
        ReadFile(),
        WriteFile(),
        ListFiles(),
        DeleteFile(),
        FetchUrl(),
        HttpPost(),
        SendEmail(),
    ]
    if commands.confinement is not None:
        tools += [Shell(commands.confinement), PythonCode(commands.confinement)]
    return {tool.name: tool for tool in tools}


# Decided once per process, at import: a probe starts one real sandbox (about 10 ms).
COMMANDS = commands_from_environment()
REGISTRY: dict[str, Tool] = registry(COMMANDS)


def tool_names() -> list[str]:
    return sorted(REGISTRY)


def get_tool(name: str) -> Tool:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown tool '{name}'; known tools: {', '.join(tool_names())}") from None
