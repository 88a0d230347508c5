"""What var/ holds (the SQLite database with every password hash and token digest, the secret
key that signs sessions, the logs) is readable by its owner only: var/ is 0700 and its files
0600, on a new install and, fixed at start, on one made before."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentsite import embedded

REPO = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def manage(var_dir: Path, *command: str) -> None:
    """manage.py with the production settings on a var/ of its own: the embedded default, so
    the secret key is made and kept in var/ and the database is var/agentsite.sqlite3."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SECRET_KEY")
    }
    env.update(DJANGO_SETTINGS_MODULE="agentsite.settings", AGENTSITE_VAR_DIR=str(var_dir))
    result = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def private_paths(var_dir: Path) -> list[Path]:
    database = var_dir / "agentsite.sqlite3"
    return [
        var_dir / "secret_key",
        database,
        *(p for p in (Path(f"{database}-wal"), Path(f"{database}-shm")) if p.exists()),
    ]


@pytest.fixture
def var_dir(tmp_path: Path) -> Path:
    os.umask(old := os.umask(0o022))  # what a default shell hands the server
    assert old & 0o077 != 0o077, "this test needs a umask that lets others read new files"
    return tmp_path / "var"


def test_a_new_install_keeps_var_and_the_database_to_its_owner(var_dir: Path) -> None:
    manage(var_dir, "migrate", "--noinput")
    assert mode(var_dir) == 0o700
    for path in private_paths(var_dir):
        assert mode(path) == 0o600, path


def test_an_install_made_before_is_fixed_at_start(var_dir: Path) -> None:
    manage(var_dir, "migrate", "--noinput")
    var_dir.chmod(0o755)
    for path in private_paths(var_dir):
        path.chmod(0o644)
    manage(var_dir, "migrate", "--noinput")
    assert mode(var_dir) == 0o700
    for path in private_paths(var_dir):
        assert mode(path) == 0o600, path


def test_the_logs_of_the_processes_are_their_owners_only() -> None:
    import tempfile

    # A short folder: a unix socket's path has a length limit that pytest's tmp_path passes.
    with tempfile.TemporaryDirectory(prefix="fm-", dir="/tmp") as folder:
        fresh = Path(folder) / "logs" / "redis.log"
        process = embedded.start_redis(Path(folder) / "redis.sock", log_path=fresh)
        embedded.stop_processes([process])
        assert mode(fresh) == 0o600 and mode(fresh.parent) == 0o700
        fresh.chmod(0o644)  # a log of an install made before
        process = embedded.start_redis(Path(folder) / "redis.sock", log_path=fresh)
        embedded.stop_processes([process])
        assert mode(fresh) == 0o600
