"""The MCP servers page: staff register a command, its tools are held until staff approve
them, anyone sees the shared servers' tools, only their manager approves a tool, changes an
effect or approves a change; forms need CSRF."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from agentsite.embedded import free_port
from planner_ui.models import McpServer, McpServerTool, Run
from planner_ui.selectors.tools import tools_for_user
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def client_admin(make_user, monkeypatch, tmp_path) -> Client:
    monkeypatch.chdir(REPO)
    admin = make_user("admin")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    client.log = tmp_path / "calls.log"
    return client


def register(client: Client) -> McpServer:
    response = client.post(
        reverse("mcp_server_new"),
        {
            "name": "fake",
            "transport": "stdio",
            "command": f"{sys.executable} -m tests.fakes.mcp_server --log {client.log}",
            "shared": "on",
        },
        follow=True,
    )
    assert "Registered &#x27;fake&#x27; with 3 tools. They are held" in response.content.decode()
    return McpServer.objects.get(name="fake")


def approve(client: Client, tool: McpServerTool) -> str:
    """The Approve button: it posts the digest of the text the page showed."""
    page = client.get(reverse("mcp_servers")).content.decode()
    digest = re.search(
        rf'action="{reverse("mcp_tool_update", args=[tool.pk])}".*?name="digest" value="(\w+)"',
        page,
        re.S,
    ).group(1)
    url = reverse("mcp_tool_update", args=[tool.pk])
    return client.post(url, {"action": "approve", "digest": digest}, follow=True).content.decode()


def register_and_approve(client: Client) -> McpServer:
    server = register(client)
    for tool in server.tools.all():
        assert "is offered to runs, as you reviewed it" in approve(client, tool)
    return server


def test_staff_register_a_server_and_its_tools_are_listed_for_review(client_admin) -> None:
    register(client_admin)
    page = client_admin.get(reverse("mcp_servers")).content.decode()
    assert 'id="mcp-server-fake"' in page
    for granted in ("fake__lookup", "fake__launch", "fake__crash"):
        assert granted in page
    assert page.count('class="secondary approve-tool"') == 3
    assert '<pre class="mcp-review-text">Look a term up in the glossary.</pre>' in page
    assert "&quot;required&quot;: [" in page  # the schema, whole, as JSON


def test_others_see_a_held_shared_tool_but_cannot_approve_it(client_admin, client_alice) -> None:
    server = register(client_admin)
    lookup = server.tools.get(name="lookup")
    page = client_alice.get(reverse("mcp_servers")).content.decode()
    assert "fake__lookup" in page and "approve-tool" not in page
    url = reverse("mcp_tool_update", args=[lookup.pk])
    response = client_alice.post(url, {"action": "approve", "digest": lookup.digest})
    assert response.status_code == 404
    lookup.refresh_from_db()
    assert lookup.state == McpServerTool.State.NEW


def test_others_see_a_shared_server_but_cannot_change_it(client_admin, client_alice) -> None:
    server = register_and_approve(client_admin)
    lookup = server.tools.get(name="lookup")
    page = client_alice.get(reverse("mcp_servers")).content.decode()
    assert "fake__lookup" in page and "set-effect" not in page and "check-server" not in page
    url = reverse("mcp_tool_update", args=[lookup.pk])
    assert client_alice.post(url, {"effect": "read"}).status_code == 404
    assert client_alice.post(reverse("mcp_server_check", args=[server.pk])).status_code == 404
    lookup.refresh_from_db()
    assert lookup.effect == "execute"
    response = client_admin.post(url, {"effect": "read"}, follow=True)
    assert "now has the effect read" in response.content.decode()
    lookup.refresh_from_db()
    assert lookup.effect == "read"


def test_others_see_a_shared_commands_program_but_not_its_arguments(
    client_admin, client_alice
) -> None:
    # Arguments may carry a secret (a key, a token), as a URL's query may: only whoever
    # manages the server sees them, as only they see its URL whole.
    server = register(client_admin)
    server.command = [*server.command, "--api-key", "sk-secret-42"]
    server.save()
    page = client_alice.get(reverse("mcp_servers")).content.decode()
    assert f"<code>{server.command[0]}</code>" in page
    assert "sk-secret-42" not in page and "tests.fakes.mcp_server" not in page
    assert "sk-secret-42" in client_admin.get(reverse("mcp_servers")).content.decode()


def test_a_checked_server_shows_the_change_and_approving_offers_it_again(client_admin) -> None:
    server = register_and_approve(client_admin)
    server.command = [*server.command, "--variant", "2"]
    server.save()
    response = client_admin.post(reverse("mcp_server_check", args=[server.pk]), follow=True)
    body = response.content.decode()
    assert "1 tools wait for you" in body and "send it to our analytics" in body
    lookup = server.tools.get(name="lookup")
    assert lookup.state == McpServerTool.State.CHANGED
    approve(client_admin, lookup)
    lookup.refresh_from_db()
    assert lookup.state == McpServerTool.State.ACTIVE


def test_a_user_may_not_register_a_command(client_alice) -> None:
    response = client_alice.post(
        reverse("mcp_server_new"),
        {"name": "mine", "transport": "stdio", "command": "rm -rf /"},
        follow=True,
    )
    assert "Only an administrator can register a command" in response.content.decode()
    assert not McpServer.objects.exists()


def test_the_forms_need_csrf(make_user) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("carol"))
    response = strict.post(reverse("mcp_server_new"), {"name": "x", "transport": "http"})
    assert response.status_code == 403


def test_the_new_task_form_offers_irreversible_mcp_tools_to_run_without_asking(
    client_admin, client_alice
) -> None:
    register_and_approve(client_admin)  # shared: everyone's runs; its tools ask until told
    page = client_alice.get(reverse("home")).content.decode()
    for name in ("fake__lookup", "fake__launch", "fake__crash"):
        assert f'value="{name}"' in page  # each pinned as `execute` until a person says
    assert 'value="send_email"' in page
    response = client_alice.post(
        reverse("run_new"),
        {"task": "Launch the rocket", "tool_policy": "auto", "auto_tools": ["fake__launch"]},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Run.objects.get().auto_tools == ["fake__launch"]


@pytest.fixture
def url_server(tmp_path, settings):
    """A real MCP server over streamable HTTP on 127.0.0.1, which the tools' policy allows."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_server", "--log", str(tmp_path / "log"),
         "--http", str(port)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    settings.AGENTSITE_TOOL_SETTINGS = {
        **settings.AGENTSITE_TOOL_SETTINGS,
        "net_allow": ["127.0.0.1"],
    }
    wait_until(lambda: _listening(port), timeout=30, what="the MCP server's port")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_a_person_reviews_and_approves_the_tools_of_their_own_url_server(
    url_server, alice, client_alice, make_user
) -> None:
    response = client_alice.post(
        reverse("mcp_server_new"),
        {"name": "mine", "transport": "http", "url": url_server},
        follow=True,
    )
    body = response.content.decode()
    assert "Registered &#x27;mine&#x27; with 3 tools. They are held: no run is offered one " in body
    assert "until you review" in body
    server = McpServer.objects.get(name="mine", owner=alice)
    assert "mine__lookup" not in tools_for_user(alice)
    bob_user = make_user("bob")
    bob = Client()
    bob.force_login(bob_user)
    lookup = server.tools.get(name="lookup")
    url = reverse("mcp_tool_update", args=[lookup.pk])
    assert bob.post(url, {"action": "approve", "digest": lookup.digest}).status_code == 404
    assert "is offered to runs, as you reviewed it" in approve(client_alice, lookup)
    assert "mine__lookup" in tools_for_user(alice)
    assert "mine__lookup" not in tools_for_user(bob_user)


def test_a_server_is_removed_by_its_manager_only_with_its_tools(client_admin, client_alice) -> None:
    server = register_and_approve(client_admin)
    admin = get_user_model().objects.get(username="admin")
    assert "fake__lookup" in tools_for_user(admin)
    remove = reverse("mcp_server_remove", args=[server.pk])
    # Someone who may not manage it sees no button, and cannot remove it.
    assert "remove-server" not in client_alice.get(reverse("mcp_servers")).content.decode()
    assert client_alice.post(remove).status_code == 404
    assert McpServer.objects.filter(pk=server.pk).exists()
    page = client_admin.get(reverse("mcp_servers")).content.decode()
    assert f'action="{remove}"' in page and 'class="danger remove-server"' in page

    response = client_admin.post(remove, follow=True)
    body = response.content.decode()
    assert "Removed &#x27;fake&#x27; and its 3 tools: no run is offered them any more." in body
    assert 'id="mcp-server-fake"' not in body and 'id="no-mcp-servers"' in body
    assert not McpServerTool.objects.exists()
    assert not any(name.startswith("fake__") for name in tools_for_user(admin))
    assert client_admin.post(remove).status_code == 404
