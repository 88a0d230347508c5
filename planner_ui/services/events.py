"""Append to a run's event log and stream the event to its watchers once committed.

The rules (numbering, publishing after commit): docs/write-protocol.md, rules 5 and 9. A step's
events that wait (held, numbered at the end) go through services.event_buffer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from planner_ui.core.events import EventType, check_event
from planner_ui.models import Run, RunEvent
from planner_ui.stores import sql

from .broadcast import after_commit


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
    run_id: int, events: Sequence[tuple[EventType | str, dict[str, Any], str]]
) -> list[RunEvent]:
    """Store several events of the run, given as (type, payload, step_id), in their order:
    one sequence UPDATE and one INSERT for all of them instead of two statements each (a
    step that unblocks thirty others queues thirty events).

    Inside a caller's transaction the events live or die with it; outside one they are one
    statement on PostgreSQL and one transaction elsewhere (sql.insert_numbered). A step's
    events that wait (a model call's, or a shared finish's) go through its EventBuffer
    (services.event_buffer) instead."""
    stored = events_unnumbered(run_id, events_checked(events))
    events_number(stored)
    return stored


# An event checked against the catalogue: its type, payload and step.
Kind = tuple[EventType, dict[str, Any], str]


def events_checked(events: Sequence[tuple[EventType | str, dict[str, Any], str]]) -> list[Kind]:
    """The events, each refused (core.events.check_event) unless its type is in the catalogue
    and its payload has exactly that type's keys."""
    return [(check_event(type, payload), payload, step_id) for type, payload, step_id in events]


def events_unnumbered(run_id: int, kinds: list[Kind]) -> list[RunEvent]:
    """The run's checked events as rows not yet numbered nor stored (events_number does both)."""
    return [
        RunEvent(run_id=run_id, seq=0, type=kind, step_id=step_id, payload=payload)
        for kind, payload, step_id in kinds
    ]


def events_number(events: list[RunEvent]) -> None:
    """Number events of one run from its row and store them, in the caller's transaction;
    publish them after commit. The counter's UPDATE locks the run row until commit, so
    sequence numbers never collide."""
    if not events:
        return
    sql.insert_numbered(events, "seq", _NEXT_SEQS, [len(events), events[0].run_id])
    # In one round trip to Redis once they are committed, as the transaction's other messages.
    after_commit().publish_all(_message(event) for event in events)


def events_stored(events: list[RunEvent]) -> None:
    """Publish events a caller's own statement numbered and stored (steps' one-statement claim on
    PostgreSQL), as events_number publishes the ones it stores: after commit."""
    after_commit().publish_all(_message(event) for event in events)


def _message(event: RunEvent) -> tuple[str, dict[str, Any]]:
    return (
        run_group(event.run_id),
        # Serialized once here, forwarded as it is to every watcher.
        {
            "type": "run.event",
            "seq": event.seq,
            "json": json.dumps({"type": "event", "event": event.as_message()}),
        },
    )


_NEXT_SEQS = (
    f"UPDATE {sql.table(Run)} SET last_event_seq = last_event_seq + %s "
    "WHERE id = %s RETURNING last_event_seq AS last"
)
