"""`python -m agentsite.launcher`: the whole app on one machine, as `make run` starts it.

Migrates the database, makes sure the demo user exists, starts the embedded Redis (unless
REDIS_URL points at one), Daphne and one Celery worker, and waits until they answer. Their logs
go to var/logs/; warnings, errors and tracebacks from Daphne and the worker are echoed here too.
Ctrl-C or SIGTERM stops them all, last-started first. If one of them dies, the others are
stopped and the launcher exits 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from agentsite import embedded
from agentsite.file_modes import open_private, private_dir
from planner_ui.core.redaction import redact_url
from planner_ui.tools.sandbox import commands_from_environment

BASE_DIR = embedded.BASE_DIR
WORKER_START_TIMEOUT_S = 60.0
HTTP_START_TIMEOUT_S = 60.0
MODEL_START_TIMEOUT_S = 120.0
# Each offline model call takes this long under `make run` (AGENTSITE_OFFLINE_LATENCY_S
# overrides): a newcomer's first run lasts seconds, not a blink, so its page is seen streaming.
# Elsewhere (tests, runtask) the default is 0.
DEMO_OFFLINE_LATENCY_S = "0.3"


class LaunchError(Exception):
    """Startup failed in a way the message explains; the launcher prints it and exits 1."""


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log_path: Path


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    stop_requested = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _request_stop(stop_requested))

    var_dir, socket_path = _embedded_paths()
    log_dir = private_dir(var_dir / "logs")
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    env.setdefault("AGENTSITE_OFFLINE_LATENCY_S", DEMO_OFFLINE_LATENCY_S)
    children: list[Child] = []
    try:
        _manage(env, "migrate", "--noinput", log_path=log_dir / "migrate.log")
        login = _manage(env, "ensure_demo_user")  # not logged: it prints the password
        redis_note = _bring_up_redis(env, socket_path, log_dir, children)
        _say(f"Redis: {redis_note}")
        if model := env.get("AGENTSITE_LOCAL_MODEL"):
            note = _bring_up_local_model(Path(model), env, log_dir, children, stop_requested)
            _say(f"Model: {note}")

        daphne = embedded.start_daphne(
            env=env, host=args.host, port=args.port, log_path=log_dir / "daphne.log"
        )
        children.append(Child("daphne", daphne, log_dir / "daphne.log"))
        worker_name = f"agentsite-{os.getpid()}"
        worker = embedded.start_worker(
            env=env,
            concurrency=args.concurrency,
            hostname=f"{worker_name}@%h",
            log_path=log_dir / "worker.log",
            beat=True,  # the one worker also runs the periodic sweep
        )
        children.append(Child("celery worker", worker, log_dir / "worker.log"))
        # Serves the models an admin starts from the form (AGENTSITE_LOCAL_MODEL's is above).
        supervisor = embedded.start_model_supervisor(env=env, log_path=log_dir / "models.log")
        children.append(Child("model supervisor", supervisor, log_dir / "models.log"))
        for child in children:
            if child.name != "redis-server":
                _echo_problems(child)

        url = f"http://{_browser_host(args.host)}:{args.port}/"
        _wait_while_alive(
            lambda timeout: embedded.wait_for_http(url, timeout=timeout),
            children,
            stop_requested,
            HTTP_START_TIMEOUT_S,
            f"Daphne did not answer on {url}",
        )
        # The ping goes through the settings' broker: REDIS_URL, or the embedded socket.
        _wait_while_alive(
            lambda timeout: embedded.wait_for_worker(f"{worker_name}@", timeout=timeout),
            children,
            stop_requested,
            WORKER_START_TIMEOUT_S,
            "The Celery worker did not answer a ping",
        )
        if not stop_requested.is_set():
            _print_banner(url, login, [child.log_path for child in children])
        while not stop_requested.wait(0.5):
            if dead := _first_dead(children):
                _report_death(dead)
                return 1
        return 0
    except LaunchError as error:
        if stop_requested.is_set():
            return 0  # Ctrl-C during startup: whatever failed, it was asked to
        _say(f"Error: {error}")
        if dead := _first_dead(children):
            _report_death(dead)
        return 1
    finally:
        if children:
            _say("Stopping " + ", ".join(child.name for child in reversed(children)) + " ...")
            embedded.stop_processes([child.process for child in children])
            _say("Stopped.")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m agentsite.launcher",
        description="Run agentsite on this machine: Redis (embedded), Daphne and a Celery worker.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address Daphne binds to")
    parser.add_argument("--port", type=int, default=8000, help="port Daphne listens on")
    parser.add_argument(
        "--concurrency", type=int, default=4, help="processes of the Celery worker's pool"
    )
    return parser.parse_args(argv)


def _request_stop(stop_requested: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        if not stop_requested.is_set():
            _say(f"\n{signal.Signals(signum).name} received.")
        stop_requested.set()

    return handler


def _embedded_paths() -> tuple[Path, Path]:
    """var/ and the embedded Redis socket, as the settings define them."""
    # The settings module is plain Python: importing it configures nothing in Django.
    from agentsite import settings

    return Path(settings.VAR_DIR), Path(settings.EMBEDDED_REDIS_SOCKET)


def _manage(env: dict[str, str], *command: str, log_path: Path | None = None) -> str:
    """Run a manage.py command; return what it printed, or raise with its output."""
    _say(f"manage.py {' '.join(command)} ...")
    result = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=BASE_DIR,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if log_path is not None:
        with open_private(log_path, "w") as log:
            log.write(result.stdout)
    if result.returncode != 0:
        raise LaunchError(
            f"manage.py {' '.join(command)} failed with exit code {result.returncode}:\n"
            + result.stdout.rstrip()
        )
    return result.stdout.strip()


def _bring_up_redis(
    env: dict[str, str], socket_path: Path, log_dir: Path, children: list[Child]
) -> str:
    """Start the embedded Redis, or check the one REDIS_URL names; say which."""
    if external := env.get("REDIS_URL"):
        if not embedded.redis_ping(external, timeout=3.0):
            raise LaunchError(
                f"REDIS_URL is {redact_url(external)}, and no Redis answers there. Start that "
                "Redis, or unset REDIS_URL to use the embedded one."
            )
        return f"{redact_url(external)} (from REDIS_URL)"
    log_path = log_dir / "redis.log"
    try:
        process = embedded.start_redis(socket_path, log_path=log_path)
    except RuntimeError as error:
        raise LaunchError(str(error)) from error
    children.append(Child("redis-server", process, log_path))
    env["REDIS_URL"] = f"unix://{socket_path}"
    return f"embedded, on {socket_path}"


def _bring_up_local_model(
    model: Path,
    env: dict[str, str],
    log_dir: Path,
    children: list[Child],
    stop_requested: threading.Event,
) -> str:
    """Start llama.cpp's server for the model and route every part of a run to it, unless a
    route of the environment says otherwise; say which."""
    if not model.is_file():
        raise LaunchError(f"AGENTSITE_LOCAL_MODEL is {model}, and there is no file there.")
    port = embedded.free_port()
    log_path = log_dir / "model.log"
    # e.g. "--ctx 32768 --parallel 4 --seed 7" (python -m agentsite.local_model --help)
    extra = shlex.split(env.get("AGENTSITE_LOCAL_MODEL_ARGS", ""))
    process = embedded.start_local_model(model, port=port, env=env, log_path=log_path, extra=extra)
    children.append(Child("local model", process, log_path))
    base_url = f"http://127.0.0.1:{port}/v1"
    _wait_while_alive(
        # llama.cpp's /health answers 503 until the model is loaded, then 200.
        lambda timeout: embedded.wait_for_ok(f"http://127.0.0.1:{port}/health", timeout=timeout),
        children,
        stop_requested,
        MODEL_START_TIMEOUT_S,
        f"The local model did not answer on {base_url} (see {log_path})",
    )
    name = model.stem
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="local", OPENAI_MODEL=name)
    env["AGENTSITE_PROVIDER"] = "openai"
    for part in ("PLANNER", "EXECUTOR"):
        env.setdefault(f"AGENTSITE_{part}_MODEL", f"openai:{name}")
    return f"{model.name}, served by llama.cpp at {base_url}"


def _wait_while_alive(
    wait: Callable[[float], None],
    children: list[Child],
    stop_requested: threading.Event,
    timeout: float,
    failure: str,
) -> None:
    """Call wait(timeout=1) until it succeeds, giving up when a child dies or Ctrl-C comes."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if stop_requested.is_set():
            raise LaunchError("stopped during startup")
        if _first_dead(children):
            raise LaunchError(f"{failure}: a process exited during startup.")
        try:
            wait(1.0)
            return
        except RuntimeError as error:
            last_error = error
    raise LaunchError(f"{failure} within {timeout:g} s ({last_error}).")


def _first_dead(children: list[Child]) -> Child | None:
    return next((child for child in children if child.process.poll() is not None), None)


def _report_death(child: Child) -> None:
    _say(f"{child.name} exited unexpectedly with exit code {child.process.returncode}.")
    if tail := embedded.log_tail(child.log_path):
        _say(f"Last lines of {child.log_path}:\n{tail}")


# A log record of level WARNING or above, in Celery's format ("WARNING/MainProcess"),
# Python's default ("ERROR:name:"), or a bare Django one ("Internal Server Error: /").
_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Internal Server Error|^Traceback ")


def _echo_problems(child: Child) -> None:
    """Follow a child's log in a thread; echo warnings, errors and whole tracebacks."""
    label = f"[{child.name}] "

    def follow() -> None:
        in_traceback = False
        with open(child.log_path, "rb") as log:
            while True:
                raw = log.readline()
                if not raw:
                    if child.process.poll() is not None:
                        return
                    time.sleep(0.2)
                    continue
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                if line.startswith("Traceback "):
                    in_traceback = True
                if in_traceback:
                    print(label + line, file=sys.stderr, flush=True)
                    # The traceback ends with its first unindented line after the header.
                    if line and not line[0].isspace() and not line.startswith("Traceback "):
                        in_traceback = line.startswith("During handling") or line.startswith(
                            "The above exception"
                        )
                elif _PROBLEM.search(line):
                    print(label + line, file=sys.stderr, flush=True)

    threading.Thread(target=follow, name=f"log {child.name}", daemon=True).start()


def _print_banner(url: str, login: str, log_paths: list[Path]) -> None:
    login_line = next(
        (line for line in login.splitlines() if line.startswith("Log in as")),
        login or "(ensure_demo_user printed no login)",
    )
    rule = "=" * 72
    _say(
        f"\n{rule}\n"
        f"  agentsite is running at {url}\n"
        f"  {commands_from_environment().describe()}\n"
        f"  {login_line}\n"
        f"  Logs: {', '.join(str(path) for path in log_paths)}\n"
        f"        (warnings and errors are shown here too)\n"
        f"  Ctrl-C to stop\n"
        f"{rule}\n"
    )


def _browser_host(bind_host: str) -> str:
    """The address a browser on this machine uses for a server bound to bind_host."""
    if bind_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bind_host == "::":
        return "[::1]"
    return f"[{bind_host}]" if ":" in bind_host else bind_host


def _say(message: str) -> None:
    print(message, flush=True)


if __name__ == "__main__":
    sys.exit(main())
