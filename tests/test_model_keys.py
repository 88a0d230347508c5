"""A model key in the developer's shell changes nothing in a test: settings drop it, processes
the tests start never receive it, and a whole test module run with one makes no request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import child_env

REPO = Path(__file__).resolve().parents[1]

SHELL = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-from-the-shell",
    "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
    "OPENAI_API_KEY": "sk-from-the-shell",
    "OPENAI_BASE_URL": "https://api.openai.com/v1",
    "AGENTSITE_PROVIDER": "anthropic",
    "AGENTSITE_PLANNER_MODEL": "anthropic:claude-opus-5-5",
    "AGENTSITE_EXECUTOR_MODEL": "openai:gpt-5",
    "AGENTSITE_ALLOW_MODEL_REQUESTS": "true",
}

PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.core.management import call_command
call_command("migrate", verbosity=0)  # routes read the database too (a default local model)
from planner_ui.services.providers import routes_for_run
print(json.dumps({
    "provider": settings.AGENTSITE_PROVIDER,
    "keys": [settings.ANTHROPIC_API_KEY, settings.OPENAI_API_KEY],
    "urls": [settings.ANTHROPIC_BASE_URL, settings.OPENAI_BASE_URL],
    "allow": settings.AGENTSITE_ALLOW_MODEL_REQUESTS,
    "routes": sorted({r.label for r in routes_for_run(check=False).values()}),
}))
"""


def test_the_test_settings_ignore_keys_and_routes_from_the_shell() -> None:
    env = {
        **os.environ,
        **SHELL,
        "DJANGO_SETTINGS_MODULE": "agentsite.settings_test",
        "DATABASE_URL": "sqlite:///:memory:",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {
        "provider": "offline",
        "keys": ["", ""],
        "urls": ["", ""],
        "allow": False,
        "routes": ["offline:offline-v1"],
    }


def test_only_the_opt_in_model_file_is_kept_of_the_model_environment() -> None:
    from agentsite.settings_test import MODEL_ENVIRONMENT

    dropped = [*SHELL, "AGENTSITE_LOCAL_MODEL", "AGENTSITE_CODER_MODEL"]
    assert all(MODEL_ENVIRONMENT.match(name) for name in dropped if "ALLOW" not in name)
    # A local GGUF file for test_a_larger_local_model_uses_a_tool_end_to_end: it must
    # survive the settings, or that test could never run.
    assert not MODEL_ENVIRONMENT.match("AGENTSITE_TEST_MODEL")


def test_processes_started_by_tests_get_no_model_keys(monkeypatch) -> None:
    for name, value in SHELL.items():
        monkeypatch.setenv(name, value)
    env = child_env()
    assert not {name for name in SHELL if name != "AGENTSITE_ALLOW_MODEL_REQUESTS"} & set(env)
    assert env["AGENTSITE_ALLOW_MODEL_REQUESTS"] == "false"


class _Recorder(BaseHTTPRequestHandler):
    """A proxy that lets nothing through and remembers every request it was asked to make."""

    seen: list[str] = []

    def _refuse(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        self.send_error(502, "no requests leave a test")

    do_CONNECT = do_GET = do_POST = _refuse

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recording_proxy() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    finally:
        server.shutdown()


def test_a_test_module_run_with_a_key_in_the_shell_passes_and_sends_nothing(recording_proxy):
    """The hazard this guards against: this module once routed runs to Anthropic's API."""
    proxy, seen = recording_proxy
    # A short folder of its own: the nested session starts its own Redis on a unix socket.
    with tempfile.TemporaryDirectory(prefix="agentsite-keys-") as var_dir:
        env = {
            **os.environ,
            **SHELL,
            "AGENTSITE_VAR_DIR": var_dir,
            # Anything that tried to reach a model's API would go through the recorder.
            "HTTPS_PROXY": proxy,
            "HTTP_PROXY": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "tests/services/test_runs.py"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout
    assert seen == []
