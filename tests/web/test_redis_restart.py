"""The channel layer as the settings configure it, across a Redis restart: the first consumer
to subscribe afterwards gets its channel. A Daphne whose watchers had all left kept its idle
pub/sub connection, which the restart had closed; the next subscription was written to it and
failed (ConnectionError), and that WebSocket's handshake got a 500."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

from agentsite import embedded


@pytest.mark.asyncio
async def test_the_first_subscription_after_a_redis_restart_succeeds(tmp_path_factory):
    socket = Path(tmp_path_factory.mktemp("layer")) / "r.sock"
    config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
    (host,) = config["hosts"]
    layer = RedisPubSubChannelLayer(
        hosts=[{**host, "address": f"unix://{socket}"}], prefix=config["prefix"]
    )
    redis_server = embedded.start_redis(socket)
    try:
        # A watcher came and went: the connection stays, subscribed to nothing.
        left = asyncio.ensure_future(layer.receive(await layer.new_channel()))
        await asyncio.sleep(0.1)
        left.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await left
        await asyncio.sleep(0.5)  # the server confirmed: the connection is idle
        embedded.stop_processes([redis_server])
        redis_server = embedded.start_redis(socket)

        channel = await layer.new_channel()
        await layer.group_add("run-1", channel)
        received = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(0.2)  # the subscription has reached the server
        await layer.group_send("run-1", {"type": "run.event", "seq": 1})
        assert (await asyncio.wait_for(received, timeout=5))["seq"] == 1
    finally:
        await layer.flush()
        embedded.stop_processes([redis_server])
