"""Rows that a page shows by the thousand, read the way Django's templates read fastest."""

from __future__ import annotations

from typing import Any


class TemplateRow:
    """Item access that reads the fields: a template looks `row.title` up as row["title"]
    first, and only then as an attribute. Without it each lookup raised and caught a
    TypeError first; a 1,000-step page makes 100,000 of them on its step cards and timeline
    rows, a tenth of its render (bench.pages)."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)
