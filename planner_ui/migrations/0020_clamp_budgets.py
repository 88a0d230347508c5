"""Budgets stored before they were bounded: a budget in USD beyond the column's 12 digits
(SQLite kept a 1e20) is clamped to the largest it holds, 99999999.9999, and a token budget
beyond a signed 64-bit integer (SQLite kept it as a float) to 2**63 - 1. Neither could have
been spent, so the runs behave as they did."""

from decimal import Decimal

from django.db import migrations

import planner_ui.model_fields

MAX_BUDGET_USD = Decimal("99999999.9999")
MAX_BIGINT = 2**63 - 1


def clamp_budgets(apps, schema_editor):
    Run = apps.get_model("planner_ui", "Run")
    # The filters compare in the database: loading such a row is what used to fail.
    Run.objects.filter(budget_usd__gt=MAX_BUDGET_USD).update(budget_usd=MAX_BUDGET_USD)
    Run.objects.filter(budget_tokens__gt=MAX_BIGINT).update(budget_tokens=MAX_BIGINT)


class Migration(migrations.Migration):
    dependencies = [
        ("planner_ui", "0019_mcp_tool_review"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="budget_usd",
            field=planner_ui.model_fields.ClampedDecimalField(
                blank=True, decimal_places=4, max_digits=12, null=True
            ),
        ),
        migrations.RunPython(clamp_budgets, migrations.RunPython.noop),
    ]
