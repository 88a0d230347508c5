"""services.events: the run's event log, numbered without gaps in the order of commit."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from planner_ui.models import Run, RunEvent
from planner_ui.services.event_buffer import EventBuffer
from planner_ui.services.events import event_append, events_append

pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


def _invalid(attempt: int) -> dict:
    return {"attempt": attempt, "errors": []}


def test_events_held_to_the_end_of_a_block_are_numbered_and_stored_there(make_user):
    owner = make_user()
    run, other = (Run.objects.create(owner=owner, task=t) for t in ("t", "u"))
    event_append(run.pk, "plan.invalid", _invalid(0))
    events = EventBuffer()
    with transaction.atomic(), events.at_end(run.pk):
        first = events.append(run.pk, "plan.invalid", _invalid(1))
        assert RunEvent.objects.filter(run=run).count() == 1  # held, not stored yet
        events.append(other.pk, "plan.invalid", _invalid(1))  # another run's: at once
        assert RunEvent.objects.filter(run=other).count() == 1
        second = events.append(run.pk, "plan.invalid", _invalid(2))
    assert (first.seq, second.seq) == (2, 3)
    stored = RunEvent.objects.filter(run=run).values_list("seq", "payload__attempt")
    assert list(stored) == [(1, 0), (2, 1), (3, 2)]
    run.refresh_from_db()
    assert run.last_event_seq == 3


def test_a_block_that_raises_stores_and_numbers_none_of_its_events(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    events = EventBuffer()
    with pytest.raises(RuntimeError), transaction.atomic(), events.at_end(run.pk):
        events.append(run.pk, "plan.invalid", _invalid(1))
        raise RuntimeError("rolled back")
    event_append(run.pk, "plan.invalid", _invalid(2))
    assert list(RunEvent.objects.filter(run=run).values_list("seq", "payload__attempt")) == [(1, 2)]


def test_events_appended_outside_a_transaction_are_stored_together(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    kinds = [("plan.invalid", _invalid(n), "") for n in range(3)]
    with CaptureQueriesContext(connection) as queries:
        stored = events_append(run.pk, kinds)
    if connection.vendor == "postgresql":
        # Numbered and inserted in one statement, which needs no BEGIN and COMMIT around it.
        assert len(queries) == 1, [q["sql"] for q in queries]
    assert [event.seq for event in stored] == [1, 2, 3]
    assert list(RunEvent.objects.filter(run=run).values_list("seq", "payload__attempt")) == [
        (1, 0),
        (2, 1),
        (3, 2),
    ]


def _logged(run: Run) -> list[tuple[int, int]]:
    return list(RunEvent.objects.filter(run=run).values_list("seq", "payload__attempt"))


def _hold(events: EventBuffer, run: Run, attempt: int) -> None:
    events.hold(run.pk, [("plan.invalid", _invalid(attempt), "")])


def test_a_held_event_is_stored_just_before_the_next_events_of_its_run(make_user):
    owner = make_user()
    run, other = (Run.objects.create(owner=owner, task=t) for t in ("t", "u"))
    with EventBuffer() as events:
        _hold(events, run, 1)
        events.append(other.pk, "plan.invalid", _invalid(9))  # another run's does not take it
        assert _logged(run) == []
        events.append(run.pk, "plan.invalid", _invalid(2))
        assert _logged(run) == [(1, 1), (2, 2)]
        events.append(run.pk, "plan.invalid", _invalid(3))
    assert _logged(run) == [(1, 1), (2, 2), (3, 3)]
    assert _logged(other) == [(1, 9)]


def test_a_held_event_goes_into_the_next_transactions_events(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    with EventBuffer() as events:
        _hold(events, run, 1)
        with transaction.atomic(), events.at_end(run.pk):
            events.append(run.pk, "plan.invalid", _invalid(2))
            assert _logged(run) == []
    assert _logged(run) == [(1, 1), (2, 2)]


def test_what_is_still_held_is_stored_when_the_block_ends(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    with EventBuffer() as events:
        _hold(events, run, 1)
        _hold(events, run, 2)
        assert _logged(run) == []
    assert _logged(run) == [(1, 1), (2, 2)]


def test_nothing_is_held_outside_a_block_nor_inside_a_transaction(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    events = EventBuffer()
    _hold(events, run, 1)
    assert _logged(run) == [(1, 1)]
    with events:
        with transaction.atomic():  # it could roll back what the event tells of
            _hold(events, run, 2)
        assert _logged(run) == [(1, 1), (2, 2)]
