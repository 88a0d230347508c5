"""Registering MCP servers and keeping their pinned tools honest.

Registration connects once, lists the server's tools and pins each one's description and
schema, held (not offered to planners, editors or executors) until the server's owner, or
staff for a shared server, has read them and approved them; the effect stays `execute`
(irreversible: every call asks) until a person says what the tool really does. A later check
lists them again, and so does every call (tools.mcp): a tool whose description or schema
changed, or that is new, is held until a person approves the change."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import User
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


def net_allow() -> Iterable[str] | str:
    allow = settings.AGENTSITE_TOOL_SETTINGS.get("net_allow", ())
    assert isinstance(allow, str | Iterable), "net_allow is a host or a list of hosts"
    return allow


def mcp_server_register(
    *,
    user: User,
    name: str,
    transport: str,
    command: str = "",
    url: str = "",
    shared: bool = False,
) -> McpServer:
    """Register a server and pin its tools, held for review; refused (and nothing kept) if it
    cannot be listed. `shared` (staff only) makes it available to everyone's runs."""
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


def _refuse_shadowing(slug: str, user: User, shared: bool) -> None:
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
        state=McpServerTool.State.NEW,
    )


def mcp_server_check(server: McpServer) -> McpServer:
    """List the server's tools again and hold what changed since they were approved."""
    try:
        listed = {info.name: info for info in list_tools(endpoint_of(server), net_allow())}
    except ToolUnavailable as exc:
        McpServer.objects.filter(pk=server.pk).update(problem=str(exc), checked_at=timezone.now())
        server.refresh_from_db()
        return server
    with transaction.atomic():
        pinned = {t.name: t for t in server.tools.select_for_update()}
        for name, tool in pinned.items():
            _take_listing(tool, listed.get(name))
            tool.save()
        for name, info in listed.items():
            if name not in pinned:
                _pin(server, info)
        McpServer.objects.filter(pk=server.pk).update(problem="", checked_at=timezone.now())
    server.refresh_from_db()
    return server


def _take_listing(tool: McpServerTool, info: McpToolInfo | None) -> None:
    """What the server lists now, against what a person approved (if anyone has)."""
    tool.pending_description, tool.pending_schema, tool.pending_digest = "", None, ""
    if info is None:
        tool.state = McpServerTool.State.GONE
    elif tool.reviewed_at is None:
        # Nobody approved the pinned text: the text to review is simply the newest.
        tool.description, tool.input_schema, tool.digest = (
            info.description,
            info.input_schema,
            info.digest,
        )
        tool.state = McpServerTool.State.NEW
    elif info.digest == tool.digest:
        tool.state = McpServerTool.State.ACTIVE
    else:
        tool.state = McpServerTool.State.CHANGED
        tool.pending_description = info.description
        tool.pending_schema = info.input_schema
        tool.pending_digest = info.digest


def mcp_tool_hold(tool_id: int, pinned_digest: str, listed: McpToolInfo | None) -> None:
    """A call found the server listing the tool otherwise than the approved `pinned_digest`
    (None: not at all): hold it until a person reviews the change. Called from the worker
    that refused the call; a tool changed or held meanwhile is left as it is."""
    with transaction.atomic():
        tool = McpServerTool.objects.select_for_update().filter(pk=tool_id).first()
        if tool is None or tool.digest != pinned_digest or tool.state != McpServerTool.State.ACTIVE:
            return
        _take_listing(tool, listed)
        tool.save()


def review_digest(tool: McpServerTool) -> str:
    """The digest of the text the page shows for review: the change if there is one."""
    return tool.pending_digest if tool.state == McpServerTool.State.CHANGED else tool.digest


def mcp_tool_approve(tool: McpServerTool, *, reviewer: User, digest: str) -> McpServerTool:
    """A person read the tool's description and schema (the change, for a changed tool) and
    lets it be offered. `digest` names the text they read: if the server changed it since the
    page showed it, nothing is approved."""
    with transaction.atomic():
        tool = McpServerTool.objects.select_for_update().get(pk=tool.pk)
        if tool.state == McpServerTool.State.ACTIVE:
            raise McpRefused(f"'{tool.name}' is offered already: there is nothing to approve.")
        if tool.state == McpServerTool.State.GONE:
            raise McpRefused(f"'{tool.name}' is no longer listed by its server.")
        if not digest or digest != review_digest(tool):
            raise McpRefused(
                f"'{tool.name}' changed since the page showed it: read it again below before "
                "approving it."
            )
        if tool.state == McpServerTool.State.CHANGED:
            tool.description = tool.pending_description
            tool.input_schema = tool.pending_schema or {}
            tool.digest = tool.pending_digest
        tool.state = McpServerTool.State.ACTIVE
        tool.pending_description, tool.pending_schema, tool.pending_digest = "", None, ""
        tool.reviewed_at = timezone.now()
        tool.reviewed_by = reviewer
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


def mcp_server_remove(server: McpServer) -> int:
    """Remove a server and its pinned tools; returns how many tools went with it. From then on
    no run is offered them, and a step granted one finds it gone at its next call, as when a
    server stops listing a tool."""
    with transaction.atomic():
        count = server.tools.count()
        server.delete()
    return count
