"""What the benchmark counts as each process's CPU: its own, its live descendants', and what
the children it reaped used (a database server's ended backends)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from bench.cpu import cpu_by_root, database_server_pid


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_child_that_ended_and_was_reaped_still_counts_for_its_parent():
    before = cpu_by_root({"me": os.getpid()})
    assert before is not None
    # About 0.3 s of CPU in a process that is gone, and reaped, before the second reading.
    subprocess.run(
        [sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
         "while time.process_time() < end: pass"],
        check=True,
    )  # fmt: skip
    after = cpu_by_root({"me": os.getpid()})
    assert after is not None
    assert after["me"] - before["me"] >= 0.25


@pytest.mark.database
@pytest.mark.django_db
def test_the_database_server_is_found_where_it_runs_on_this_machine():
    found = database_server_pid()
    if connection.vendor != "postgresql":
        assert found is None  # SQLite runs inside the processes that use it
        return
    assert found is not None
    program = Path(f"/proc/{found}/cmdline").read_bytes().split(b"\0")[0]
    assert os.path.basename(program) == b"postgres"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    # This test's own connection is one of its children, and counts for it.
    stat = Path(f"/proc/{backend}/stat").read_text().rpartition(")")[2].split()
    assert int(stat[1]) == found
