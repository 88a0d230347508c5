"""What a model call costs, from a price table, and whether a run's budget is spent.

Prices are USD per million tokens. Cached prompt tokens are billed apart from the rest of the
prompt: reading the cache is much cheaper than the base input price, writing it dearer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from .errors import AgentError
from .messages import Usage

MILLION = Decimal(1_000_000)
# Anthropic's multipliers for the 5-minute cache, used when a price names no cache rates.
CACHE_READ_FACTOR = Decimal("0.1")
CACHE_WRITE_FACTOR = Decimal("1.25")


class PriceTableError(AgentError):
    """The configured price table cannot be read; the message says where."""


@dataclass(frozen=True)
class Price:
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal


def parse_price_table(data: Mapping[str, Any]) -> dict[str, Price]:
    """{"anthropic:claude-opus-5-5": {"input": 4, "output": 20, "cache_read": 0.2}, ...}.

    Keys are "provider:model", a bare model id, or "provider:*" for every model of a provider
    (e.g. local models that cost nothing per token).
    """
    table = {}
    for key, entry in data.items():
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"price of {key!r}: expected an object with input and output")
        try:
            base = _usd(entry["input"])
            table[key] = Price(
                input=base,
                output=_usd(entry["output"]),
                cache_read=_usd(entry.get("cache_read", base * CACHE_READ_FACTOR)),
                cache_write=_usd(entry.get("cache_write", base * CACHE_WRITE_FACTOR)),
            )
        except KeyError as exc:
            raise PriceTableError(f"price of {key!r}: missing {exc.args[0]!r}") from exc
        except (InvalidOperation, TypeError, ValueError) as exc:
            raise PriceTableError(f"price of {key!r}: {exc}") from exc
    return table


def price_for(table: Mapping[str, Price], provider: str, model: str) -> Price | None:
    """The most specific price for a model, or None when the table does not know it."""
    for key in (f"{provider}:{model}", model, f"{provider}:*"):
        if key in table:
            return table[key]
    return None


def call_cost(usage: Usage, price: Price) -> Decimal:
    """The cost in USD, to the millionth of a dollar."""
    uncached = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    micro = (
        uncached * price.input
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    )
    return (micro / MILLION).quantize(Decimal("0.000001"))


@dataclass(frozen=True)
class Budget:
    """A run's limits; None means no limit on that measure."""

    tokens: int | None = None
    usd: Decimal | None = None

    def overrun(self, tokens_used: int, usd_used: Decimal) -> str:
        """Why the budget is spent, or "" while some of it is left.

        Spent means reached, not only passed: a run at its limit must not start another call.
        """
        if self.tokens is not None and tokens_used >= self.tokens:
            return f"its budget of {self.tokens:,} tokens is spent ({tokens_used:,} used)"
        if self.usd is not None and usd_used >= self.usd:
            # An int: a budget is a stored amount (a DecimalField), never NaN or infinite.
            exponent = cast(int, self.usd.normalize().as_tuple().exponent)
            exact = min(max(2, -exponent), 6)
            return (
                f"its budget of {dollars(self.usd, exact)} is spent ({dollars(usd_used, 4)} used)"
            )
        return ""


def dollars(amount: Decimal, places: int = 2) -> str:
    """$1.50; a small amount gets the places it needs to not read as zero: $0.0042."""
    if amount.quantize(Decimal(1).scaleb(-places)) == 0 and amount != 0:
        # Two significant digits, to the millionth at most.
        places = min(max(places, -amount.adjusted() + 1), 6)
    return f"${amount.quantize(Decimal(1).scaleb(-places)):,}"


def _usd(value: Any) -> Decimal:
    amount = Decimal(str(value))
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{value!r} is not a price in USD per million tokens")
    return amount
