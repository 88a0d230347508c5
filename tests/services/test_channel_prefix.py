"""Two installs on one Redis server: pub/sub ignores the database number, so only their prefixes
keep their watchers apart."""

from __future__ import annotations

import asyncio

import pytest
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings


@pytest.mark.asyncio
async def test_two_prefixes_do_not_hear_each_other():
    # The same server, even "different" databases: pub/sub channels are server-wide.
    hosts = [{"address": settings.REDIS_URL}]
    ours = RedisPubSubChannelLayer(hosts=hosts, prefix="install-a")
    theirs = RedisPubSubChannelLayer(hosts=hosts, prefix="install-b")
    try:
        channel = await ours.new_channel()
        await ours.group_add("run-1", channel)
        # One receive waits throughout: cancelling a receive unsubscribes the channel.
        received = asyncio.ensure_future(ours.receive(channel))
        await theirs.group_send("run-1", {"type": "run.event", "from": "b"})
        await asyncio.sleep(0.5)
        assert not received.done()
        await ours.group_send("run-1", {"type": "run.event", "from": "a"})
        assert (await asyncio.wait_for(received, timeout=2))["from"] == "a"
    finally:
        await ours.flush()
        await theirs.flush()
