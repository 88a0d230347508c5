"""Model fields with a rule of their own about what the database may hold."""

from __future__ import annotations

import decimal
from typing import Any

from django.db import models
from django.utils.functional import cached_property


class ClampedDecimalField(models.DecimalField):  # type: ignore[type-arg]  # generic in the stubs only
    """A DecimalField that reads a value beyond its digits as its largest value.

    SQLite keeps whatever number it is given, and Django's SQLite converter quantizes what it
    reads in the field's context: a budget of 1e20 stored before the bounds raised
    InvalidOperation on every page that loaded the row (the home page, the run list, the API,
    the admin). Without the trap the quantize gives NaN, which reads as the largest value the
    field holds; what a person enters is bounded before it is stored (core.bounds)."""

    @cached_property
    def context(self) -> decimal.Context:
        return decimal.Context(prec=self.max_digits, traps=[])

    @cached_property
    def largest(self) -> decimal.Decimal:
        whole = self.max_digits - self.decimal_places
        return decimal.Decimal(10) ** whole - decimal.Decimal(1).scaleb(-self.decimal_places)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return self.largest
        return value
