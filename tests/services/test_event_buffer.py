"""services.event_buffer: a step's waiting events, held, taken, given back and stored at the end,
where a failure to store them is raised (docs/write-protocol.md, rules 10 and 11). How held
events are numbered among the run's others is in test_events.py."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction

from planner_ui.models import Run, RunEvent
from planner_ui.services.event_buffer import EventBuffer

# Events are held only outside a transaction, as a worker runs a step.
pytestmark = [pytest.mark.database, pytest.mark.django_db(transaction=True)]


def _invalid(attempt: int) -> dict:
    return {"attempt": attempt, "errors": []}


def _logged(run_id: int) -> list[tuple[int, int]]:
    return list(RunEvent.objects.filter(run_id=run_id).values_list("seq", "payload__attempt"))


def _hold(events: EventBuffer, run_id: int, attempt: int) -> None:
    events.hold(run_id, [("plan.invalid", _invalid(attempt), "")])


class StepCrashed(Exception):
    pass


def test_an_append_takes_what_is_held_for_its_run_and_returns_only_its_own(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    with EventBuffer() as events:
        _hold(events, run.pk, 1)
        _hold(events, run.pk, 2)
        (appended,) = events.append_all(run.pk, [("plan.invalid", _invalid(3), "")])
        assert (appended.seq, appended.payload["attempt"]) == (3, 3)
        assert _logged(run.pk) == [(1, 1), (2, 2), (3, 3)]
        assert events.append(run.pk, "plan.invalid", _invalid(4)).seq == 4


def test_a_hold_is_refused_at_once_when_its_event_is_not_in_the_catalogue(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    with EventBuffer() as events, pytest.raises(ValueError, match="missing errors"):
        events.hold(run.pk, [("plan.invalid", {"attempt": 1}, "")])  # its "errors" missing
    assert _logged(run.pk) == []


def test_what_a_rolled_back_finish_took_is_held_again_and_stored_at_the_end(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    with EventBuffer() as events:
        _hold(events, run.pk, 1)
        # As a shared finish tries: its events numbered at its end, which it never reaches.
        with (
            pytest.raises(StepCrashed),
            events.given_back_on_rollback(),
            transaction.atomic(),
            events.at_end(run.pk),
        ):
            events.append(run.pk, "plan.invalid", _invalid(2))
            raise StepCrashed
        assert _logged(run.pk) == []
    assert _logged(run.pk) == [(1, 1)]


def test_a_failure_to_store_what_is_held_at_the_end_is_raised(make_user):
    run = Run.objects.create(owner=make_user(), task="t")
    events = EventBuffer()
    # The run's counter row is gone (a person deleted the run while its step ran): how the
    # numbering statement fails depends on the database's form of it.
    with pytest.raises((ValueError, IndexError)), events:
        _hold(events, run.pk, 1)
        Run.objects.filter(pk=run.pk).delete()


def test_what_could_not_be_stored_stays_held_with_what_came_after_it(make_user):
    owner = make_user()
    gone, kept = (Run.objects.create(owner=owner, task=t) for t in ("t", "u"))
    events = EventBuffer()
    with pytest.raises((ValueError, IndexError)), events:
        _hold(events, gone.pk, 1)
        _hold(events, kept.pk, 2)
        Run.objects.filter(pk=gone.pk).delete()
    assert _logged(kept.pk) == []
    events.append(kept.pk, "plan.invalid", _invalid(3))
    assert _logged(kept.pk) == [(1, 2), (2, 3)]


def test_the_blocks_own_error_is_raised_and_a_failure_to_store_is_logged_on_it(make_user, caplog):
    run = Run.objects.create(owner=make_user(), task="t")
    caplog.set_level(logging.ERROR, logger="planner_ui.services.event_buffer")
    with pytest.raises(StepCrashed) as raised, EventBuffer() as events:
        _hold(events, run.pk, 1)
        Run.objects.filter(pk=run.pk).delete()
        raise StepCrashed("the finish could not be recorded")
    assert str(raised.value) == "the finish could not be recorded"
    (note,) = raised.value.__notes__
    assert note.startswith("and its held events were not stored: ")
    (record,) = caplog.records
    assert record.getMessage() == "could not store the held events of a step that raised"
    assert record.exc_info is not None
