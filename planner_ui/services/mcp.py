"""Registering MCP servers and keeping their pinned tools honest.

Registration connects once, lists the server's tools and pins each one's description and
schema, with the effect `execute` (irreversible: every call asks) until a person says what
the tool really does. A later check lists them again: a tool whose description or schema
changed, or that is new, is held back (not offered to planners, editors or executors) until
a person accepts the change."""

from __future__ import annotations

import shlex

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from planner_ui.core.effects import Effect
from planner_ui.core.errors import AgentError, ToolUnavailable
from planner_ui.models import McpServer, McpServerTool
from planner_ui.selectors.tools import endpoint_of
from planner_ui.tools.mcp import McpToolInfo, list_tools

MAX_TOOLS_PER_SERVER = 100


class McpRefused(AgentError):
    """A registration or change was refused; the message says why."""


def net_allow() -> object:
    return settings.AGENTSITE_TOOL_SETTINGS.get("net_allow", ())


def mcp_server_register(
    *,
    user: AbstractBaseUser,
    name: str,
    transport: str,
    command: str = "",
    url: str = "",
    shared: bool = False,
) -> McpServer:
    """Register a server and pin its tools; refused (and nothing kept) if it cannot be
    listed. `shared` (staff only) makes it available to everyone's runs."""
    slug = slugify(name)[:30].replace("-", "_")
    if not slug:
        raise McpRefused("Give the server a short name (letters, digits, _), e.g. 'notes'.")
    if transport not in McpServer.Transport.values:
        raise McpRefused("Choose how to reach the server: a command (stdio) or a URL (HTTP).")
    argv: list[str] = []
    if transport == McpServer.Transport.STDIO:
        if not user.is_staff:
            raise McpRefused(
                "Only an administrator can register a command: it runs on every worker "
                "machine. Register the server's URL instead."
            )
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise McpRefused(f"The command cannot be read: {exc}.") from exc
        if not argv:
            raise McpRefused("Give the command that starts the server, e.g. 'npx my-server'.")
        url = ""
    elif not url.strip():
        raise McpRefused("Give the server's URL, e.g. https://mcp.example.com/mcp.")
    if shared and not user.is_staff:
        raise McpRefused("Only an administrator can register a server for everyone.")
    _refuse_shadowing(slug, user, shared)
    server = McpServer(
        owner=None if shared else user,
        name=slug,
        transport=transport,
        command=argv,
        url=url.strip(),
    )
    try:
        listed = list_tools(endpoint_of(server), net_allow())
    except ToolUnavailable as exc:
        raise McpRefused(f"Could not list its tools: {exc}.") from exc
    if len(listed) > MAX_TOOLS_PER_SERVER:
        raise McpRefused(f"It lists {len(listed)} tools; at most {MAX_TOOLS_PER_SERVER}.")
    try:
        with transaction.atomic():
            server.checked_at = timezone.now()
            server.save()
            for info in listed:
                _pin(server, info)
    except IntegrityError:
        raise McpRefused(
            f"You have a server named '{slug}' already: choose another name."
        ) from None
    return server


def _refuse_shadowing(slug: str, user: AbstractBaseUser, shared: bool) -> None:
    """A plan grants a server's tools by the server's name, and a shared server wins over a
    person's own of the same name: one would silently stand in for the other."""
    if shared:
        if McpServer.objects.filter(name=slug, owner__isnull=False).exists():
            raise McpRefused(
                f"Someone's own server is named '{slug}': a server for everyone of that name "
                "would take its place in their runs. Choose another name."
            )
    elif McpServer.objects.filter(name=slug, owner__isnull=True).exists():
        raise McpRefused(f"A server for everyone is named '{slug}' already: choose another name.")


def _pin(server: McpServer, info: McpToolInfo) -> McpServerTool:
    return McpServerTool.objects.create(
        server=server,
        name=info.name,
        description=info.description,
        input_schema=info.input_schema,
        digest=info.digest,
    )


def mcp_server_check(server: McpServer) -> McpServer:
    """List the server's tools again and hold back what changed since they were pinned."""
    try:
        listed = {info.name: info for info in list_tools(endpoint_of(server), net_allow())}
    except ToolUnavailable as exc:
        McpServer.objects.filter(pk=server.pk).update(problem=str(exc), checked_at=timezone.now())
        server.refresh_from_db()
        return server
    with transaction.atomic():
        pinned = {t.name: t for t in server.tools.select_for_update()}
        for name, tool in pinned.items():
            info = listed.get(name)
            if info is None:
                tool.state = McpServerTool.State.GONE
            elif info.digest == tool.digest:
                if tool.state != McpServerTool.State.NEW:
                    tool.state = McpServerTool.State.ACTIVE
                tool.pending_description, tool.pending_schema, tool.pending_digest = "", None, ""
            else:
                if tool.state != McpServerTool.State.NEW:
                    tool.state = McpServerTool.State.CHANGED
                tool.pending_description = info.description
                tool.pending_schema = info.input_schema
                tool.pending_digest = info.digest
            tool.save()
        for name, info in listed.items():
            if name not in pinned:
                McpServerTool.objects.create(
                    server=server,
                    name=name,
                    description=info.description,
                    input_schema=info.input_schema,
                    digest=info.digest,
                    state=McpServerTool.State.NEW,
                )
        McpServer.objects.filter(pk=server.pk).update(problem="", checked_at=timezone.now())
    server.refresh_from_db()
    return server


def mcp_tool_accept(tool: McpServerTool) -> McpServerTool:
    """A person read the change (or the new tool) and lets it be offered again."""
    if tool.state == McpServerTool.State.CHANGED:
        tool.description = tool.pending_description
        tool.input_schema = tool.pending_schema or {}
        tool.digest = tool.pending_digest
    elif tool.state != McpServerTool.State.NEW:
        raise McpRefused(f"'{tool.name}' has no change to accept.")
    tool.state = McpServerTool.State.ACTIVE
    tool.pending_description, tool.pending_schema, tool.pending_digest = "", None, ""
    tool.save()
    return tool


def mcp_tool_set_effect(tool: McpServerTool, effect: str) -> McpServerTool:
    try:
        tool.effect = Effect(effect)
    except ValueError:
        raise McpRefused(
            f"Unknown effect {effect!r}; use one of {', '.join(e.value for e in Effect)}."
        ) from None
    tool.save(update_fields=["effect"])
    return tool
