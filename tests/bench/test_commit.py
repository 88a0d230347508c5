"""Which code a result says it measured: HEAD, marked when the code differs from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.__main__ import _commit


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "latest.json").write_text("{}")
    (tmp_path / "app.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    return tmp_path, _git(tmp_path, "rev-parse", "HEAD")


def test_a_rewritten_latest_result_does_not_mark_the_code_changed(tmp_path):
    repo, head = _repo(tmp_path)
    (repo / "bench" / "results" / "latest.json").write_text('{"new": 1}')
    (repo / "bench" / "results" / "20261126T000000Z.json").write_text("{}")
    assert _commit(repo) == head


def test_a_changed_source_file_marks_it(tmp_path):
    repo, head = _repo(tmp_path)
    (repo / "app.py").write_text("x = 2\n")
    assert _commit(repo) == f"{head}+changes"
