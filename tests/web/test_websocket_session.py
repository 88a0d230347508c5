"""The WebSocket's session middleware: the handshake's session logs its user in, as Channels'
does, and what the socket sends goes straight to the server, with no session check per message."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from planner_ui.websocket_session import websocket_auth_stack
from tests.web.test_consumer import session_cookie

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


class Recorder:
    """An inner app that notes the user it was given and the send it is to use."""

    def __init__(self) -> None:
        self.users: list[str] = []
        self.sends: list[object] = []

    async def __call__(self, scope, receive, send) -> None:
        self.users.append(str(scope["user"]))
        self.sends.append(send)
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "hello"})


@database_sync_to_async
def _cookie(make_user) -> bytes:
    return session_cookie(make_user("alice"))


async def _talk(app, headers):
    communicator = WebsocketCommunicator(app, "/ws/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    text = await communicator.receive_from(timeout=5)
    await communicator.disconnect()
    return communicator, text


async def test_the_session_logs_the_user_in_and_sends_go_straight_out(make_user):
    recorder = Recorder()
    cookie = await _cookie(make_user)
    communicator, text = await _talk(websocket_auth_stack(recorder), [(b"cookie", cookie)])
    assert text == "hello"
    assert recorder.users == ["alice"]
    # The very send the server gave the stack: no wrapper between the socket and the server.
    assert recorder.sends == [communicator.output_queue.put]


async def test_without_a_session_the_user_is_anonymous():
    recorder = Recorder()
    _, text = await _talk(websocket_auth_stack(recorder), [])
    assert text == "hello"
    assert recorder.users == ["AnonymousUser"]
