"""What Daphne spends on each frame it sends, cut where the libraries under it spend it for
nothing.

Daphne sends a WebSocket frame through autobahn and Twisted, and with fifty watchers of a run
every event goes out fifty times. Beside the send itself, `make bench-watchers` put Daphne's
time per frame in two places that do no work a watcher needs (docs/benchmark-history.md,
twenty-first round):

- Twisted sends nothing when asked to write: it registers the socket with the event loop for
  writability, sends from the loop's callback and unregisters it, two `epoll_ctl` calls and a
  callback a frame. `eager_writes` sends at once what comes with nothing waiting before it, as
  asyncio's own transports do; what the socket does not take waits and goes as before, so the
  bytes keep their order, and a lost connection is found by Twisted's next write as before.
- autobahn builds the arguments of a debug message for every frame it sends, coloured with
  click, whether or not anything logs at debug. `plain_log_arguments` has them uncoloured.

Together they took Daphne's CPU an event delivered from 17.5 to 12.5 µs. Each is applied only
where the library still has what it relies on, and is otherwise left out with a warning: a
release that moves them costs speed, never a frame.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# What eager_writes reads and calls on a Twisted TCP connection: on the class (or its
# FileDescriptor base), and set on each connection when it is made.
_CLASS_NEEDS = ("TLS", "connected", "disconnecting", "_writeDisconnected", "dataBuffer")
_INIT_NEEDS = ("_tempDataBuffer",)


def frame_writes_cheaper() -> None:
    """Both, in this process: for Daphne's, before it serves anything."""
    eager_writes()
    plain_log_arguments()


def eager_writes() -> bool:
    """Twisted's TCP connections send a write at once when nothing waits before it; whether
    they do now."""
    from twisted.internet import tcp

    connection = tcp.Connection
    if getattr(connection.write, "eager", False):
        return True
    missing = [name for name in _CLASS_NEEDS if not hasattr(connection, name)]
    missing += [name for name in _INIT_NEEDS if name not in _assigned_in_init(connection)]
    if not callable(getattr(connection, "writeSomeData", None)):
        missing.append("writeSomeData")
    if missing:
        log.warning("Twisted's TCP connection has no %s: its writes stay deferred", missing)
        return False
    deferred = connection.write

    def write(self: Any, data: bytes) -> None:
        if (
            data
            and not self.TLS
            and self.connected
            and not self.disconnecting
            and not self._writeDisconnected
            and not self.dataBuffer
            and not self._tempDataBuffer
        ):
            sent = self.writeSomeData(data)
            if isinstance(sent, int):  # else the connection is lost: Twisted's write finds it
                if sent >= len(data):
                    return
                data = data[sent:]
        deferred(self, data)

    write.eager = True  # type: ignore[attr-defined]
    connection.write = write
    return True


def _assigned_in_init(cls: type) -> set[str]:
    """The attribute names the __init__ of `cls` or of its bases assigns to."""
    names: set[str] = set()
    for base in cls.__mro__:
        init = base.__dict__.get("__init__")
        if init is not None and hasattr(init, "__code__"):
            names.update(init.__code__.co_names)
    return names


def plain_log_arguments() -> bool:
    """autobahn's log arguments are plain text, not coloured with click; whether they are."""
    import autobahn.util

    if not hasattr(autobahn.util, "_HAS_CLICK"):
        log.warning("autobahn.util has no _HAS_CLICK: its log arguments stay coloured")
        return False
    autobahn.util._HAS_CLICK = False
    return True
