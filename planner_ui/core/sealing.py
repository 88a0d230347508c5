"""Secrets kept in the database (an admin's API keys) sealed with a key derived from the
installation's secret key: a copy of the database alone does not give them away.

Pure functions: the caller hands in the secret (Django's SECRET_KEY)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken

from .errors import AgentError

PREFIX = "sealed1:"
# Binds the derived key to this use: the same secret signs sessions and CSRF tokens.
_LABEL = b"agentsite provider credentials v1\0"


class Unreadable(AgentError):
    """A sealed value that this secret cannot open: it was sealed under another secret key."""


def _fernet(secret: str) -> Fernet:
    digest = hashlib.sha256(_LABEL + secret.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(text: str, secret: str) -> str:
    """`text` encrypted and authenticated; '' stays '' (nothing stored)."""
    if not text:
        return ""
    return PREFIX + _fernet(secret).encrypt(text.encode()).decode()


def unseal(stored: str, secret: str, fallbacks: Sequence[str] = ()) -> str:
    """The text `seal` sealed, with `secret` or one of the earlier secrets in `fallbacks`
    (a rotation under way). A value without the prefix is returned as it is: it was stored
    before sealing (or by hand), and reads as before."""
    if not stored.startswith(PREFIX):
        return stored
    token = stored[len(PREFIX) :].encode()
    for key in (secret, *fallbacks):
        try:
            return _fernet(key).decrypt(token).decode()
        except InvalidToken:
            continue
    raise Unreadable(
        "the stored key was sealed under another secret key (DJANGO_SECRET_KEY changed): "
        "enter it again in the admin, or list the old one in DJANGO_SECRET_KEY_FALLBACKS"
    )
