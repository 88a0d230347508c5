import json
from collections.abc import Mapping
from datetime import datetime, time
from decimal import Decimal
from typing import Any

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.template.context import Context
from django.utils.hashable import make_hashable
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


@register.filter(expects_localtime=True)
def clock(value: object) -> str:
    """What `|time:'H:i:s'` shows, without Django's format parser: a 1,000-step timeline shows
    4,000 such times, and the parser was a tenth of its render."""
    return value.strftime("%H:%M:%S") if isinstance(value, datetime | time) else ""


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
def get(mapping: Mapping[str, Any], key: str) -> object:
    return mapping.get(key, "")


# The memo tag's store in a render's bottom dict, which every template of the render shares
# (an include pushes a scope of its own above it) and nothing else reads.
_MEMO_STORE = object()


class MemoNode(template.Node):
    def __init__(self, nodelist: NodeList, keys: list[FilterExpression]) -> None:
        self.nodelist = nodelist
        self.keys = keys

    def render(self, context: Context) -> str:
        bottom: dict[Any, Any] = context.render_context.dicts[0]
        store: dict[tuple[Any, ...], str] = bottom.setdefault(_MEMO_STORE, {})
        key = (self, *(make_hashable(k.resolve(context)) for k in self.keys))
        if key not in store:
            store[key] = self.nodelist.render(context)
        return store[key]


@register.tag
def memo(parser: Parser, token: Token) -> MemoNode:
    """`{% memo key ... %}body{% endmemo %}`: the body rendered once per page for each value of
    its keys, and that output repeated. For a fragment that a 1,000-step page repeats in every
    step (an edit form's opening with its CSRF field, a step's tool checkboxes): rendering
    them was a third of the plan editor's time (bench.pages). The body must depend on nothing
    but its keys and what is the same for the whole page, or a step shows another's values."""
    keys = [parser.compile_filter(bit) for bit in token.split_contents()[1:]]
    nodelist = parser.parse(("endmemo",))
    parser.delete_first_token()
    return MemoNode(nodelist, keys)
