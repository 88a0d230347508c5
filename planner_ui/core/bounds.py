"""Bounds on what a person sends: numbers the database can hold, ids written in ASCII digits,
JSON no deeper than any plan or tool's arguments need.

One place for each bound, used by the forms, the API's schemas and the services: a value out of
range is refused with a sentence where it enters, instead of failing later as a 500 (SQLite
cannot bind an integer past 2**63 - 1, PostgreSQL refuses a numeric(12, 4) of 1e20, and
json.loads runs out of stack on a few thousand open brackets)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

# A signed 64-bit column (BigIntegerField, and SQLite's INTEGER) holds at most this.
MAX_BIGINT = 2**63 - 1
# A 32-bit one (IntegerField, PositiveIntegerField: ids, plan versions, counts).
MAX_INT = 2**31 - 1

# Run.budget_usd is DecimalField(max_digits=12, decimal_places=4).
BUDGET_USD_DIGITS = 12
BUDGET_USD_PLACES = 4
MAX_BUDGET_USD = Decimal(10) ** (BUDGET_USD_DIGITS - BUDGET_USD_PLACES) - Decimal(1).scaleb(
    -BUDGET_USD_PLACES
)  # 99999999.9999
MIN_BUDGET_USD = Decimal(1).scaleb(-BUDGET_USD_PLACES)  # 0.0001

# A plan nests four levels; a tool's arguments a few more. Far below where Python's parser
# and every later json.dumps, validation or template would recurse out of stack.
MAX_JSON_DEPTH = 32

# The types the API's schemas and RunOptions use, so the OpenAPI document states the bounds.
RowId = Annotated[int, Field(ge=1, le=MAX_INT)]
Count = Annotated[int, Field(ge=0, le=MAX_BIGINT)]
# Budgets: the upper bounds only; run_create says in its own words that a budget must be
# above 0 (the form, `runtask` and the API share that sentence).
TokenBudget = Annotated[int, Field(le=MAX_BIGINT)]
UsdBudget = Annotated[
    Decimal,
    Field(
        le=MAX_BUDGET_USD,
        max_digits=BUDGET_USD_DIGITS,
        decimal_places=BUDGET_USD_PLACES,
        allow_inf_nan=False,
    ),
]


def too_long(what: str, text: str, limit: int) -> str:
    """Why `text` is refused, in the words every form and the API use; "" when it fits. A page
    states the limit this way rather than with a maxlength, which cuts a paste without a word."""
    if len(text) <= limit:
        return ""
    return f"{what} is {len(text)} characters long; at most {limit} are allowed."


_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")
# A JSON string (with its escapes), or one bracket: what the depth scan steps over.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


class JsonRefused(ValueError):
    """A person's JSON was refused before it reached anything else; the message says why in
    words that read after "refused: "."""


class JsonTooDeep(JsonRefused):
    """JSON nested deeper than MAX_JSON_DEPTH."""


class NulInText(JsonRefused):
    """A NUL character in text: PostgreSQL stores none in a text or jsonb column (psycopg
    raises, a 500), and no task, plan or argument needs one."""


def row_id(text: str | None, *, maximum: int = MAX_INT) -> int | None:
    """The number written in `text` if it is one an id or version can be: ASCII digits only
    (str.isdigit() also takes '²' and '٣', which int() then refuses), from 1 to `maximum`.
    None for anything else: the caller says what was wrong in its own words."""
    if text is None or not _ASCII_DIGITS.fullmatch(text):
        return None
    number = int(text)
    return number if 1 <= number <= maximum else None


def json_depth(text: str) -> int:
    """How deeply the JSON in `text` nests, read without parsing it (so without recursion):
    brackets inside strings do not count."""
    depth = deepest = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def check_json_depth(text: str | bytes, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonTooDeep if the JSON in `text` nests deeper than `limit`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    # Cheap first: JSON can nest no deeper than it has brackets.
    if text.count("[") + text.count("{") <= limit:
        return
    if json_depth(text) > limit:
        raise JsonTooDeep(f"the JSON is nested deeper than {limit} levels")


def loads_bounded(text: str | bytes, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """json.loads for a person's JSON: nested deeper than `limit` is refused before parsing
    (JsonTooDeep), a NUL in any string after (NulInText); json.JSONDecodeError as ever."""
    check_json_depth(text, limit=limit)
    value = json.loads(text)
    check_no_nul(value)
    return value


def check_no_nul(value: Any) -> None:
    """Raise NulInText if a string anywhere in a parsed JSON value (keys too) holds a NUL.
    Iterative: the value may nest as deep as the parser allowed."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise NulInText("text may not contain NUL (\\u0000) characters")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
