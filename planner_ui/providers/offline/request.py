"""Reading a request: the blocks the prompts write, the outputs of earlier steps, the tools."""

from __future__ import annotations

import re
from typing import Any

from ..base import (
    ModelRequest,
    ProviderError,
)

DEFAULT_MODEL = "offline-v1"

# The order in which tools are granted and called, so plans and replies are stable.
TOOL_ORDER = (
    "calculator",
    "fetch_url",
    "read_file",
    "list_files",
    "write_file",
    "shell",
    "delete_file",
    "send_email",
    "http_post",
)
# Tools that act on the world rather than gather material: a step that gathers should run
# before the step that saves or sends, so the effect can carry what was gathered.
EFFECT_TOOLS = frozenset({"write_file", "send_email", "http_post", "shell", "delete_file"})

# Sections the planner appends to an instruction for a real model's benefit. The offline
# executor acts only on the directive above them, so the overall task's URLs, addresses and
# expressions do not leak into every step.
SECTION_BREAK = re.compile(r"\n\s*\n(?:Inputs|Background|Context):")

# Together these stay under the schema's 4000-character instruction limit.
MAX_DIRECTIVE_CHARS = 2200
MAX_INPUTS_CHARS = 500
MAX_BACKGROUND_CHARS = 400
MAX_CONTEXT_CHARS = 600
MAX_EMAIL_BODY_CHARS = 19_000


# --- request parsing --------------------------------------------------------------------------


def tool_names(block: str) -> list[str]:
    """Names from lines of 'name: description'."""
    names = []
    for line in block.splitlines():
        name = line.strip().lstrip("-*• ").split(":", 1)[0].strip()
        if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and name not in names:
            names.append(name)
    return names


def first_user_text(request: ModelRequest, part: str) -> str:
    if not request.messages:
        raise ProviderError(f"offline {part}: the request has no messages")
    content = request.messages[0].get("content")
    if not isinstance(content, str):
        raise ProviderError(f"offline {part}: the first message must have text content")
    return content


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Read a ToolCall/ToolResult attribute, or the same key when a caller passed a dict."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)
