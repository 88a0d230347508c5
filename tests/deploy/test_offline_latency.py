"""`make run` gives the offline model a latency a person can watch (agentsite.launcher); tests
never inherit it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import child_env

REPO = Path(__file__).resolve().parents[2]
READ = "import agentsite.settings_test as s; print(s.AGENTSITE_OFFLINE_LATENCY_S)"


def _latency_in_a_process(code: str, latency: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "AGENTSITE_OFFLINE_LATENCY_S": latency}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_test_process_answers_at_once_whatever_the_shell_says() -> None:
    assert _latency_in_a_process("import pytest; " + READ, "0.3") == "0.0"


def test_a_process_a_test_starts_has_the_latency_the_test_gives_it(monkeypatch) -> None:
    # A worker started by a test reads its environment: child_env's, 0 unless the test asks.
    assert _latency_in_a_process(READ, "0.4") == "0.4"
    monkeypatch.setenv("AGENTSITE_OFFLINE_LATENCY_S", "0.3")
    assert child_env()["AGENTSITE_OFFLINE_LATENCY_S"] == "0"
    assert child_env(AGENTSITE_OFFLINE_LATENCY_S="0.4")["AGENTSITE_OFFLINE_LATENCY_S"] == "0.4"
