"""The process helpers, on real processes: redis-server, a Celery worker, plain Python children."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsite import embedded


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: pytest's tmp_path can be too long for a unix socket."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="emb-", dir="/tmp") as folder:
        yield Path(folder)


def test_redis_server_binary_is_executable() -> None:
    assert os.access(embedded.redis_server_binary(), os.X_OK)


def test_start_redis_answers_ping_and_stops_cleanly(short_tmp: Path) -> None:
    socket_path = short_tmp / "redis.sock"
    log_path = short_tmp / "logs" / "redis.log"

    process = embedded.start_redis(socket_path, log_path=log_path)
    try:
        assert embedded.redis_ping(f"unix://{socket_path}")
    finally:
        embedded.stop_processes([process])

    assert process.returncode == 0
    assert not embedded.redis_ping(f"unix://{socket_path}")
    assert not socket_path.exists()  # redis-server removes its socket when it shuts down
    assert "ready to accept connections" in log_path.read_text()


def test_start_redis_replaces_a_stale_socket_file(short_tmp: Path) -> None:
    socket_path = short_tmp / "redis.sock"
    socket_path.write_text("left behind by a killed redis-server")

    process = embedded.start_redis(socket_path)
    try:
        assert embedded.redis_ping(f"unix://{socket_path}")
    finally:
        embedded.stop_processes([process])


def test_start_redis_refuses_a_socket_where_a_redis_answers(short_tmp: Path) -> None:
    socket_path = short_tmp / "redis.sock"
    process = embedded.start_redis(socket_path)
    try:
        with pytest.raises(RuntimeError) as raised:
            embedded.start_redis(socket_path)
        assert str(raised.value) == (
            f"A Redis already answers on {socket_path} (is another `make run` running?). "
            "Stop it, or set REDIS_URL to use it."
        )
        assert embedded.redis_ping(f"unix://{socket_path}")  # the first one is untouched
    finally:
        embedded.stop_processes([process])


def test_start_redis_rejects_a_socket_path_too_long(short_tmp: Path) -> None:
    socket_path = short_tmp / ("d" * 100) / "redis.sock"
    length = len(str(socket_path))

    with pytest.raises(RuntimeError) as raised:
        embedded.start_redis(socket_path)

    assert str(raised.value) == (
        f"Redis socket path is too long ({length} bytes, the limit is 107): {socket_path}. "
        "Set AGENTSITE_VAR_DIR to a shorter folder."
    )
    assert not socket_path.parent.exists()  # refused before anything was created


def test_redis_ping_is_false_where_nothing_listens(short_tmp: Path) -> None:
    assert embedded.redis_ping(f"redis://127.0.0.1:{embedded.free_port()}/0", timeout=0.5) is False
    assert embedded.redis_ping(f"unix://{short_tmp}/missing.sock", timeout=0.5) is False
    assert embedded.redis_ping("not a url") is False


def test_free_port_can_be_bound() -> None:
    port = embedded.free_port()

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen()


def test_wait_for_http_counts_an_error_status_as_an_answer() -> None:
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        embedded.wait_for_http(f"http://127.0.0.1:{server.server_port}/", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_wait_for_ok_waits_while_a_model_server_is_loading() -> None:
    answers = [503, 503, 200]

    class Loading(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = answers.pop(0) if len(answers) > 1 else answers[0]
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loading)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        embedded.wait_for_ok(f"http://127.0.0.1:{server.server_port}/health", timeout=10)
        assert answers == [200]  # it asked until the 200
        answers[:] = [503]
        with pytest.raises(RuntimeError, match="did not answer 200 within 0.5 s"):
            embedded.wait_for_ok(f"http://127.0.0.1:{server.server_port}/health", timeout=0.5)
    finally:
        server.shutdown()
        server.server_close()


def test_wait_for_http_gives_up_after_its_timeout() -> None:
    url = f"http://127.0.0.1:{embedded.free_port()}/"

    with pytest.raises(RuntimeError, match=r"^No HTTP answer from .* within 0.5 s"):
        embedded.wait_for_http(url, timeout=0.5)


def test_stop_processes_kills_what_ignores_sigterm_and_skips_the_dead() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
    already_dead = subprocess.Popen([sys.executable, "-c", "pass"])
    already_dead.wait()

    embedded.stop_processes([already_dead, stubborn], grace=0.5)

    assert stubborn.returncode == -9
    assert already_dead.returncode == 0
    embedded.stop_processes([already_dead, stubborn])  # stopping twice is fine
    stubborn.stdout.close()


def test_wait_for_worker_names_the_missing_worker_on_timeout() -> None:
    with pytest.raises(RuntimeError) as raised:
        embedded.wait_for_worker("no-such-worker@", timeout=1.5)

    assert str(raised.value).startswith(
        "No Celery worker whose name starts with 'no-such-worker@' answered a ping within 1.5 s"
    )


@pytest.mark.stack
def test_start_worker_answers_wait_for_worker(short_tmp: Path) -> None:
    socket_path = short_tmp / "redis.sock"
    env = {
        "AGENTSITE_VAR_DIR": str(short_tmp / "var"),
        "REDIS_URL": f"unix://{socket_path}",
        "DJANGO_SETTINGS_MODULE": "agentsite.settings",
    }
    redis_process = embedded.start_redis(socket_path)
    worker_log = short_tmp / "worker.log"
    worker = embedded.start_worker(
        env=env, concurrency=1, hostname="embeddedtest@%h", log_path=worker_log
    )
    try:
        # The ping goes through the broker of the settings, so ask from a process whose
        # settings point at this Redis.
        waiter = subprocess.run(
            [
                sys.executable,
                "-c",
                "from agentsite.embedded import wait_for_worker\n"
                "wait_for_worker('embeddedtest@', timeout=60)\n",
            ],
            cwd=embedded.BASE_DIR,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert waiter.returncode == 0, waiter.stderr + embedded.log_tail(worker_log)
    finally:
        embedded.stop_processes([redis_process, worker])

    assert worker.returncode == 0  # a warm shutdown
    assert ".> agentsite " in worker_log.read_text()  # consumes the agentsite queue
