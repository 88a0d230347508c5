"""One subscription to a run's messages per ASGI process, shared by every watcher of the run
there.

Channels gives each consumer a subscription of its own: every event then wakes each watcher's
receive loop, which makes a new task and an `asyncio.wait` for it, once per watcher and
message. With fifty watchers that bookkeeping was about a third of Daphne's time. Here one task
per run and process receives each message once and hands it to every local watcher in turn,
without yielding between them, so a burst of events reaches fifty sockets in one pass of the
event loop. Once the burst is through (the pump waits for the next message), one task asks every
watcher to send what it gathered: a watcher that sends a burst as one frame
(consumers.RunConsumer with `?batch=1`) gathers until then. That ask waits
AGENTSITE_WS_BATCH_MS after the burst's first message, so that the messages of a layer's steps,
published a few milliseconds apart, go out together too.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any, Protocol

from channels.layers import get_channel_layer
from django.conf import settings

log = logging.getLogger(__name__)

RECEIVE_RETRY_S = 0.1


class Watcher(Protocol):
    async def forward(self, message: dict[str, Any]) -> None:
        """Take one message of the run's group. It may send (Daphne's send returns at once,
        with the frame in the socket's buffer) but must not wait for anything else: a watcher
        busy replaying keeps the message for later, so one watcher never holds up the rest."""

    async def flush(self) -> None:
        """Send what `forward` gathered rather than sent: called once the messages that came
        together have all been forwarded, under the same rule."""


class _Feed:
    def __init__(self) -> None:
        self.watchers: dict[Watcher, None] = {}  # a dict keeps the order they joined in
        # True once subscribed; False if the subscribing failed.
        self.subscribed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.channel: str | None = None
        self.pump: asyncio.Task[None] | None = None
        self.flushing: asyncio.Task[None] | None = None


class Fanout:
    """The feeds of one event loop: a run group's feed exists while a watcher of it is here."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.feeds: dict[str, _Feed] = {}

    async def join(self, group: str, watcher: Watcher) -> None:
        """Once this returns, every message published to `group` reaches `watcher`."""
        while (feed := self.feeds.get(group)) is not None:
            if await asyncio.shield(feed.subscribed):
                break
            # The watcher that was subscribing failed (with its own error): try afresh.
        else:
            feed = self.feeds[group] = _Feed()
            try:
                feed.channel = await self.layer.new_channel("fanout.")
                await self.layer.group_add(group, feed.channel)
            except BaseException:
                del self.feeds[group]
                feed.subscribed.set_result(False)
                raise
            feed.pump = asyncio.ensure_future(self._pump(feed, feed.channel))
            feed.subscribed.set_result(True)
        feed.watchers[watcher] = None

    async def leave(self, group: str, watcher: Watcher) -> None:
        feed = self.feeds.get(group)
        if feed is None or feed.watchers.pop(watcher, False) is False or feed.watchers:
            return
        del self.feeds[group]  # a watcher joining from here on starts a new feed
        if feed.pump is not None:
            feed.pump.cancel()  # the layer unsubscribes a channel whose receive is cancelled
        if feed.flushing is not None:
            feed.flushing.cancel()
        if feed.channel is not None:
            await self.layer.group_discard(group, feed.channel)

    async def _pump(self, feed: _Feed, channel: str) -> None:
        while True:
            try:
                message = await self.layer.receive(channel)
            except Exception:
                # The layer reconnects to Redis by itself; a feed that stopped here would
                # leave its watchers waiting for events that never come.
                log.exception("could not receive on %s; trying again", channel)
                await asyncio.sleep(RECEIVE_RETRY_S)
                continue
            for watcher in list(feed.watchers):
                try:
                    await watcher.forward(message)
                except Exception:
                    log.exception("a watcher could not take a message of %s", channel)
            # A task starts only after this one waits: the messages already received are all
            # forwarded by then. One per burst and feed, not one per watcher.
            if feed.flushing is None:
                feed.flushing = asyncio.ensure_future(self._flush(feed, channel))

    async def _flush(self, feed: _Feed, channel: str) -> None:
        # Measured on the benchmark's fan-out, 50 watchers: 5 ms halved the frames a watcher
        # got and cut Daphne's CPU a run by a quarter, at 5 ms more to each event's delivery.
        if window_ms := settings.AGENTSITE_WS_BATCH_MS:
            await asyncio.sleep(window_ms / 1000)
        feed.flushing = None
        for watcher in list(feed.watchers):
            try:
                await watcher.flush()
            except Exception:
                log.exception("a watcher could not send the messages of %s", channel)


_fanouts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Fanout] = weakref.WeakKeyDictionary()


def fanout() -> Fanout:
    """This event loop's Fanout (the channel layer, too, keeps its connections per loop)."""
    loop = asyncio.get_running_loop()
    found = _fanouts.get(loop)
    if found is None:
        found = _fanouts[loop] = Fanout(get_channel_layer())
    return found
