"""A script follows a run live with its API token on the run WebSocket: the owner's token
opens it, another user's is refused like a missing run, a revoked one like no login."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agentsite.asgi import application
from planner_ui.models import Run
from planner_ui.services.events import event_append
from planner_ui.services.tokens import token_create, token_revoke
from tests.fakes.websocket import refusal_code

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@database_sync_to_async
def _setup(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    run = Run.objects.create(owner=alice, task="Research tea")
    event_append(run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    return run, token_create(user=alice, name="ws"), token_create(user=bob, name="ws")


async def _connect(run_id: int, token: str):
    headers = [
        (b"origin", b"http://localhost"),
        (b"host", b"localhost"),
        (b"authorization", f"Bearer {token}".encode()),
    ]
    communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


async def test_the_owners_token_follows_the_run(make_user) -> None:
    run, (_, alice_token), _ = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, alice_token)
    assert connected
    first = json.loads(await ws.receive_from(timeout=5))
    assert first["type"] == "event" and first["event"]["type"] == "plan.invalid"
    assert json.loads(await ws.receive_from(timeout=5))["type"] == "replay.done"
    await database_sync_to_async(event_append)(run.pk, "run.status", {"status": "running"})
    live = json.loads(await ws.receive_from(timeout=5))
    assert live["event"]["type"] == "run.status" and live["event"]["seq"] == 2
    await ws.disconnect()


async def test_another_users_token_and_a_revoked_one_are_refused(make_user) -> None:
    run, (alice_record, alice_token), (_, bob_token) = await _setup(make_user)
    ws, connected, code = await _connect(run.pk, bob_token)
    assert await refusal_code(ws, connected, code) == 4404
    await database_sync_to_async(token_revoke)(user=alice_record.user, token_id=alice_record.pk)
    ws, connected, code = await _connect(run.pk, alice_token)
    assert await refusal_code(ws, connected, code) == 4401
