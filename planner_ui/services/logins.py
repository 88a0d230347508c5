"""A WebSocket's login is checked once, at its handshake; these end it when the login ends.

Logging out, changing the password, deactivating or deleting the user all end logins that
sockets opened earlier may still carry: before, a socket opened before a logout went on
receiving the run's events. Each of those tells the user's sockets (logins_group) to close
with CLOSE_LOGIN_CHANGED; the page reconnects at once, and the new handshake is authorized
afresh with whatever login the browser holds by then (none after a logout, the new session
after a password change). The server decides nothing per socket: a socket cannot argue."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model, user_logged_out
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest

from .broadcast import after_commit


def logins_group(user_id: int) -> str:
    """The channel-layer group of every WebSocket a user's browser sessions opened."""
    return f"logins-{user_id}"


def logins_changed(user_id: int) -> None:
    """Close the user's sockets once the change is committed; each reconnects if it may."""
    after_commit().publish(logins_group(user_id), {"type": "logins.changed"})


def _logged_out(sender: Any, request: HttpRequest, user: Any, **_: Any) -> None:
    if user is None:
        return
    # Django sends this signal before it deletes the session: delete it first, so that no
    # socket that reconnects at once finds it still logged in.
    request.session.flush()
    logins_changed(user.pk)


def _user_saved(
    sender: Any, instance: Any, created: bool = False, update_fields: Any = None, **_: Any
) -> None:
    # A new user has no sockets yet, and every login saves last_login alone: that ends nothing.
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    # A password or is_active change is what matters; any other save costs the user's few
    # sockets a reconnect, which is cheaper than remembering the old values to compare.
    logins_changed(instance.pk)


def _user_deleted(sender: Any, instance: Any, **_: Any) -> None:
    logins_changed(instance.pk)


def connect_signals() -> None:
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="agentsite-logins-logged-out")
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="agentsite-logins-saved")
    post_delete.connect(_user_deleted, sender=user_model, dispatch_uid="agentsite-logins-deleted")
