"""The events of a step that wait: a model call's, held for the step's next event, and a
shared finish's, numbered as its transaction's last statements.

One EventBuffer is made where a step's task starts (steps.step_execute) and passed down to
whatever appends the step's events (its executor's callback, its metered provider, its finish
and the dispatch that finish does); nothing finds it any other way. Code that appends no
waiting event calls events.event_append and needs no buffer.

The rules it keeps: docs/write-protocol.md, rules 5 (numbered at the end), 10 (held events)
and 11 (what a rollback gives back)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from django.db import connection

from planner_ui.core.events import EventType
from planner_ui.models import RunEvent

from .events import Kind, events_checked, events_number, events_unnumbered

log = logging.getLogger(__name__)

Event = tuple[EventType | str, dict[str, Any], str]


class EventBuffer:
    """A step's waiting events, within `with EventBuffer() as events:`.

    - `hold`: a model call's event is held back and stored just before the next events of its
      run appended through the buffer (in their transaction), or when the block ends.
    - `append` / `append_all`: the events of a change, stored now, after what is held for their
      run; inside `at_end(run_id)`, numbered and stored where that block ends.
    - `given_back_on_rollback`: held events a transaction in the block took are held again if
      it rolls back, for the next try.
    - the block's end stores what is still held, and raises if it cannot.

    A model call's event, numbered and published on its own, cost a write transaction (on
    SQLite, one more wait for the write lock), a Redis round trip, and a pass of each ASGI
    server over the run's watchers; numbered where it was published but sent later, it held up
    every later event at the watchers until it came. Held, it goes with the step's end or its
    tool call. The call itself (its row, the totals, the budget) is stored at once; a process
    that dies in between loses the event, not the call.

    Not shared between threads: one buffer per task, as the task runs one step at a time."""

    def __init__(self) -> None:
        self._open = False
        # Held for the next events of their run, in the order they were held.
        self._held: list[tuple[int, list[Kind]]] = []
        # The run whose events wait for the end of an at_end block, and those events.
        self._at_end: tuple[int, list[RunEvent]] | None = None

    def __enter__(self) -> EventBuffer:
        self._open = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._open = False
        if exc is None:
            self.flush()
            return
        try:
            self.flush()
        except Exception as lost:
            # The block's own error (a finish that could not be recorded, a crash) says what
            # went wrong with the step, and is the one its task must report and retry on; a
            # held event that could not follow it is logged, and named on that error.
            log.exception("could not store the held events of a step that raised")
            exc.add_note(f"and its held events were not stored: {type(lost).__name__}: {lost}")

    def hold(self, run_id: int, events: Sequence[Event]) -> None:
        """Hold the run's events (checked now) for its next events appended through the buffer.
        Outside the block, and inside a transaction (which could roll back what they tell
        of), they are stored at once: held, they would live on after it."""
        kinds = events_checked(events)
        if not kinds:
            return
        if self._open and not connection.in_atomic_block:
            self._held.append((run_id, kinds))
            return
        self._store(run_id, kinds)

    def append(
        self,
        run_id: int,
        type: EventType | str,
        payload: dict[str, Any] | None = None,
        *,
        step_id: str = "",
    ) -> RunEvent:
        """Store the run's next event as events.event_append does, after what is held for it."""
        return self.append_all(run_id, [(type, payload or {}, step_id)])[0]

    def append_all(self, run_id: int, events: Sequence[Event]) -> list[RunEvent]:
        """Store the run's events as events.events_append does, after what is held for it;
        the events given, stored (or waiting for the end of an at_end block)."""
        if not events:
            return []
        return self._store(run_id, events_checked(events))

    def flush(self) -> None:
        """Store what is still held, each run's in one append. Raises what storing raised; what
        was not stored stays held."""
        while self._held:
            with self.given_back_on_rollback():
                self._store(self._held[0][0], [])

    @contextmanager
    def given_back_on_rollback(self) -> Iterator[None]:
        """Held events that a transaction in the block takes are held again if the block
        raises (the transaction rolled back with them): a finish that starts over stores them
        with its end."""
        saved = list(self._held)
        try:
            yield
        except BaseException:
            self._held[:] = saved
            raise

    @contextmanager
    def at_end(self, run_id: int) -> Iterator[None]:
        """Inside a transaction: the run's events appended through the buffer in the block are
        numbered and stored together as its last statements, in their order (dropped if it
        raises).

        Numbering takes the run's row until commit (the UPDATE of its counter), and on
        PostgreSQL that serializes whatever else appends to the run: taken at the end, it is
        held for the last statement and the commit instead of the whole transaction. Nothing
        inside the block may read the events it appended back from the database, and every
        event of the run appended in it must come through the buffer (events_append would
        number it before the ones waiting here)."""
        waiting: list[RunEvent] = []
        outer, self._at_end = self._at_end, (run_id, waiting)
        try:
            yield
        finally:
            self._at_end = outer
        events_number(waiting)

    def _store(self, run_id: int, kinds: list[Kind]) -> list[RunEvent]:
        """The run's held events, then `kinds`: numbered and stored now, or at the end of the
        run's at_end block. Returns those of `kinds`."""
        taken = self._take(run_id)
        stored = events_unnumbered(run_id, taken + kinds)
        if self._at_end is not None and self._at_end[0] == run_id:
            self._at_end[1].extend(stored)  # numbered and stored where at_end's block ends
        else:
            events_number(stored)
        return stored[len(taken) :]

    def _take(self, run_id: int) -> list[Kind]:
        """The events held for `run_id`, taken out of the buffer, in their order."""
        taken = [kind for held_run, kinds in self._held if held_run == run_id for kind in kinds]
        if taken:
            self._held[:] = [(held, kinds) for held, kinds in self._held if held != run_id]
        return taken
