"""The MCP servers page: register a server, read each of its tools' description and schema and
approve it (nothing is offered before), give each tool an effect, check it again, approve (or
not) what its server changed, and remove it."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core.effects import Effect
from planner_ui.models import McpServer, McpServerTool
from planner_ui.selectors.tools import mcp_servers_for_user
from planner_ui.services.mcp import (
    McpRefused,
    mcp_server_check,
    mcp_server_register,
    mcp_server_remove,
    mcp_tool_approve,
    mcp_tool_set_effect,
    review_digest,
)
from planner_ui.signed_in import SignedInRequest
from planner_ui.tools.mcp import tool_name


@login_required
@require_GET
def mcp_servers(request: SignedInRequest) -> HttpResponse:
    servers = mcp_servers_for_user(request.user)
    for server in servers:
        server.manageable = _may_manage(request.user, server)
        server.pinned = list(server.tools.all())
        for tool in server.pinned:
            tool.granted_as = tool_name(server.name, tool.name)
            tool.held = tool.state in (McpServerTool.State.NEW, McpServerTool.State.CHANGED)
            tool.review_digest = review_digest(tool)
            tool.schema_text = _schema_text(tool.input_schema)
            tool.pending_schema_text = _schema_text(tool.pending_schema)
    context = {
        "servers": servers,
        "effects": [e.value for e in Effect],
        "transports": McpServer.Transport.choices,
    }
    return render(request, "planner_ui/mcp_servers.html", context)


@login_required
@require_POST
def mcp_server_new(request: SignedInRequest) -> HttpResponse:
    try:
        server = mcp_server_register(
            user=request.user,
            name=request.POST.get("name", ""),
            transport=request.POST.get("transport", ""),
            command=request.POST.get("command", ""),
            url=request.POST.get("url", ""),
            shared=request.POST.get("shared") == "on",
        )
    except McpRefused as exc:
        messages.error(request, str(exc))
    else:
        reviewer = "staff review" if server.owner_id is None else "you review"
        messages.success(
            request,
            f"Registered '{server.name}' with {server.tools.count()} tools. They are held: no "
            f"run is offered one until {reviewer} its description and schema below and approve "
            "it. Each one asks before every call until it is given its real effect.",
        )
    return redirect("mcp_servers")


@login_required
@require_POST
def mcp_server_check_view(request: SignedInRequest, server_id: int) -> HttpResponse:
    server = _managed_server(request, server_id)
    server = mcp_server_check(server)
    if server.problem:
        messages.error(request, f"'{server.name}': {server.problem}")
    else:
        held = server.tools.filter(
            state__in=[McpServerTool.State.NEW, McpServerTool.State.CHANGED]
        ).count()
        messages.success(
            request,
            f"Checked '{server.name}': "
            + (f"{held} tools wait for you." if held else "its tools are as they were pinned."),
        )
    return redirect("mcp_servers")


@login_required
@require_POST
def mcp_server_remove_view(request: SignedInRequest, server_id: int) -> HttpResponse:
    server = _managed_server(request, server_id)
    name = server.name
    count = mcp_server_remove(server)
    messages.success(
        request,
        f"Removed '{name}' and its {count} tool{'s' if count != 1 else ''}: no run is offered "
        "them any more.",
    )
    return redirect("mcp_servers")


@login_required
@require_POST
def mcp_tool_update(request: SignedInRequest, tool_id: int) -> HttpResponse:
    tool = McpServerTool.objects.select_related("server").filter(pk=tool_id).first()
    if tool is None or not _may_manage(request.user, tool.server):
        raise Http404("No such tool.")
    try:
        if request.POST.get("action") == "approve":
            mcp_tool_approve(tool, reviewer=request.user, digest=request.POST.get("digest", ""))
            messages.success(request, f"'{tool.name}' is offered to runs, as you reviewed it.")
        else:
            mcp_tool_set_effect(tool, request.POST.get("effect", ""))
            messages.success(request, f"'{tool.name}' now has the effect {tool.effect}.")
    except McpRefused as exc:
        messages.error(request, str(exc))
    return redirect("mcp_servers")


def _schema_text(schema: object) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) if schema else ""


def _may_manage(user: User, server: McpServer) -> bool:
    return server.owner_id == user.pk or (server.owner_id is None and user.is_staff)


def _managed_server(request: SignedInRequest, server_id: int) -> McpServer:
    server = McpServer.objects.filter(pk=server_id).first()
    if server is None or not _may_manage(request.user, server):
        raise Http404("No such server.")
    return server
