"""The core must import with no web or queue framework loaded: that keeps it plain Python."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: this test process has Django loaded by pytest-django already.
PROBE = """
import importlib, json, pkgutil, sys
import planner_ui.core as core
names = sorted(m.name for m in pkgutil.walk_packages(core.__path__, "planner_ui.core."))
for name in names:
    importlib.import_module(name)
frameworks = ("django", "celery", "channels")
prefixes = tuple(f + "." for f in frameworks)
loaded = sorted(m for m in sys.modules if m in frameworks or m.startswith(prefixes))
print(json.dumps({"modules": names, "frameworks": loaded}))
"""


def test_every_core_module_imports_without_django_celery_or_channels() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {
        "planner_ui.core.dag",
        "planner_ui.core.errors",
        "planner_ui.core.plan",
        "planner_ui.core.status",
        "planner_ui.core.validation",
    } <= set(report["modules"])
    assert report["frameworks"] == []
