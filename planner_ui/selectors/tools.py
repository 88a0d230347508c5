"""The tools a person's runs may use: the built-in ones and the offered (approved, unchanged)
tools of the MCP servers they may use (shared ones and their own), by the name a plan grants.
Each MCP tool is wired to hold itself for review when a call finds its server changed it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial

from django.contrib.auth.models import User
from django.db.models import Q

from planner_ui.core.effects import Effect
from planner_ui.models import McpServer, McpServerTool, Run
from planner_ui.services.mcp import endpoint_of, mcp_tool_hold
from planner_ui.tools import REGISTRY, Tool
from planner_ui.tools.mcp import McpTool, McpToolInfo


def mcp_servers_for_user(user: User) -> list[McpServer]:
    """Shared servers first, then the user's own."""
    servers = McpServer.objects.filter(Q(owner__isnull=True) | Q(owner_id=user.pk))
    return sorted(servers.prefetch_related("tools"), key=lambda s: (s.owner_id is not None, s.name))


def tools_for_user(user: User) -> dict[str, Tool]:
    tools: dict[str, Tool] = dict(REGISTRY)
    for server in mcp_servers_for_user(user):
        if not server.enabled:
            continue
        endpoint = endpoint_of(server)
        for pinned in server.tools.all():
            if pinned.state != McpServerTool.State.ACTIVE:
                continue
            info = McpToolInfo(pinned.name, pinned.description, pinned.input_schema)
            hold = partial(mcp_tool_hold, pinned.pk, pinned.digest)
            tool = McpTool(endpoint, info, Effect(pinned.effect), on_changed=hold)
            tools.setdefault(tool.name, tool)
    return tools


def tools_for_run(run: Run) -> dict[str, Tool]:
    return tools_for_user(run.owner)


def tools_for_step(run: Run, granted: Iterable[str]) -> Mapping[str, Tool]:
    """The tools a step of `run` granted these may be given. A step granted only built-in
    tools (most are) needs no look at the run owner's MCP servers: two queries fewer on every
    step's way to its model call."""
    if all(name in REGISTRY for name in granted):
        return REGISTRY
    return tools_for_run(run)


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
