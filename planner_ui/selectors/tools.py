"""The tools a person's runs may use: the built-in ones and the offered (approved, unchanged)
tools of the MCP servers they may use (shared ones and their own), by the name a plan grants.
A step's MCP tools are told what to do when a call finds their server changed them (the step
service holds the tool for review: services.mcp.mcp_tool_hold); a read needs no such hook."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q

from planner_ui.core.effects import Effect
from planner_ui.models import McpServer, McpServerTool, Run
from planner_ui.tools import REGISTRY, Tool
from planner_ui.tools.mcp import McpEndpoint, McpTool, McpToolInfo

# What a pinned MCP tool does when a call finds its server changed it: given the tool's row, the
# digest a person approved, and what the server lists now (None: nothing).
OnChanged = Callable[[int, str, McpToolInfo | None], None]


# The column's choices, as the tool's endpoint names them.
_TRANSPORTS: dict[str, Literal["stdio", "http"]] = {"stdio": "stdio", "http": "http"}


def endpoint_of(server: McpServer) -> McpEndpoint:
    return McpEndpoint(
        name=server.name,
        transport=_TRANSPORTS[server.transport],
        command=tuple(server.command),
        url=server.url,
        timeout_s=settings.AGENTSITE_MCP_TIMEOUT_S,
    )


def mcp_servers_for_user(user: User) -> list[McpServer]:
    """Shared servers first, then the user's own."""
    servers = McpServer.objects.filter(Q(owner__isnull=True) | Q(owner_id=user.pk))
    return sorted(servers.prefetch_related("tools"), key=lambda s: (s.owner_id is not None, s.name))


def tools_for_user(user: User, on_changed: OnChanged | None = None) -> dict[str, Tool]:
    tools: dict[str, Tool] = dict(REGISTRY)
    for server in mcp_servers_for_user(user):
        if not server.enabled:
            continue
        endpoint = endpoint_of(server)
        for pinned in server.tools.all():
            if pinned.state != McpServerTool.State.ACTIVE:
                continue
            info = McpToolInfo(pinned.name, pinned.description, pinned.input_schema)
            hold = partial(on_changed, pinned.pk, pinned.digest) if on_changed else None
            tool = McpTool(endpoint, info, Effect(pinned.effect), on_changed=hold)
            tools.setdefault(tool.name, tool)
    return tools


def tools_for_run(run: Run, on_changed: OnChanged | None = None) -> dict[str, Tool]:
    return tools_for_user(run.owner, on_changed)


def tools_for_step(
    run: Run, granted: Iterable[str], on_changed: OnChanged | None = None
) -> Mapping[str, Tool]:
    """The tools a step of `run` granted these may be given. A step granted only built-in
    tools (most are) needs no look at the run owner's MCP servers: two queries fewer on every
    step's way to its model call."""
    if all(name in REGISTRY for name in granted):
        return REGISTRY
    return tools_for_run(run, on_changed)


def tool_for_approval(run: Run, name: str) -> Tool | None:
    """The tool a call of `run` waiting for a person named, to check edited arguments against:
    the offered one, or else a pinned MCP tool held for review since the call was made (its
    pinned schema is still what the model was given). None if its server is gone."""
    if name in REGISTRY:  # most are: no look at the owner's MCP servers
        return REGISTRY[name]
    offered = tools_for_run(run).get(name)
    if offered is not None:
        return offered
    for server in mcp_servers_for_user(run.owner):
        endpoint = endpoint_of(server)
        for pinned in server.tools.all():
            info = McpToolInfo(pinned.name, pinned.description, pinned.input_schema)
            tool = McpTool(endpoint, info, Effect(pinned.effect))
            if tool.name == name:
                return tool
    return None
