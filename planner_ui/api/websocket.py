"""A personal API token opens the run WebSocket too, as `Authorization: Bearer <token>` in the
handshake: a script that drives runs over the API follows them live, with the same ownership
check as a logged-in page (the consumer's)."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from planner_ui.services.tokens import token_user


class TokenAuthMiddleware(BaseMiddleware):  # type: ignore[misc]  # Channels ships no types
    """Inside websocket_auth_stack: a session's user stays; without one, a live token's user."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            raw = _bearer(scope)
            found = await database_sync_to_async(token_user)(raw) if raw else None
            if found is not None:
                # The token's id lets the consumer close the socket when it is revoked.
                scope = {**scope, "user": found[1], "api_token_id": found[0].pk}
        return await super().__call__(scope, receive, send)


def _bearer(scope: dict[str, Any]) -> str:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""
