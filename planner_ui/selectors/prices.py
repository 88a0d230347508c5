"""The price table every page and the accounting read: the settings' own, the same for every
user. A selector so that the estimate reads it without importing a service."""

from __future__ import annotations

from django.conf import settings

from planner_ui.core import pricing
from planner_ui.core.pricing import Price

_parsed: tuple[object, dict[str, Price]] | None = None


def price_table() -> dict[str, Price]:
    """The settings' price table, parsed once (again when a test replaces the setting)."""
    global _parsed
    source = settings.AGENTSITE_PRICES
    if _parsed is None or _parsed[0] is not source:
        _parsed = (source, pricing.parse_price_table(source))
    return _parsed[1]
