"""Watchers of one run: real WebSocket clients of Daphne, stamping each message on arrival.

A minimal RFC 6455 client on asyncio's Protocol API, because the venv has no WebSocket client
library and the benchmark wants the cheapest possible one: fifty clients share one thread, and
whatever a client spends on a message delays the arrival stamp of the next client's copy. So a
message is only stamped and kept here; it is parsed after the run.
"""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import threading
import time
from collections.abc import Coroutine
from typing import Any

CONNECT_TIMEOUT_S = 30.0

_CLOSE, _PING, _PONG = 0x8, 0x9, 0xA


class WebSocketError(RuntimeError):
    """Daphne refused or dropped a client before it was subscribed."""


def _frame(opcode: int, payload: bytes = b"") -> bytes:
    """A client frame: final, masked (clients must mask), with the payload's length."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    return header + mask + masked


class _Client(asyncio.Protocol):
    def __init__(self, request: bytes) -> None:
        self.request = request
        self.buffer = bytearray()
        self.fragments = bytearray()
        self.upgraded = asyncio.get_running_loop().create_future()
        self.replayed = asyncio.Event()
        self.closed = asyncio.Event()
        self.received: list[tuple[float, bytes]] = []
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.upgraded.done():
            self.upgraded.set_exception(WebSocketError(f"connection lost before upgrade: {exc}"))
        self.closed.set()

    def data_received(self, data: bytes) -> None:
        arrived = time.time()  # before any work, so parsing never counts as latency
        self.buffer += data
        if not self.upgraded.done():
            head, sep, rest = bytes(self.buffer).partition(b"\r\n\r\n")
            if not sep:
                return
            status = head.split(b"\r\n", 1)[0]
            if b" 101 " not in status + b" ":
                self.upgraded.set_exception(WebSocketError(status.decode("latin-1")))
                return
            self.upgraded.set_result(None)
            self.buffer = bytearray(rest)
        self._frames(arrived)

    def _frames(self, arrived: float) -> None:
        while len(self.buffer) >= 2:
            first, second = self.buffer[0], self.buffer[1]
            length, offset = second & 0x7F, 2
            if length == 126:
                if len(self.buffer) < 4:
                    return
                length, offset = struct.unpack_from("!H", self.buffer, 2)[0], 4
            elif length == 127:
                if len(self.buffer) < 10:
                    return
                length, offset = struct.unpack_from("!Q", self.buffer, 2)[0], 10
            if second & 0x80:  # servers do not mask; skip a mask if one came anyway
                offset += 4
            if len(self.buffer) < offset + length:
                return
            payload = bytes(self.buffer[offset : offset + length])
            if second & 0x80:
                mask = self.buffer[offset - 4 : offset]
                payload = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
            del self.buffer[: offset + length]
            self._message(first & 0x80, first & 0x0F, payload, arrived)

    def _message(self, final: int, opcode: int, payload: bytes, arrived: float) -> None:
        if opcode == _PING:
            self._send(_PONG, payload)
        elif opcode == _CLOSE:
            self._send(_CLOSE, payload[:2])
            self.transport.close()
        elif opcode != _PONG:
            self.fragments += payload  # a text frame, or a continuation of one
            if final:
                text, self.fragments = bytes(self.fragments), bytearray()
                self.received.append((arrived, text))
                if b'"replay.done"' in text[:40]:
                    self.replayed.set()

    def _send(self, opcode: int, payload: bytes = b"") -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_frame(opcode, payload))

    async def close(self) -> None:
        self._send(_CLOSE, struct.pack("!H", 1000))
        try:
            await asyncio.wait_for(self.closed.wait(), 2.0)
        except TimeoutError:
            self.transport.abort()


async def _connect(host: str, port: int, path: str, cookie: str) -> _Client:
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n"
        f"Origin: http://{host}:{port}\r\n"  # Channels' origin check wants an allowed host
        f"Cookie: {cookie}\r\n"
        "\r\n"
    ).encode()
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: _Client(request), host, port)
    await client.upgraded
    await client.replayed.wait()  # subscribed and caught up: what follows arrives live
    return client


class Watchers:
    """Clients on one run's WebSocket, served by an event loop in a thread of its own."""

    def __init__(self, host: str, ports: list[int], cookie: str, *, batch: bool = True) -> None:
        # Clients are dealt out over the ports, one ASGI server each, in turn. As the run page
        # with no step open, they follow no step's live text (`&text=`); `batch`: they read
        # the events that arrive together in one frame, as the page does (`&batch=1`).
        self.host, self.ports, self.cookie = host, ports, cookie
        self.query = ("&batch=1" if batch else "") + "&text="
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="watchers", daemon=True)
        self.thread.start()
        self.clients: list[_Client] = []

    def _call(self, coroutine: Coroutine[Any, Any, Any], timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def watch(self, run_id: int, after: int, count: int) -> None:
        """Connect `count` clients that want the run's events after seq `after`; return once
        every one of them is subscribed."""
        path = f"/ws/runs/{run_id}/?after={after}{self.query}"

        async def connect_all() -> list[_Client]:
            return await asyncio.gather(
                *(
                    _connect(self.host, self.ports[i % len(self.ports)], path, self.cookie)
                    for i in range(count)
                )
            )

        self.clients = self._call(connect_all(), CONNECT_TIMEOUT_S) if count else []

    def watch_many(self, after: dict[int, int], count: int) -> None:
        """Connect `count` clients dealt out over the runs of `after` (run id: the seq they want
        events after), in turn; return once every one of them is subscribed."""
        runs = list(after)

        async def connect_all() -> list[_Client]:
            return await asyncio.gather(
                *(
                    _connect(
                        self.host,
                        self.ports[i % len(self.ports)],
                        f"/ws/runs/{runs[i % len(runs)]}/?after={after[runs[i % len(runs)]]}"
                        + self.query,
                        self.cookie,
                    )
                    for i in range(count)
                )
            )

        self.clients = self._call(connect_all(), CONNECT_TIMEOUT_S) if count else []

    def wait_quiet(self, quiet_s: float, timeout: float) -> None:
        """Wait until no client has received anything for `quiet_s` (or `timeout` passed)."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            now = sum(len(c.received) for c in self.clients)
            if now == seen:
                return
            seen = now
            time.sleep(quiet_s)

    def wait_for_seq(self, seq: int, timeout: float) -> bool:
        """Wait until every client has received the event with this seq (the run's last one)."""
        deadline = time.monotonic() + timeout
        marker = f'"seq": {seq},'.encode()
        while time.monotonic() < deadline:
            if all(any(marker in raw for _, raw in c.received) for c in self.clients):
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> list[tuple[float, bytes]]:
        """Close every client; everything they received, stamped with its arrival time."""

        async def close_all() -> None:
            await asyncio.gather(*(client.close() for client in self.clients))

        if self.clients:
            self._call(close_all(), 10.0)
        received = [message for client in self.clients for message in client.received]
        self.clients = []
        return received

    def shutdown(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5.0)
