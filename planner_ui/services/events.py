"""Append to a run's event log and stream the event to its watchers once committed."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

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
    stored = _unnumbered(run_id, kinds)
    held = _held.get()
    if held is not None and held[0] == run_id:
        held[1].extend(stored)  # numbered and stored where events_at_end's block ends
        return stored
    # Inside a caller's transaction the events live or die with it; outside one they are one
    # statement on PostgreSQL and one transaction elsewhere (sql.insert_numbered).
    _number_and_store(stored)
    return stored


# The run whose events wait for the end of an events_at_end block, and those events.
_held: ContextVar[tuple[int, list[RunEvent]] | None] = ContextVar("held_events", default=None)


@contextmanager
def events_at_end(run_id: int) -> Iterator[None]:
    """Inside a transaction: the run's events appended in the block are numbered and stored
    together as its last statements, in their order (dropped if it raises).

    Numbering takes the run's row until commit (the UPDATE of its counter), and on PostgreSQL
    that serializes whatever else appends to the run: taken at the end, it is held for the last
    statement and the commit instead of the whole transaction. Nothing inside the block may
    read the events it appended back from the database."""
    held: list[RunEvent] = []
    token = _held.set((run_id, held))
    try:
        yield
    finally:
        _held.reset(token)
    _number_and_store(held)


def event_counted(
    run_id: int,
    type: EventType,
    payload: dict[str, Any],
    counter: str,
    params: list[Any],
    *,
    step_id: str = "",
    along: sql.Along = (),
    hold: bool = False,
) -> tuple[Any, ...]:
    """Store an event numbered by `counter`, an UPDATE of the run's row that adds 1 to its
    last_event_seq (RETURNING it first, as `last`) and changes more of it (services.accounting
    adds the usage totals), with the writes `along` it (sql.insert_numbered), in one statement
    where the database allows; publish it after commit (with `hold`, with the next messages
    where broadcast.messages_held holds them). Returns the row `counter` returned."""
    events = _unnumbered(run_id, [(check_event(type, payload), payload, step_id)])
    return _number_and_store(events, counter, params, along, hold=hold)


def _unnumbered(run_id: int, kinds: list[tuple[EventType, dict[str, Any], str]]) -> list[RunEvent]:
    return [
        RunEvent(run_id=run_id, seq=0, type=kind, step_id=step_id, payload=payload)
        for kind, payload, step_id in kinds
    ]


def _number_and_store(
    events: list[RunEvent],
    counter: str = "",
    params: list[Any] | None = None,
    along: sql.Along = (),
    *,
    hold: bool = False,
) -> tuple[Any, ...]:
    """Number events of one run from its row and store them, in the caller's transaction;
    publish them after commit. The counter's UPDATE locks the run row until commit, so
    sequence numbers never collide."""
    if not events:
        return ()
    if not counter:
        counter, params = _NEXT_SEQS, [len(events), events[0].run_id]
    counted = sql.insert_numbered(events, "seq", counter, params or [], along=along)
    # In one round trip to Redis once they are committed, as the transaction's other messages.
    after_commit().publish_all((_message(event) for event in events), hold=hold)
    return counted


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
