"""Pure tests start no Redis: a run of tests/core alone pays for no redis-server, and any
other test still gets the session's Redis (tests/conftest.py, _session_redis)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _pytest_in_fresh_var(test: str, tmp_path: Path) -> Path:
    """Run one test file in a child pytest whose var folder (and so the embedded Redis's socket
    and log) is new; that folder afterwards."""
    var = tmp_path / "var"
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    env["AGENTSITE_VAR_DIR"] = str(var)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return var


def test_a_run_of_core_tests_starts_no_redis(tmp_path: Path) -> None:
    var = _pytest_in_fresh_var("tests/core/test_dag.py", tmp_path)

    # start_redis writes its log there before anything else; a started one leaves both.
    assert not (var / "redis-test.log").exists()
    assert not (var / "redis.sock").exists()


def test_a_test_outside_the_pure_folders_still_gets_the_session_s_redis(tmp_path: Path) -> None:
    var = _pytest_in_fresh_var(
        "tests/test_layers.py::test_the_modules_import_each_other_without_a_circle", tmp_path
    )

    assert (var / "redis-test.log").exists()
