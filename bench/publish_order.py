"""The order a run's events are published in, as Redis delivers them to any subscriber.

Every process publishes a transaction's events after its commit (services.broadcast), so two
steps that commit close together may publish in either order; the run consumer forwards in
sequence order and holds an early event back until the one before it arrives. This subscriber
records each run event's arrival beside the watchers, so the benchmark can say how often that
happens and how long the holds last (metrics.publish_holds), and how much of a watcher's wait
had passed by the time the event was published at all (metrics.publish_delays): the rest is
Daphne's.
"""

from __future__ import annotations

import threading
import time

from channels.layers import get_channel_layer

from planner_ui.services.broadcast import group_channel
from planner_ui.services.events import run_group
from planner_ui.stores.redis_store import redis_client


class PublishOrder:
    """Subscribed to one run's group from `start()` to `stop()`, on a thread of its own."""

    def __init__(self, run_id: int) -> None:
        self.channel = group_channel(run_group(run_id))
        self.arrivals: list[tuple[float, int]] = []
        # (arrival on the wall clock, the message as the consumer forwards it), parsed later
        self.published: list[tuple[float, str]] = []
        self._halt = threading.Event()
        self._pubsub = redis_client().pubsub(ignore_subscribe_messages=True)
        self._thread = threading.Thread(target=self._listen, name="publish-order", daemon=True)

    def start(self) -> None:
        self._pubsub.subscribe(self.channel)  # subscribed once this returns
        self._thread.start()

    def stop(self) -> list[tuple[float, int]]:
        """(arrival on the monotonic clock, sequence number) of each run event, as they came."""
        self._halt.set()
        self._thread.join(timeout=5)
        self._pubsub.close()
        return self.arrivals

    def _listen(self) -> None:
        deserialize = get_channel_layer().deserialize
        while not self._halt.is_set():
            message = self._pubsub.get_message(timeout=0.1)
            if message is None:
                continue
            arrived, arrived_wall = time.monotonic(), time.time()
            body = deserialize(message["data"])
            if body.get("type") == "run.event":
                self.arrivals.append((arrived, body["seq"]))
                self.published.append((arrived_wall, body["json"]))
