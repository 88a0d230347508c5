"""Tools that live on an MCP (Model Context Protocol) server, reached with the official `mcp`
SDK as the client: over stdio (a command this machine starts) or streamable HTTP (a URL).

An McpTool is a Tool like the built-in ones, with the name, description, schema and effect
pinned when its server was registered: the executor's runner gates it on that effect, and it
checks its arguments against the pinned schema before anything is sent. Each call opens its
own session (a stdio server is started for the call and stopped after it), so nothing is
shared between steps, workers or machines.

A server that does not start, drops the connection or does not answer in time makes the call
raise ToolUnavailable (the step fails with that reason); a tool that answers with an error is
an error result the model reads, like any other tool's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import jsonschema

from planner_ui.core.effects import IRREVERSIBLE_EFFECTS, Effect
from planner_ui.core.errors import ToolError, ToolUnavailable
from planner_ui.core.messages import ToolSpec

from .base import Tool, ToolContext
from .netpolicy import check_url

DEFAULT_TIMEOUT_S = 30.0
# Text a tool returns that is longer than this is cut: it goes into a model's context.
MAX_RESULT_CHARS = 20_000
T = TypeVar("T")


@dataclass(frozen=True)
class McpEndpoint:
    """Where a server is: a command (stdio) or a URL (streamable HTTP)."""

    name: str
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] = ()
    url: str = ""
    # Extra variables for a stdio server, over the SDK's own safe few (HOME, PATH, USER, ...).
    env: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class McpToolInfo:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """What is pinned: a change of description or schema changes it."""
        text = json.dumps([self.description, self.input_schema], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def list_tools(endpoint: McpEndpoint, net_allow: Any = ()) -> list[McpToolInfo]:
    """The server's tools, all pages of them."""

    async def listing(client: Any) -> list[McpToolInfo]:
        found: list[McpToolInfo] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            found += [
                McpToolInfo(t.name, t.description or "", dict(t.input_schema or {}))
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                return found

    return _with_client(endpoint, net_allow, listing, sent_if_lost=False)


def call(
    endpoint: McpEndpoint, tool: str, arguments: dict[str, Any], net_allow: Any = ()
) -> tuple[str, bool]:
    """Call one tool; its text content and whether the server said it is an error."""

    async def calling(client: Any) -> tuple[str, bool]:
        result = await client.call_tool(tool, arguments)
        parts = []
        for item in result.content:
            text = getattr(item, "text", None)
            parts.append(text if text is not None else f"[{item.type} content]")
        if not parts and result.structured_content is not None:
            parts.append(json.dumps(result.structured_content))
        text = "\n".join(parts)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + f"\n[cut at {MAX_RESULT_CHARS} characters]"
        return text, bool(result.is_error)

    return _with_client(endpoint, net_allow, calling, sent_if_lost=True)


def _with_client(
    endpoint: McpEndpoint,
    net_allow: Any,
    use: Callable[[Any], Awaitable[T]],
    *,
    sent_if_lost: bool,
) -> T:
    from mcp import Client  # the SDK (and its HTTP stack) only where MCP is used
    from mcp.client.stdio import StdioServerParameters

    if endpoint.transport == "http":
        try:
            check_url(endpoint.url, net_allow, tool=f"MCP server '{endpoint.name}'")
        except ToolError as exc:
            raise ToolUnavailable(str(exc)) from exc
        target: Any = endpoint.url
    else:
        if not endpoint.command:
            raise ToolUnavailable(f"MCP server '{endpoint.name}' has no command to start")
        target = StdioServerParameters(
            command=endpoint.command[0],
            args=list(endpoint.command[1:]),
            env=dict(endpoint.env) or None,
        )

    async def session() -> T:
        async with Client(target, read_timeout_seconds=endpoint.timeout_s) as client:
            return await use(client)

    where = f"MCP server '{endpoint.name}'"
    try:
        return _run(asyncio.wait_for(session(), endpoint.timeout_s))
    except TimeoutError:
        raise ToolUnavailable(
            f"{where} did not answer within {endpoint.timeout_s:g} s", sent=sent_if_lost
        ) from None
    except OSError as exc:
        raise ToolUnavailable(f"{where} did not start: {exc}") from exc
    except Exception as exc:  # the SDK raises many kinds: a closed pipe, an HTTP error, ...
        reason = _reason(exc)
        raise ToolUnavailable(f"{where} failed: {reason}", sent=sent_if_lost) from exc


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception group (anyio wraps what the tasks raised)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _run(coroutine: Awaitable[T]) -> T:
    """Run a coroutine to its end from sync code, also where an event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()  # type: ignore[arg-type]


def tool_name(server: str, tool: str) -> str:
    """The name a plan grants: the server's and the tool's, within the 64 characters model
    APIs allow and the characters they take."""
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in tool)
    return f"{server}__{safe}"[:64]


class McpTool(Tool):
    """One pinned tool of one registered server."""

    def __init__(self, endpoint: McpEndpoint, info: McpToolInfo, effect: Effect) -> None:
        self.endpoint = endpoint
        self.info = info
        self.name = tool_name(endpoint.name, info.name)  # type: ignore[misc]
        self.description = (  # type: ignore[misc]
            f"{info.description} (from the MCP server '{endpoint.name}')".strip()
        )
        self.effect = effect  # type: ignore[misc]

    @property
    def irreversible(self) -> bool:  # type: ignore[override]
        return self.effect in IRREVERSIBLE_EFFECTS

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.info.input_schema)

    def parse(self, arguments: Any) -> dict[str, Any]:  # type: ignore[override]
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object")
        try:
            jsonschema.validate(arguments, self.info.input_schema)
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "arguments"
            raise ToolError(f"{self.name}: invalid arguments: '{where}' {exc.message}") from exc
        except jsonschema.SchemaError as exc:
            raise ToolError(
                f"{self.name}: the server's schema is not valid: {exc.message}"
            ) from exc
        return arguments

    def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        net_allow = ctx.settings.get("net_allow", ())
        content, is_error = call(self.endpoint, self.info.name, args, net_allow)
        if is_error:
            raise ToolError(f"{self.name}: {content}")
        return content
