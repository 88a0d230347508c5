"""`manage.py runtask` says how a run ended: a run that lost a step on the way prints its
warning outcome with why, and exits 3, not 0."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings

from tests.conftest import child_env

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_runtask_exits_3_for_a_success_with_warnings(celery_worker_process, make_user):
    make_user("demo")
    result = subprocess.run(
        # The file does not exist: its step fails, and the re-plan goes around it.
        [
            sys.executable,
            "manage.py",
            "runtask",
            "Read missing.txt and summarize it, and research tea",
        ],
        cwd=settings.BASE_DIR,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("Run ") and (
        ": succeeded with warnings (Step 'read-missing-txt' failed and was re-planned around) in "
        in first
    ), first
    assert "Warning: step 'read-missing-txt' failed (needs the file 'missing.txt'" in result.stdout
