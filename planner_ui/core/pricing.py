"""What a model call costs, from a price table, and whether a run's budget is spent.

Prices are USD per million tokens. Cached prompt tokens are billed apart from the rest of the
prompt: reading the cache is much cheaper than the base input price, writing it dearer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
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

    @property
    def limited(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def overrun(self, tokens_used: int, usd_used: Decimal) -> str:
        """Why the budget is spent, or "" while some of it is left.

        Spent means reached, not only passed: a run at its limit must not start another call.
        """
        if self.tokens is not None and tokens_used >= self.tokens:
            return f"its budget of {self.tokens:,} tokens is spent ({tokens_used:,} used)"
        if self.usd is not None and usd_used >= self.usd:
            return f"its budget of {self.usd_said()} is spent ({dollars(usd_used, 4)} used)"
        return ""

    def answer_room(
        self, tokens_used: int, usd_used: Decimal, input_tokens: int, price: Price | None
    ) -> Room | None:
        """How many tokens the answer to a call sending about `input_tokens` may take before
        the call passes the budget; None where nothing limits it (no budget, or one in dollars
        for a model with no price or a free answer). At 0 or less there is no room at all."""
        rooms = []
        if self.tokens is not None:
            tokens = self.tokens - tokens_used - input_tokens
            rooms.append(Room(tokens, f"{self.tokens:,} tokens", f"{tokens_used:,} used"))
        if self.usd is not None and price is not None and price.output > 0:
            left = (self.usd - usd_used) * MILLION - input_tokens * price.input
            tokens = int((left / price.output).to_integral_value(rounding=ROUND_FLOOR))
            rooms.append(Room(tokens, self.usd_said(), f"{dollars(usd_used, 4)} used"))
        return min(rooms, key=lambda room: room.tokens) if rooms else None

    def usd_said(self) -> str:
        """The budget in dollars as it was given, without trailing zeros ($0.011)."""
        assert self.usd is not None
        # An int: a budget is a stored amount (a DecimalField), never NaN or infinite.
        exponent = cast(int, self.usd.normalize().as_tuple().exponent)
        return dollars(self.usd, min(max(2, -exponent), 6))


@dataclass(frozen=True)
class Room:
    """What a budget leaves for a call's answer, in tokens, and the limit that leaves it
    ("2,000 tokens", "$0.50")."""

    tokens: int
    limit: str
    used: str  # what the run has used, in the limit's measure: "1,950 used", "$0.4812 used"

    def none_left(self, input_tokens: int) -> str:
        """Why a call that would send about `input_tokens` is not made."""
        return (
            f"its budget of {self.limit} leaves no room for an answer ({self.used}, and the "
            f"next call would send about {input_tokens:,} tokens)"
        )

    def cut_off(self, answer_tokens: int) -> str:
        """Why the run stops after a call whose answer the budget cut off at `answer_tokens`;
        this room is the budget's after the call."""
        return (
            f"its budget of {self.limit} left room for an answer of {answer_tokens:,} tokens "
            f"and the model's reply was cut off there ({self.used})"
        )


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
