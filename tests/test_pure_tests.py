"""Pure tests start no Redis: a run of tests/core alone pays for no redis-server, and any
other test still gets the session's Redis (tests/conftest.py, _session_redis)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from agentsite import embedded
from tests.conftest import REDIS_LOG

REPO = Path(__file__).resolve().parents[1]


def test_a_run_of_core_tests_starts_no_redis(tmp_path: Path) -> None:
    # A child pytest with a var folder of its own: the embedded Redis's socket and log go there.
    var = tmp_path / "var"
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    env["AGENTSITE_VAR_DIR"] = str(var)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-qp", "no:cacheprovider", "tests/core/test_status.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # start_redis writes its log before anything else (the next test shows where).
    assert not (var / REDIS_LOG).exists()
    assert not (var / "redis.sock").exists()


def test_a_test_outside_the_pure_folders_gets_the_session_s_redis_unasked() -> None:
    assert embedded.redis_ping(settings.REDIS_URL)
    if settings.REDIS_IS_EMBEDDED:
        assert (settings.VAR_DIR / REDIS_LOG).exists()
