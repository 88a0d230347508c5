"""The MCP servers page: register a server, give each of its tools an effect, check it again,
and accept (or not) what its server changed."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from planner_ui.core.effects import Effect
from planner_ui.models import McpServer, McpServerTool
from planner_ui.selectors.tools import mcp_servers_for_user
from planner_ui.services.mcp import (
    McpRefused,
    mcp_server_check,
    mcp_server_register,
    mcp_tool_accept,
    mcp_tool_set_effect,
)
from planner_ui.tools.mcp import tool_name


@login_required
@require_GET
def mcp_servers(request: HttpRequest) -> HttpResponse:
    servers = mcp_servers_for_user(request.user)
    for server in servers:
        server.manageable = _may_manage(request.user, server)
        server.pinned = list(server.tools.all())
        for tool in server.pinned:
            tool.granted_as = tool_name(server.name, tool.name)
    context = {
        "servers": servers,
        "effects": [e.value for e in Effect],
        "transports": McpServer.Transport.choices,
    }
    return render(request, "planner_ui/mcp_servers.html", context)


@login_required
@require_POST
def mcp_server_new(request: HttpRequest) -> HttpResponse:
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
        messages.success(
            request,
            f"Registered '{server.name}' with {server.tools.count()} tools. Each one asks before "
            "every call until you give it its real effect below.",
        )
    return redirect("mcp_servers")


@login_required
@require_POST
def mcp_server_check_view(request: HttpRequest, server_id: int) -> HttpResponse:
    server = _managed_server(request, server_id)
    server = mcp_server_check(server)
    if server.problem:
        messages.error(request, f"'{server.name}': {server.problem}")
    else:
        held = server.tools.exclude(state=McpServerTool.State.ACTIVE).count()
        messages.success(
            request,
            f"Checked '{server.name}': "
            + (f"{held} tools wait for you." if held else "its tools are as they were pinned."),
        )
    return redirect("mcp_servers")


@login_required
@require_POST
def mcp_tool_update(request: HttpRequest, tool_id: int) -> HttpResponse:
    tool = McpServerTool.objects.select_related("server").filter(pk=tool_id).first()
    if tool is None or not _may_manage(request.user, tool.server):
        raise Http404("No such tool.")
    try:
        if request.POST.get("action") == "accept":
            mcp_tool_accept(tool)
            messages.success(request, f"'{tool.name}' is offered again, as its server lists it.")
        else:
            mcp_tool_set_effect(tool, request.POST.get("effect", ""))
            messages.success(request, f"'{tool.name}' now has the effect {tool.effect}.")
    except McpRefused as exc:
        messages.error(request, str(exc))
    return redirect("mcp_servers")


def _may_manage(user: object, server: McpServer) -> bool:
    return server.owner_id == user.pk or (server.owner_id is None and user.is_staff)


def _managed_server(request: HttpRequest, server_id: int) -> McpServer:
    server = McpServer.objects.filter(pk=server_id).first()
    if server is None or not _may_manage(request.user, server):
        raise Http404("No such server.")
    return server
