"""Template source checks: what Django would print instead of hiding."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_comment_spans_lines() -> None:
    # Django's {# … #} ends at the line's end: a longer one is printed on the page as text.
    broken = [
        f"{path.relative_to(TEMPLATES)}:{number}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\{#(?!.*#\})", line)
    ]
    assert broken == [], "use {% comment %} for comments over several lines"
