"""`manage.py runtask` on a machine where nothing runs: it brings up an embedded Redis and a
worker of its own, on the default settings, and leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from agentsite import embedded

pytestmark = pytest.mark.stack


def test_runtask_alone_brings_up_redis_and_a_worker(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE", "ANTHROPIC_API_KEY"}
    }
    env.update(DJANGO_SETTINGS_MODULE="agentsite.settings", AGENTSITE_VAR_DIR=str(var_dir))
    manage = [sys.executable, "manage.py"]
    migrate = subprocess.run(
        manage + ["migrate", "--noinput"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    result = subprocess.run(
        manage + ["runtask", "--json", "Research tea, coffee and mate"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert "No Redis running: starting the embedded one." in result.stderr
    assert "No Celery worker answering: starting one for this task." in result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "succeeded"
    roles = {s["role"] for s in outcome["steps"]}
    assert {"researcher", "synthesizer"} <= roles
    assert sum(1 for s in outcome["steps"] if s["role"] == "researcher") == 3
    # What it started, it stopped.
    assert not embedded.redis_ping(f"unix://{var_dir / 'redis.sock'}")
