"""Personal API tokens: made (and shown) once, kept as a SHA-256 digest, revoked for good.

A token is 32 random bytes, so a plain SHA-256 of it is as safe to keep as a slow password
hash, and it can be looked up by its digest in one indexed query.

A WebSocket a token opened joins the token's group (token_group); revoking the token tells the
group, and its sockets close."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planner_ui.core.errors import AgentError
from planner_ui.models import ApiToken

from .broadcast import after_commit

TOKEN_PREFIX = "ast_"
MAX_TOKENS_PER_USER = 20
MAX_NAME_CHARS = 100
# last_used_at is written at most this often per token: not one write per request.
LAST_USED_EVERY = timedelta(minutes=1)


class TokenRefused(AgentError):
    """A token could not be made or revoked; the message says why."""


def token_group(token_id: int) -> str:
    """The channel-layer group of the WebSockets a token opened."""
    return f"token-{token_id}"


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for `user`; returns it with its secret, which is not kept anywhere."""
    name = name.strip()
    if not name:
        raise TokenRefused("Give the token a name, e.g. the script or machine that will use it.")
    if len(name) > MAX_NAME_CHARS:
        raise TokenRefused(f"The name is {len(name)} characters long; at most {MAX_NAME_CHARS}.")
    with transaction.atomic():
        active = ApiToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True)
        if active.count() >= MAX_TOKENS_PER_USER:
            raise TokenRefused(
                f"You have {MAX_TOKENS_PER_USER} tokens already: revoke one you no longer use."
            )
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken.objects.create(
            user=user, name=name, prefix=raw[: len(TOKEN_PREFIX) + 6], digest=_digest(raw)
        )
    return token, raw


def token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of the user's tokens; another user's token does not exist for them."""
    token = ApiToken.objects.get(pk=token_id, user=user)
    if token.revoked_at is None:
        with transaction.atomic():
            ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )
            # Its open sockets close once the revocation is committed (consumers.py).
            after_commit().publish(token_group(token.pk), {"type": "token.revoked"})
        token.refresh_from_db()
    return token


def token_is_live(token_id: int) -> bool:
    """Whether the token still opens anything: not revoked, its user active."""
    return ApiToken.objects.filter(
        pk=token_id, revoked_at__isnull=True, user__is_active=True
    ).exists()


def token_user(raw: str) -> tuple[ApiToken, User] | None:
    """The token and its active user for a presented secret, or None."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=_digest(raw), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token, token.user
