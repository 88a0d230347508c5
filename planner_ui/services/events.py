"""Append to a run's event log and stream the event to its watchers once committed.

The rules (numbering, holding, what a rollback gives back): docs/write-protocol.md, rules 5,
9, 10 and 11."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import connection

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
    run_id: int,
    events: list[tuple[EventType | str, dict[str, Any], str]],
    *,
    hold: bool = False,
) -> list[RunEvent]:
    """Store several events of the run, given as (type, payload, step_id), in their order:
    one sequence UPDATE and one INSERT for all of them instead of two statements each (a
    step that unblocks thirty others queues thirty events).

    With `hold`, outside a transaction and within an events_held block, they are stored with
    the run's next events instead (and not returned)."""
    if not events:
        return []
    kinds = [(check_event(type, payload), payload, step_id) for type, payload, step_id in events]
    pending = _pending.get()
    if pending is not None:
        if hold and not connection.in_atomic_block:
            pending.append((run_id, kinds))
            return []
        if earlier := _take(pending, run_id):
            kinds = earlier + kinds
    stored = _unnumbered(run_id, kinds)
    held = _held.get()
    if held is not None and held[0] == run_id:
        held[1].extend(stored)  # numbered and stored where events_at_end's block ends
        return stored
    # Inside a caller's transaction the events live or die with it; outside one they are one
    # statement on PostgreSQL and one transaction elsewhere (sql.insert_numbered).
    _number_and_store(stored)
    return stored


Kind = tuple[EventType, dict[str, Any], str]

# The events held back in this thread to go with the next ones of their run (events_held).
_pending: ContextVar[list[tuple[int, list[Kind]]] | None] = ContextVar(
    "pending_events", default=None
)


@contextmanager
def events_held() -> Iterator[None]:
    """Within the block, events appended with `hold` are numbered and stored with the next
    events of their run that this thread appends, just before them (in their transaction, if
    one is open); what is still held at the end is stored then.

    A step's model call is recorded just before the step ends or calls its first tool. Its
    event, numbered and published on its own, cost a write transaction (on SQLite, one more
    wait for the write lock), a Redis round trip, and a pass of each ASGI server over the run's
    watchers; numbered where it was published but sent later, it held up every later event
    at the watchers until it came. Held, it goes with the step's end or its tool call. The call
    itself (its row, the totals, the budget) is stored at once; a process that dies in between
    loses the event, not the call."""
    pending: list[tuple[int, list[Kind]]] = []
    token = _pending.set(pending)
    try:
        yield
    finally:
        _pending.reset(token)
        for run_id, kinds in pending:
            try:
                events_append(run_id, kinds)
            except Exception:  # the block's own error, if any, is the one to raise
                log.exception("could not store a held event of run %s", run_id)


@contextmanager
def events_held_again() -> Iterator[None]:
    """Events held (events_held) that a transaction in the block took and then rolled back are
    held again, for the next try: a finish that starts over stores them with its end."""
    pending = _pending.get()
    saved = list(pending) if pending is not None else []
    try:
        yield
    except BaseException:
        if pending is not None:
            pending[:] = saved
        raise


def _take(pending: list[tuple[int, list[Kind]]], run_id: int) -> list[Kind]:
    """The events held for `run_id`, taken out of `pending`, in their order."""
    taken = [kind for held_run, kinds in pending if held_run == run_id for kind in kinds]
    if taken:
        pending[:] = [(held_run, kinds) for held_run, kinds in pending if held_run != run_id]
    return taken


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


def _unnumbered(run_id: int, kinds: list[Kind]) -> list[RunEvent]:
    return [
        RunEvent(run_id=run_id, seq=0, type=kind, step_id=step_id, payload=payload)
        for kind, payload, step_id in kinds
    ]


def _number_and_store(events: list[RunEvent]) -> None:
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
    PostgreSQL), as _number_and_store publishes the ones it stores: after commit."""
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
