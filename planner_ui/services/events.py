"""Append to a run's event log and stream the event to its watchers once committed."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import transaction

from planner_ui.core.events import EventType, check_event
from planner_ui.models import Run, RunEvent

from . import sql
from .broadcast import after_commit

log = logging.getLogger(__name__)


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def user_broadcast(user_id: int, message: dict[str, Any]) -> None:
    """Tell a user's open pages (the approvals badge and inbox) that something changed."""
    after_commit().publish(user_group(user_id), {"type": "user.notice", "notice": message})


def owner_notify(run_id: int) -> None:
    """Tell the run owner's open pages (the approvals badge, the inbox), after commit."""
    owner_id = Run.objects.filter(pk=run_id).values_list("owner_id", flat=True).first()
    if owner_id is not None:
        user_broadcast(owner_id, {"type": "approvals.changed"})


def event_append(
    run_id: int,
    type: EventType | str,
    payload: dict[str, Any] | None = None,
    *,
    step_id: str = "",
) -> RunEvent:
    """Store the next event of the run; publish it to the run's watchers once the transaction
    commits, with the transaction's other events, after its tasks are enqueued."""
    return events_append(run_id, [(type, payload or {}, step_id)])[0]


def events_append(
    run_id: int, events: list[tuple[EventType | str, dict[str, Any], str]]
) -> list[RunEvent]:
    """Store several events of the run, given as (type, payload, step_id), in their order:
    one sequence UPDATE and one INSERT for all of them instead of two statements each (a
    step that unblocks thirty others queues thirty events)."""
    if not events:
        return []
    kinds = [(check_event(type, payload), payload, step_id) for type, payload, step_id in events]
    # No savepoint of its own: inside a caller's transaction the events live or die with it.
    with transaction.atomic(savepoint=False):
        # The UPDATE locks the run row until commit, so sequence numbers never collide.
        ((last,),) = sql.rows(_NEXT_SEQS, [len(kinds), run_id])
        return _store(run_id, last - len(kinds) + 1, kinds)


def event_record(
    run_id: int, seq: int, type: EventType, payload: dict[str, Any], *, step_id: str = ""
) -> RunEvent:
    """Store an event whose sequence number the caller took from the run's row in this same
    transaction (services.accounting bumps it with the usage totals); publish it after commit."""
    return _store(run_id, seq, [(check_event(type, payload), payload, step_id)])[0]


def _store(
    run_id: int, first_seq: int, kinds: list[tuple[EventType, dict[str, Any], str]]
) -> list[RunEvent]:
    """Insert checked events numbered from `first_seq` in one statement; publish after commit."""
    stored = [
        RunEvent(run_id=run_id, seq=first_seq + n, type=kind, step_id=step_id, payload=payload)
        for n, (kind, payload, step_id) in enumerate(kinds)
    ]
    sql.insert_many(stored)
    for event in stored:
        _publish(event)
    return stored


def _publish(event: RunEvent) -> None:
    message = event.as_message()
    after_commit().publish(
        run_group(event.run_id),
        # Serialized once here, forwarded as it is to every watcher.
        {
            "type": "run.event",
            "seq": event.seq,
            "json": json.dumps({"type": "event", "event": message}),
        },
    )


_NEXT_SEQS = (
    f"UPDATE {sql.table(Run)} SET last_event_seq = last_event_seq + %s "
    "WHERE id = %s RETURNING last_event_seq"
)
