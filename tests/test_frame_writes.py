"""agentsite.frame_writes: Daphne's frames sent at once, in order, over real TCP sockets.

Each test runs a Twisted server in a process of its own (a reactor cannot run twice in one
process) and talks to it with a plain socket from here."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A server that, once a client connects, writes CHUNKS: small and large writes mixed, more than
# a socket's buffers take at once, so some go at once and the rest wait in Twisted's buffer;
# then it closes. It prints its port, and at the end how many writes went at once.
_SERVER = """
import sys
from twisted.internet import asyncioreactor
asyncioreactor.install()
from twisted.internet import protocol, reactor, tcp
from agentsite.frame_writes import eager_writes

installed = eager_writes() if sys.argv[1] == "eager" else False
sizes = [int(size) for size in sys.argv[2].split(",")]
sent_at_once = [0]
deferred_writes = tcp.Connection.write
def counted(self, data):
    if not self.dataBuffer and not self._tempDataBuffer:
        sent_at_once[0] += 1
    deferred_writes(self, data)
tcp.Connection.write = counted

class Writer(protocol.Protocol):
    def connectionMade(self):
        for number, size in enumerate(sizes):
            self.transport.write(bytes([number % 251]) * size)
        self.transport.loseConnection()
    def connectionLost(self, reason):
        print("lost", sent_at_once[0], flush=True)
        reactor.callLater(0, reactor.stop)

factory = protocol.Factory.forProtocol(Writer)
port = reactor.listenTCP(0, factory, interface="127.0.0.1")
print("port", port.getHost().port, "eager", installed, flush=True)
reactor.run()
"""

_SIZES = [10, 70_000, 3, 1_000_000, 200, 2_500_000, 1, 65_536, 40_000, 7] * 3


def _server(mode: str) -> tuple[subprocess.Popen, int, bool]:
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, mode, ",".join(map(str, _SIZES))],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    words = process.stdout.readline().split()
    assert words[0] == "port", words
    return process, int(words[1]), words[3] == "True"


def _expected() -> str:
    digest = hashlib.sha256()
    for number, size in enumerate(_SIZES):
        digest.update(bytes([number % 251]) * size)
    return digest.hexdigest()


def _read_all(port: int, *, wait_s: float) -> str:
    """Everything the server sends, after letting it fill the socket's buffers for `wait_s`."""
    digest = hashlib.sha256()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        time.sleep(wait_s)
        while chunk := client.recv(1 << 16):
            digest.update(chunk)
    return digest.hexdigest()


def _finished(process: subprocess.Popen) -> str:
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    return out


def test_writes_go_at_once_and_arrive_whole_and_in_order_with_a_slow_reader():
    process, port, installed = _server("eager")
    assert installed
    assert _read_all(port, wait_s=0.5) == _expected()
    # The first writes went at once; the rest waited behind what the socket did not take.
    sent_at_once = int(_finished(process).split()[1])
    assert 2 <= sent_at_once < len(_SIZES)


def test_twisted_s_own_writes_send_the_same_bytes():
    process, port, installed = _server("deferred")
    assert not installed
    assert _read_all(port, wait_s=0.5) == _expected()
    # Twisted's own: the first write waits for the loop like the rest, and the others join it.
    assert int(_finished(process).split()[1]) == 1


def test_a_client_that_leaves_at_once_costs_the_server_nothing_but_the_connection():
    process, port, _ = _server("eager")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    out = _finished(process)  # the server saw the connection lost, and stopped cleanly
    assert out.startswith("lost")


def test_a_twisted_without_what_it_relies_on_keeps_its_own_writes():
    code = (
        "import logging; logging.basicConfig()\n"
        "from twisted.internet import abstract, tcp\n"
        "del abstract.FileDescriptor._writeDisconnected\n"
        "from agentsite.frame_writes import eager_writes\n"
        "before = tcp.Connection.write\n"
        "print(eager_writes(), tcp.Connection.write is before)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.stdout.split() == ["False", "True"]
    assert "has no ['_writeDisconnected']: its writes stay deferred" in shown.stderr


def test_autobahn_s_log_arguments_are_plain_text():
    code = (
        "import autobahn.util\n"
        "from agentsite.frame_writes import plain_log_arguments\n"
        "print(plain_log_arguments(), repr(autobahn.util.hlval(42)))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert shown.stdout.split() == ["True", "'42'"]
