"""Ending a login closes the WebSockets it opened: before, a socket opened before a logout (or
before the password changed, or the user was deactivated) went on receiving the run's events,
since a socket's login is checked only at its handshake. The page reconnects after the close,
and the handshake lets it in again only while the browser's login holds."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import update_session_auth_hash
from django.test import Client
from django.urls import reverse

from agentsite.asgi import application
from planner_ui.consumers import CLOSE_LOGIN_CHANGED, CLOSE_NOT_LOGGED_IN
from planner_ui.models import Run
from planner_ui.services.events import event_append
from planner_ui.services.tokens import token_create
from tests.fakes.websocket import refusal_code

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ORIGIN = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def _logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _cookie(client: Client) -> bytes:
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@database_sync_to_async
def _setup(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    run = Run.objects.create(owner=alice, task="Research tea")
    event_append(run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    bobs_run = Run.objects.create(owner=bob, task="Research coffee")
    event_append(bobs_run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    return alice, bob, run, bobs_run


async def _open(path: str, header: tuple[bytes, bytes]) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(application, path, headers=[*ORIGIN, header])
    connected, code = await ws.connect(timeout=5)
    assert connected, code
    if path.startswith("/ws/runs/"):
        while json.loads(await ws.receive_from(timeout=5))["type"] != "replay.done":
            pass
    else:
        assert json.loads(await ws.receive_from(timeout=5))["type"] == "approvals"
    return ws


async def _refused(path: str, header: tuple[bytes, bytes]) -> int:
    ws = WebsocketCommunicator(application, path, headers=[*ORIGIN, header])
    connected, code = await ws.connect(timeout=5)
    return await refusal_code(ws, connected, code)


async def _closed_with(ws: WebsocketCommunicator) -> int:
    output = await ws.receive_output(timeout=5)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def test_logging_out_closes_that_users_sockets_and_they_cannot_come_back(make_user):
    alice, bob, run, bobs_run = await _setup(make_user)
    browser = await database_sync_to_async(_logged_in)(alice)
    cookie = (b"cookie", _cookie(browser))
    run_ws = await _open(f"/ws/runs/{run.pk}/", cookie)
    inbox_ws = await _open("/ws/inbox/", cookie)
    bobs_ws = await _open(
        f"/ws/runs/{bobs_run.pk}/",
        (b"cookie", _cookie(await database_sync_to_async(_logged_in)(bob))),
    )

    answer = await database_sync_to_async(browser.post)(reverse("logout"))
    assert answer.status_code == 302

    assert await _closed_with(run_ws) == CLOSE_LOGIN_CHANGED
    assert await _closed_with(inbox_ws) == CLOSE_LOGIN_CHANGED
    # The page reconnects with the cookie it holds: that session is gone.
    assert await _refused(f"/ws/runs/{run.pk}/", cookie) == CLOSE_NOT_LOGGED_IN
    # Another user's socket goes on.
    await database_sync_to_async(event_append)(bobs_run.pk, "run.status", {"status": "running"})
    live = json.loads(await bobs_ws.receive_from(timeout=5))
    assert live["event"]["type"] == "run.status"
    await bobs_ws.disconnect()


async def test_a_new_password_closes_the_other_sessions_and_keeps_the_one_that_set_it(make_user):
    alice, _bob, run, _ = await _setup(make_user)
    attacker = (b"cookie", _cookie(await database_sync_to_async(_logged_in)(alice)))
    owner_browser = await database_sync_to_async(_logged_in)(alice)
    attackers_ws = await _open(f"/ws/runs/{run.pk}/", attacker)

    @database_sync_to_async
    def change_password() -> bytes:
        # What Django's password change view does: save, then keep the session that asked.
        alice.set_password("a-new-password-for-alice")
        alice.save()
        request = type("R", (), {})()
        request.session = owner_browser.session
        request.user = alice
        update_session_auth_hash(request, alice)
        request.session.save()
        return f"sessionid={request.session.session_key}".encode()

    owners_cookie = await change_password()
    assert await _closed_with(attackers_ws) == CLOSE_LOGIN_CHANGED
    assert await _refused(f"/ws/runs/{run.pk}/", attacker) == CLOSE_NOT_LOGGED_IN
    owners_ws = await _open(f"/ws/runs/{run.pk}/", (b"cookie", owners_cookie))
    await owners_ws.disconnect()


async def test_deactivating_a_user_closes_their_session_and_token_sockets(make_user):
    alice, _bob, run, _ = await _setup(make_user)
    cookie = (b"cookie", _cookie(await database_sync_to_async(_logged_in)(alice)))
    _token, raw = await database_sync_to_async(token_create)(user=alice, name="script")
    bearer = (b"authorization", f"Bearer {raw}".encode())
    session_ws = await _open(f"/ws/runs/{run.pk}/", cookie)
    token_ws = await _open(f"/ws/runs/{run.pk}/", bearer)

    @database_sync_to_async
    def rename_then_deactivate() -> None:
        alice.first_name = "Alice"
        alice.save()

    # A change that ends no login: the script's token socket stays (the page's reconnects).
    await rename_then_deactivate()
    assert await _closed_with(session_ws) == CLOSE_LOGIN_CHANGED
    await database_sync_to_async(event_append)(run.pk, "run.status", {"status": "running"})
    assert json.loads(await token_ws.receive_from(timeout=5))["event"]["type"] == "run.status"
    session_ws = await _open(f"/ws/runs/{run.pk}/", cookie)

    alice.is_active = False
    await database_sync_to_async(alice.save)()
    assert await _closed_with(session_ws) == CLOSE_LOGIN_CHANGED
    assert await _closed_with(token_ws) == CLOSE_NOT_LOGGED_IN
    assert await _refused(f"/ws/runs/{run.pk}/", cookie) == CLOSE_NOT_LOGGED_IN
    assert await _refused(f"/ws/runs/{run.pk}/", bearer) == CLOSE_NOT_LOGGED_IN


async def test_a_login_saves_last_login_and_closes_nothing(make_user):
    alice, _bob, run, _ = await _setup(make_user)
    ws = await _open(
        f"/ws/runs/{run.pk}/", (b"cookie", _cookie(await database_sync_to_async(_logged_in)(alice)))
    )
    # Another browser logs in as alice: Django saves last_login alone.
    await database_sync_to_async(_logged_in)(alice)
    await database_sync_to_async(event_append)(run.pk, "run.status", {"status": "running"})
    assert json.loads(await ws.receive_from(timeout=5))["event"]["type"] == "run.status"
    await ws.disconnect()
