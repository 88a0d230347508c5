"""The run_id index of the three tables the hot path writes most (events, steps, model calls)
goes: each table's composite index starts with run_id and serves every lookup by run (a
cascade included), so the single-column one was only a second index to write on every insert.

Dropped by name, found by introspection: Django's own AlterField would drop and add the
foreign key again on PostgreSQL (a scan of the events table to check it) and rebuild the three
tables on SQLite."""

import django.db.models.deletion
from django.db import migrations, models

TABLES = ("planner_ui_runevent", "planner_ui_step", "planner_ui_modelcall")


def _run_only_indexes(schema_editor, table):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return [
        name
        for name, info in constraints.items()
        if info["index"]
        and not info["unique"]
        and not info["primary_key"]
        and info["columns"] == ["run_id"]
    ]


def drop(apps, schema_editor):
    quote = schema_editor.quote_name
    for table in TABLES:
        for name in _run_only_indexes(schema_editor, table):
            schema_editor.execute(f"DROP INDEX {quote(name)}")


def create(apps, schema_editor):
    quote = schema_editor.quote_name
    for table in TABLES:
        if not _run_only_indexes(schema_editor, table):
            name = schema_editor._create_index_name(table, ["run_id"])
            schema_editor.execute(f"CREATE INDEX {quote(name)} ON {quote(table)} (run_id)")


def _run_field(related_name):
    return models.ForeignKey(
        db_index=False,
        on_delete=django.db.models.deletion.CASCADE,
        related_name=related_name,
        to="planner_ui.run",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("planner_ui", "0028_plan_library"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField("modelcall", "run", _run_field("calls")),
                migrations.AlterField("runevent", "run", _run_field("events")),
                migrations.AlterField("step", "run", _run_field("steps")),
            ],
            database_operations=[migrations.RunPython(drop, create)],
        ),
    ]
