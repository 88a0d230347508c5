"""Prices: a call's cost from its token counts, and when a budget is spent."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.messages import Usage
from planner_ui.core.pricing import (
    Budget,
    Price,
    PriceTableError,
    call_cost,
    dollars,
    parse_price_table,
    price_for,
)

TABLE = parse_price_table(
    {
        "anthropic:claude-opus-5-5": {
            "input": 4,
            "output": 20,
            "cache_read": 0.2,
            "cache_write": 5,
        },
        "claude-sonnet-5-5": {"input": "2", "output": "10"},
        "openai:*": {"input": 0, "output": 0},
    }
)
PRICE = TABLE["claude-sonnet-5-5"]


def test_cache_rates_default_to_a_tenth_and_five_quarters_of_input() -> None:
    assert TABLE["claude-sonnet-5-5"] == Price(
        Decimal("2"), Decimal("10"), Decimal("0.2"), Decimal("2.50")
    )


def test_the_most_specific_price_wins() -> None:
    assert price_for(TABLE, "anthropic", "claude-opus-5-5").input == Decimal(4)
    assert price_for(TABLE, "anthropic", "claude-sonnet-5-5").input == Decimal(2)
    assert price_for(TABLE, "openai", "llama3.2").output == Decimal(0)
    assert price_for(TABLE, "anthropic", "claude-unknown") is None


def test_a_call_costs_its_uncached_cached_and_output_tokens_at_their_rates() -> None:
    opus = TABLE["anthropic:claude-opus-5-5"]
    # 10,000 prompt tokens: 6,000 read from the cache, 1,000 written to it, 3,000 plain.
    tokens = Usage(
        input_tokens=10_000, output_tokens=2_000, cache_read_tokens=6_000, cache_write_tokens=1_000
    )
    expected = (3_000 * 4 + 6_000 * Decimal("0.2") + 1_000 * 5 + 2_000 * 20) / Decimal(1_000_000)
    assert call_cost(tokens, opus) == expected.quantize(Decimal("0.000001"))
    assert call_cost(tokens, opus) == Decimal("0.058200")


@given(st.integers(0, 10**7), st.integers(0, 10**6), st.integers(0, 10**7))
def test_reading_the_cache_never_costs_more_than_sending_the_prompt_again(
    uncached: int, output: int, read: int
) -> None:
    price = TABLE["anthropic:claude-opus-5-5"]
    cached = call_cost(Usage(uncached + read, output, cache_read_tokens=read), price)
    assert Decimal(0) <= cached <= call_cost(Usage(uncached + read, output), price)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"m": {"output": 1}}, "price of 'm': missing 'input'"),
        ({"m": {"input": -1, "output": 1}}, "price of 'm'"),
        ({"m": {"input": "cheap", "output": 1}}, "price of 'm'"),
        ({"m": 3}, "expected an object"),
    ],
)
def test_a_bad_price_table_says_which_entry(data: dict, message: str) -> None:
    with pytest.raises(PriceTableError, match=message):
        parse_price_table(data)


def test_a_budget_is_spent_when_reached_not_only_when_passed() -> None:
    budget = Budget(tokens=1_000, usd=Decimal("0.50"))
    assert budget.overrun(999, Decimal("0.4999")) == ""
    assert budget.overrun(1_000, Decimal(0)) == "its budget of 1,000 tokens is spent (1,000 used)"
    assert budget.overrun(10, Decimal("0.51")) == "its budget of $0.50 is spent ($0.5100 used)"
    assert Budget().overrun(10**12, Decimal(10**6)) == ""


def test_a_budget_leaves_an_answer_what_the_run_has_not_used_nor_the_call_sends() -> None:
    assert Budget().answer_room(10**6, Decimal(10**3), 500, PRICE) is None
    room = Budget(tokens=1_000).answer_room(700, Decimal(0), 200, None)
    assert room is not None
    assert (room.tokens, room.limit, room.used) == (100, "1,000 tokens", "700 used")
    # In dollars: $0.01 left, $0.002 of it for 1,000 tokens sent at $2 a million, the rest for
    # answer tokens at $10 a million: 800 of them.
    room = Budget(usd=Decimal("0.50")).answer_room(0, Decimal("0.49"), 1_000, PRICE)
    assert room is not None
    assert (room.tokens, room.limit, room.used) == (800, "$0.50", "$0.4900 used")
    # The nearer limit is the one that holds the answer.
    both = Budget(tokens=10_000, usd=Decimal("0.50"))
    assert tokens_left(both, 9_500, "0.49") == 500
    assert tokens_left(both, 0, "0.49") == 1_000
    # A call that would send more than is left has less than no room.
    assert tokens_left(Budget(tokens=100), 90, "0", sent=50) == -40


def tokens_left(budget: Budget, tokens_used: int, usd_used: str, sent: int = 0) -> int:
    room = budget.answer_room(tokens_used, Decimal(usd_used), sent, PRICE)
    assert room is not None
    return room.tokens


def test_a_budget_in_dollars_holds_no_answer_back_on_a_model_without_a_price() -> None:
    assert Budget(usd=Decimal("0.01")).answer_room(0, Decimal(0), 100, None) is None
    free = Price(Decimal(0), Decimal(0), Decimal(0), Decimal(0))
    assert Budget(usd=Decimal("0.01")).answer_room(0, Decimal(0), 100, free) is None


def test_the_reasons_a_budget_gives_for_holding_a_call_back() -> None:
    room = Budget(tokens=2_000).answer_room(1_950, Decimal(0), 300, None)
    assert room is not None
    assert room.none_left(300) == (
        "its budget of 2,000 tokens leaves no room for an answer (1,950 used, and the next call "
        "would send about 300 tokens)"
    )
    after = Budget(tokens=2_000).answer_room(2_000, Decimal(0), 0, None)
    assert after is not None
    assert after.cut_off(312) == (
        "its budget of 2,000 tokens left room for an answer of 312 tokens and the model's reply "
        "was cut off there (2,000 used)"
    )


@pytest.mark.parametrize(
    ("amount", "shown"),
    [("1.5", "$1.50"), ("0", "$0.00"), ("0.0042", "$0.0042"), ("1234.5", "$1,234.50")],
)
def test_dollars_show_cents_or_the_places_a_small_amount_needs(amount: str, shown: str) -> None:
    assert dollars(Decimal(amount)) == shown
