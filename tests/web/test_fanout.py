"""One subscription per run and process, shared by its watchers, on the real Redis channel
layer."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from planner_ui.fanout import fanout
from planner_ui.services.broadcast import group_publish
from planner_ui.services.events import event_append, run_group

from .test_consumer import _connect, _receive_events_until_replay_done, _setup

pytestmark = pytest.mark.asyncio


class Collecting:
    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.arrived = asyncio.Event()

    async def forward(self, message: dict) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def flush(self) -> None:
        pass  # sent nothing to gather


class Broken:
    async def forward(self, message: dict) -> None:
        raise RuntimeError("this socket is gone")

    async def flush(self) -> None:
        raise RuntimeError("this socket is gone")


def _text(group: str, n: int) -> tuple[str, dict]:
    return group, {"type": "run.text", "json": json.dumps({"n": n})}


async def _until(watcher: Collecting, count: int) -> list[int]:
    async with asyncio.timeout(5):
        while len(watcher.messages) < count:
            watcher.arrived.clear()
            await watcher.arrived.wait()
    return [json.loads(m["json"])["n"] for m in watcher.messages]


async def test_watchers_in_one_process_share_one_feed_and_each_gets_every_message():
    group = run_group(910001)
    watchers = [Collecting() for _ in range(3)]
    for watcher in watchers:
        await fanout().join(group, watcher)
    assert list(fanout().feeds) == [group]
    assert list(fanout().feeds[group].watchers) == watchers

    group_publish([_text(group, 1), _text(group, 2)])

    for watcher in watchers:
        assert await _until(watcher, 2) == [1, 2]
    for watcher in watchers:
        await fanout().leave(group, watcher)
    assert fanout().feeds == {}


async def test_a_watcher_that_fails_does_not_stop_the_others():
    group = run_group(910002)
    before, after = Collecting(), Collecting()
    for watcher in (before, Broken(), after):
        await fanout().join(group, watcher)

    group_publish([_text(group, 1)])
    group_publish([_text(group, 2)])

    assert await _until(before, 2) == [1, 2]
    assert await _until(after, 2) == [1, 2]
    for watcher in list(fanout().feeds[group].watchers):
        await fanout().leave(group, watcher)


async def test_after_the_last_watcher_leaves_a_new_one_starts_a_new_feed():
    group = run_group(910003)
    gone = Collecting()
    await fanout().join(group, gone)
    await fanout().leave(group, gone)
    assert group not in fanout().feeds

    group_publish([_text(group, 1)])  # nobody here listens to this run now
    new = Collecting()
    await fanout().join(group, new)
    group_publish([_text(group, 2)])

    assert await _until(new, 1) == [2]
    assert gone.messages == []
    await fanout().leave(group, new)


async def test_watchers_joining_at_once_wait_for_the_one_subscription():
    group = run_group(910004)
    first, second = Collecting(), Collecting()
    await asyncio.gather(fanout().join(group, first), fanout().join(group, second))
    assert list(fanout().feeds[group].watchers) == [first, second]

    # Both joins returned subscribed: what is published now reaches both.
    group_publish([_text(group, 1)])
    assert await _until(first, 1) == [1]
    assert await _until(second, 1) == [1]
    await fanout().leave(group, first)
    await fanout().leave(group, second)


@pytest.mark.django_db(transaction=True)
async def test_pages_watching_one_run_share_its_feed_and_one_closing_leaves_the_other(make_user):
    _, run, cookie = await _setup(make_user)
    pages = []
    for _ in range(2):
        ws, connected, _ = await _connect(run.pk, cookie)
        assert connected
        assert await _receive_events_until_replay_done(ws) == []
        pages.append(ws)
    assert len(fanout().feeds[run_group(run.pk)].watchers) == 2

    append = database_sync_to_async(event_append)
    await append(run.pk, "plan.invalid", {"attempt": 1, "errors": []})
    for ws in pages:
        assert json.loads(await ws.receive_from(timeout=5))["event"]["seq"] == 1

    await pages[0].disconnect()
    assert len(fanout().feeds[run_group(run.pk)].watchers) == 1
    await append(run.pk, "plan.invalid", {"attempt": 2, "errors": []})
    assert json.loads(await pages[1].receive_from(timeout=5))["event"]["seq"] == 2
    await pages[1].disconnect()
    assert run_group(run.pk) not in fanout().feeds


async def test_a_subscription_that_fails_is_each_joiners_error_and_leaves_no_feed():
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from agentsite.embedded import free_port
    from planner_ui.fanout import Fanout

    nowhere = Fanout(RedisPubSubChannelLayer(hosts=[f"redis://127.0.0.1:{free_port()}"]))
    group = run_group(910005)
    outcomes = await asyncio.gather(
        nowhere.join(group, Collecting()),
        nowhere.join(group, Collecting()),
        return_exceptions=True,
    )
    # The second joiner waited for the first, saw it fail and tried for itself.
    assert [type(outcome).__name__ for outcome in outcomes] == ["ConnectionError"] * 2
    assert nowhere.feeds == {}


async def test_a_receive_that_fails_is_tried_again_and_the_feed_goes_on(settings):
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from planner_ui.fanout import Fanout

    class FailsOnce:
        """The real layer, whose first receive fails."""

        def __init__(self) -> None:
            self.real = RedisPubSubChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"])
            self.failed = False

        def __getattr__(self, name: str):
            return getattr(self.real, name)

        async def receive(self, channel: str) -> dict:
            if not self.failed:
                self.failed = True
                raise ConnectionError("Redis went away for a moment")
            return await self.real.receive(channel)

    layer = FailsOnce()
    feeds = Fanout(layer)
    group = run_group(910006)
    watcher = Collecting()
    await feeds.join(group, watcher)

    group_publish([_text(group, 1)])

    assert await _until(watcher, 1) == [1]
    assert layer.failed
    await feeds.leave(group, watcher)
