"""services.broadcast: what reaches a run's watchers over Redis pub/sub, and when."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from channels.layers import get_channel_layer
from django.db import transaction

from planner_ui.services.broadcast import after_commit, group_channel, messages_held
from planner_ui.services.events import run_group
from planner_ui.services.redis_store import redis_client

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = run_group(920001)
QUIET_S = 0.2


class Listener:
    """A plain subscriber to the group's channel, as an ASGI server's feed is."""

    def __init__(self) -> None:
        self.pubsub = redis_client().pubsub()
        self.pubsub.subscribe(group_channel(GROUP))
        # The subscription is confirmed before anything is published.
        assert self.pubsub.get_message(timeout=5)["type"] == "subscribe"

    def received(self, quiet_s: float = QUIET_S) -> list[int]:
        """The numbers of the messages that came, once none has come for `quiet_s`."""
        numbers = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(ignore_subscribe_messages=True, timeout=quiet_s)
            if message is None:
                break
            numbers.append(get_channel_layer().deserialize(message["data"])["n"])
        return numbers


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.pubsub.close()


def _publish(n: int, *, hold: bool = False) -> None:
    after_commit().publish_all([(GROUP, {"type": "run.text", "n": n})], hold=hold)


def test_a_held_message_goes_with_the_next_one(listener):
    with messages_held():
        _publish(1, hold=True)
        assert listener.received() == []
        _publish(2)
        assert listener.received() == [1, 2]


def test_a_held_message_goes_with_a_transactions_messages_when_it_commits(listener):
    with messages_held():
        _publish(1, hold=True)
        with transaction.atomic():
            _publish(2)
            assert listener.received() == []
        assert listener.received() == [1, 2]


def test_what_is_still_held_goes_when_the_block_ends(listener):
    with messages_held():
        _publish(1, hold=True)
        _publish(2, hold=True)
        assert listener.received() == []
    assert listener.received() == [1, 2]


def test_outside_a_block_nothing_is_held(listener):
    _publish(1, hold=True)
    assert listener.received() == [1]
