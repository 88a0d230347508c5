"""docs/write-protocol.md names the tests that hold each of its rules: every one it names
exists, so a renamed or deleted test cannot leave a rule quoting a test that is gone."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "write-protocol.md"
# `tests/stack/test_crash.py::test_x`, `test_sql.py` (in tests/services/), `::test_x` (the
# file named last).
REFERENCE = re.compile(r"`(?P<file>[\w/]*test_\w+\.py)?(?:::(?P<test>test_\w+))?`")


def _named_tests() -> list[tuple[Path, str | None]]:
    named: list[tuple[Path, str | None]] = []
    current: Path | None = None
    for match in REFERENCE.finditer(DOC.read_text()):
        if match["file"]:
            file = match["file"]
            current = REPO / (file if file.startswith("tests/") else f"tests/services/{file}")
        if match["file"] or match["test"]:
            assert current is not None, f"{match[0]} names no file before it"
            named.append((current, match["test"]))
    return named


def test_every_test_the_write_protocol_names_exists() -> None:
    named = _named_tests()
    assert len(named) > 40  # the doc's references were read, not skipped

    missing = [
        f"{path.relative_to(REPO)}::{test or ''}"
        for path, test in named
        if not path.exists() or (test and f"def {test}(" not in path.read_text())
    ]
    assert missing == []
