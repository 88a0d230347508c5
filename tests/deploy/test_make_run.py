"""`make run` as a new user runs it: the launcher with nothing in the environment (no secret
key, no Redis, no database, no API key) starts everything, the printed login works, and a task
submitted through the form runs to its deliverable."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsite.embedded import free_port
from tests.providers.test_local_model import smollm2

pytestmark = pytest.mark.stack

REPO = Path(__file__).resolve().parents[2]
# What a developer's shell may hold and a new user's does not (or must not matter).
DROPPED = ("DJANGO_", "AGENTSITE_", "REDIS_URL", "DATABASE_URL", "CELERY_", "ANTHROPIC_", "OPENAI_")


@pytest.fixture
def launched(request) -> Iterator[tuple[str, Path, str, subprocess.Popen]]:
    with tempfile.TemporaryDirectory(prefix="run-", dir="/tmp") as folder:
        var_dir = Path(folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
        # Only the folder (a short path, for the unix socket), and no remote model even so.
        env.update(AGENTSITE_VAR_DIR=str(var_dir), AGENTSITE_ALLOW_MODEL_REQUESTS="false")
        env.update(AGENTSITE_OFFLINE_LATENCY_S="0")  # `make run`'s demo latency: not in tests
        env.update(getattr(request, "param", {}))
        port = free_port()
        launcher = subprocess.Popen(
            [sys.executable, "-m", "agentsite.launcher", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            seen = []
            for line in launcher.stdout:
                seen.append(line)
                if "Log in as" in line and "http" in "".join(seen):
                    break
                if line.startswith("Stopped") or launcher.poll() is not None:
                    break
            yield f"http://127.0.0.1:{port}", var_dir, "".join(seen), launcher
        finally:
            if launcher.poll() is None:  # a test may have stopped it already
                os.killpg(launcher.pid, signal.SIGTERM)
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(launcher.pid, signal.SIGKILL)


def _wait_ready(base: str, launcher: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert launcher.poll() is None, "the launcher stopped"
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=5) as response:
                return json.loads(response.read())
        except OSError:
            time.sleep(0.5)
    raise AssertionError("/readyz never answered 200")


def test_make_run_starts_on_a_bare_environment_and_runs_a_task(launched) -> None:
    base, var_dir, printed, launcher = launched
    assert _wait_ready(base, launcher) == {"ready": True}  # the checks: for staff only
    # The embedded default made its own secret key and database, in its own folder, and
    # only their owner reads them, or the logs.
    assert (var_dir / "secret_key").exists() and (var_dir / "agentsite.sqlite3").exists()
    # bubblewrap is installed here (make test sees to it): the command tools run in its sandbox.
    assert "shell and python run sandboxed (bubblewrap: no network" in printed
    for private in (var_dir / "secret_key", var_dir / "agentsite.sqlite3", var_dir / "logs"):
        assert stat.S_IMODE(private.stat().st_mode) in (0o600, 0o700), private
    for log in (var_dir / "logs").iterdir():
        assert stat.S_IMODE(log.stat().st_mode) == 0o600, log
    report = _submit(base, printed, {"task": "Compute 1500 * 0.2 + 75", "auto_approve": "on"})
    assert report["status"] == "succeeded", report
    assert "375" in report["result"]
    assert report["planner_model"] == "offline:offline-v1"


@pytest.mark.parametrize(
    "launched",
    # A fixed seed: the same plan every time, in seconds (sampling freely, this small a model
    # may write on for minutes).
    [{"AGENTSITE_LOCAL_MODEL": str(smollm2()), "AGENTSITE_LOCAL_MODEL_ARGS": "--seed 7"}],
    indirect=True,
)
def test_make_run_with_a_local_model_plans_with_it(launched) -> None:
    base, _, printed, launcher = launched
    assert re.search(r"Model: SmolLM2-135M-Instruct\.Q4_1\.gguf, served by llama\.cpp", printed)
    _wait_ready(base, launcher)
    # The planner on the local model (the executors offline: a 135M model writes slowly).
    report = _submit(
        base,
        printed,
        {
            "task": "Research tea and coffee, then write a short summary",
            "auto_approve": "on",
            "route_executor": "offline",
        },
    )
    assert report["planner_model"] == "openai:SmolLM2-135M-Instruct.Q4_1", report
    # Its plan ran, or was refused by the same checks as any plan, with the reason: a 135M
    # model sampling freely often repeats a step id. Either way the local model planned.
    assert report["status"] == "succeeded" or report["error"].startswith(
        "The planner's plan was invalid twice"
    ), (report["error"], report["steps"])


def test_make_run_serves_a_model_an_admin_starts_and_stops_it_with_the_rest(launched) -> None:
    base, var_dir, _, launcher = launched
    _wait_ready(base, launcher)
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    env.update(AGENTSITE_VAR_DIR=str(var_dir), DJANGO_SUPERUSER_PASSWORD="pw-for-tests-1")
    subprocess.run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", "root",
         "--email", "root@example.org"],
        cwd=REPO, env=env, check=True, capture_output=True,
    )  # fmt: skip
    browser, post = _logged_in(base, "root", "pw-for-tests-1")
    post("/settings/local-models/start/", {"model_path": str(smollm2())})
    deadline = time.monotonic() + 120
    listed = ""
    while 'data-state="ready"' not in listed and time.monotonic() < deadline:
        time.sleep(0.5)
        listed = browser.open(base + "/settings/local-models/", timeout=30).read().decode()
    assert 'data-state="ready"' in listed, listed
    (port,) = re.findall(r"loading .* on port (\d+)", (var_dir / "logs" / "models.log").read_text())
    health = f"http://127.0.0.1:{port}/health"
    assert urllib.request.urlopen(health, timeout=5).status == 200

    os.killpg(launcher.pid, signal.SIGTERM)
    launcher.wait(timeout=60)
    with pytest.raises(OSError):
        urllib.request.urlopen(health, timeout=5)


def _logged_in(base: str, username: str, password: str):
    """A cookie-keeping opener logged in as username, and a form poster with its CSRF token."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def csrf() -> str:
        return next(c.value for c in jar if c.name == "csrftoken")

    def post(path: str, fields: dict[str, str]):
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": csrf()}).encode()
        request = urllib.request.Request(base + path, data, headers={"Referer": base + path})
        return browser.open(request, timeout=30)

    browser.open(base + "/accounts/login/", timeout=30).read()
    post("/accounts/login/", {"username": username, "password": password})
    return browser, post


def _submit(base: str, printed: str, fields: dict[str, str]) -> dict:
    """Log in with the printed login, submit the form, and wait for the run's report."""
    login = re.search(r"Log in as (\S+) / (\S+)", printed)
    assert login, printed
    browser, post = _logged_in(base, login.group(1), login.group(2))
    answer = post("/runs/new/", fields)
    run_path = urllib.parse.urlsplit(answer.geturl()).path
    assert re.fullmatch(r"/runs/\d+/", run_path), answer.geturl()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        report = json.loads(browser.open(base + run_path + "report.json", timeout=30).read())
        if report["status"] in ("succeeded", "failed", "cancelled"):
            return report
        time.sleep(0.5)
    return report


@pytest.mark.parametrize(
    ("environment", "line"),
    [
        ({"AGENTSITE_SHELL": "off"}, "shell and python are not offered: AGENTSITE_SHELL is off"),
        (
            {"AGENTSITE_BWRAP": "/nonexistent/bwrap"},
            "shell and python are not offered: no sandbox: bubblewrap ('/nonexistent/bwrap') is "
            "not installed (Debian/Ubuntu: apt-get install bubblewrap)",
        ),
        (
            {"AGENTSITE_SHELL": "unsandboxed"},
            "WARNING: shell and python run UNSANDBOXED: AGENTSITE_SHELL=unsandboxed: a command "
            "can read and change everything the server's user can; every call waits for a person",
        ),
    ],
)
def test_the_startup_banner_says_how_commands_run_or_why_not(
    environment, line, monkeypatch, capsys
) -> None:
    from agentsite.launcher import _print_banner

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    _print_banner("http://127.0.0.1:8000", "Log in as demo / pw", [Path("var/run.log")])
    assert f"  {line}\n  Log in as demo / pw\n" in capsys.readouterr().out
