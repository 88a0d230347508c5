"""Rules of docs/write-protocol.md that no other test held: what a rollback gives back.

The first is not transactional: it runs in a transaction of pytest-django's, so what a
transaction would hand on at commit stays visible in the connection's on-commit hooks."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from planner_ui.models import Run, RunEvent
from planner_ui.services.broadcast import AfterCommit
from planner_ui.services.event_buffer import EventBuffer
from planner_ui.services.events import event_append

pytestmark = [pytest.mark.database, pytest.mark.django_db]


def _invalid(attempt: int) -> dict:
    return {"attempt": attempt, "errors": []}


def _logged(run: Run) -> list[tuple[int, int]]:
    return list(RunEvent.objects.filter(run=run).values_list("seq", "payload__attempt"))


def _handed_on() -> list[int]:
    """The sequence numbers of the events the open transactions publish once they commit."""
    hooks = [hook for _, hook, _ in connection.run_on_commit if isinstance(hook, AfterCommit)]
    return [message["seq"] for hook in hooks for _group, message in hook.messages]


class Undone(Exception):
    pass


def test_a_rollback_takes_back_the_events_their_numbers_and_their_messages(make_user):
    run = Run.objects.create(owner=make_user(), task="t")

    with pytest.raises(Undone), transaction.atomic():
        event_append(run.pk, "plan.invalid", _invalid(1))
        assert _handed_on() == [1]
        raise Undone

    assert _logged(run) == []
    assert _handed_on() == []  # nothing is published of what did not happen
    with transaction.atomic():
        event_append(run.pk, "plan.invalid", _invalid(2))
    assert _logged(run) == [(1, 2)]  # its number was given back: no gap
    assert _handed_on() == [1]


@pytest.mark.django_db(transaction=True)  # events are held only outside a transaction
def test_held_events_a_rolled_back_try_took_are_held_again_for_the_next(make_user):
    run = Run.objects.create(owner=make_user(), task="t")

    with EventBuffer() as events:
        events.hold(run.pk, [("plan.invalid", _invalid(1), "")])
        with pytest.raises(Undone), events.given_back_on_rollback(), transaction.atomic():
            events.append(run.pk, "plan.invalid", _invalid(2))  # takes the held one with it
            assert _logged(run) == [(1, 1), (2, 2)]
            raise Undone
        assert _logged(run) == []
        with transaction.atomic():  # the next try, as a finish that starts over
            events.append(run.pk, "plan.invalid", _invalid(3))

    assert _logged(run) == [(1, 1), (2, 3)]
