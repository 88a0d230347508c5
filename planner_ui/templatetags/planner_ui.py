import json
from decimal import Decimal

from django import template
from django.utils.safestring import SafeString, mark_safe

from planner_ui.core.pricing import dollars
from planner_ui.core.redaction import redact_url
from planner_ui.rendering import markdown_to_safe_html

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    return mark_safe(markdown_to_safe_html(text))  # noqa: S308  sanitized by nh3


@register.filter
def redacted_url(url: str) -> str:
    """An address without the credentials it may carry, for people who did not set it."""
    return redact_url(url)


@register.filter
def json_compact(value: object) -> str:
    """JSON for display, escaped by the template like any other text."""
    # The same spacing as JSON.stringify, so live and reloaded cards read alike.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@register.filter
def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    return f"{minutes} min {secs} s"


@register.filter
def usd(value: Decimal | None) -> str:
    """$0.0123 for a small cost, $1.50 for a larger one; — when unknown."""
    if value is None:
        return "—"
    amount = Decimal(value)
    return dollars(amount, 4 if 0 < amount < 1 else 2)


@register.filter
def millis(value: int | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value} ms"


@register.filter
def thousands(value: int | None) -> str:
    """12,345: token counts are read at a glance."""
    return "—" if value is None else f"{value:,}"


@register.filter
def json_pretty(value: object) -> str:
    """Indented JSON for a person to read or edit; escaped by the template like any text."""
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def get(mapping: dict, key: str) -> object:
    return mapping.get(key, "")
