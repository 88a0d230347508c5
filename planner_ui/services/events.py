"""Append to a run's event log and stream the event to its watchers once committed."""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from planner_ui.core.events import EventType, check_event
from planner_ui.models import Run, RunEvent

log = logging.getLogger(__name__)


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def user_broadcast(user_id: int, message: dict[str, Any]) -> None:
    """Tell a user's open pages (the approvals badge and inbox) that something changed."""
    try:
        async_to_sync(get_channel_layer().group_send)(
            user_group(user_id), {"type": "user.notice", "notice": message}
        )
    except Exception:
        log.warning("could not notify user %s", user_id, exc_info=True)


def owner_notify(run_id: int) -> None:
    """Tell the run owner's open pages (the approvals badge, the inbox), after commit."""
    owner_id = Run.objects.filter(pk=run_id).values_list("owner_id", flat=True).first()
    if owner_id is not None:
        transaction.on_commit(lambda: user_broadcast(owner_id, {"type": "approvals.changed"}))


def event_append(
    run_id: int,
    type: EventType | str,
    payload: dict[str, Any] | None = None,
    *,
    step_id: str = "",
) -> RunEvent:
    """Store the next event of the run; broadcast it after the transaction commits."""
    payload = payload or {}
    kind = check_event(type, payload)
    with transaction.atomic():
        # The UPDATE locks the run row until commit, so sequence numbers never collide.
        Run.objects.filter(pk=run_id).update(last_event_seq=F("last_event_seq") + 1)
        seq = Run.objects.filter(pk=run_id).values_list("last_event_seq", flat=True).get()
        event = RunEvent.objects.create(
            run_id=run_id, seq=seq, type=kind, step_id=step_id, payload=payload
        )
        transaction.on_commit(lambda: _broadcast(run_id, event.as_message()))
    return event


def _broadcast(run_id: int, message: dict[str, Any]) -> None:
    # The event is already stored; a watcher that misses it gets it on replay.
    try:
        async_to_sync(get_channel_layer().group_send)(
            run_group(run_id),
            # Serialized once here, forwarded as it is to every watcher.
            {
                "type": "run.event",
                "seq": message["seq"],
                "json": json.dumps({"type": "event", "event": message}),
            },
        )
    except Exception:
        log.warning(
            "could not broadcast event %s of run %s", message.get("seq"), run_id, exc_info=True
        )
