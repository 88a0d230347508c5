"""The session of a WebSocket's handshake, for the user it logs in, and nothing per message.

Channels' SessionMiddleware also wraps every message the socket sends, to save a changed session
when an HTTP response starts; a WebSocket sends no such message, so for it the wrapper only
reads the session's state, twice per message. With fifty watchers of a run that was a tenth of
Daphne's time. Here the session is resolved exactly as Channels does, and messages go straight
out."""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware


class HandshakeSessionMiddleware(SessionMiddleware):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await super().__call__(scope, receive, send)
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def websocket_auth_stack(inner: Any) -> Any:
    """Channels' AuthMiddlewareStack (cookies, session, user), without the send wrapper."""
    return CookieMiddleware(HandshakeSessionMiddleware(AuthMiddleware(inner)))
