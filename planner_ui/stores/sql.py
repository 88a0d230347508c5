"""Plain SQL for the few statements every step makes, where building the query through the ORM
costs more than running it (`make bench-step --profile` showed the ORM's compiler at about half
of a step's CPU).

The statements are written once, for SQLite (3.35 and later) and PostgreSQL alike, and say what
they changed with `RETURNING`, so no write is followed by a read of the same row."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any, Literal, TypeVar

import psycopg
from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    connection,
    connections,
    models,
    transaction,
)
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.db.models.expressions import Expression
from django.db.models.options import Options
from django.db.models.sql.compiler import SQLCompiler
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_aware, make_aware
from psycopg import pq

_M = TypeVar("_M", bound=models.Model)
_T = TypeVar("_T")

# What PostgreSQL says when it rolled a transaction back to break a deadlock, or for a
# serialization conflict: nothing of it was committed, and trying again is what it asks.
_TRY_AGAIN = {"40P01", "40001"}

# A PostgreSQL statement's result holds rows (RETURNING, SELECT).
_TUPLES_OK = pq.ExecStatus.TUPLES_OK


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def marks(count: int) -> str:
    """`%s, %s, …`: the placeholders of an IN list."""
    return ", ".join(["%s"] * count)


def when(value: datetime) -> Any:
    """A datetime as the database stores it (SQLite keeps text in the ORM's own format)."""
    return connection.ops.adapt_datetimefield_value(value)


def amount(value: Decimal) -> Any:
    return connection.ops.adapt_decimalfield_value(value)


def rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one statement; the rows it returns (those of its RETURNING clause for a write)."""
    db = connections[DEFAULT_DB_ALIAS]
    watched = db.execute_wrappers or db.queries_logged
    if db.vendor == "sqlite" and not watched:
        # SQLite runs in this process, a statement of a step in about 10 µs, and Django's
        # cursor around it (a new cursor, its wrappers, the placeholders rewritten) took 40 µs
        # more, inside the write transactions every other step queues for. Where something
        # watches the statements (execute_wrapper, a test counting queries, DEBUG's log), they
        # go through it as before.
        db.ensure_connection()
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            cursor = db.connection.execute(_qmarks(sql), params)
            return cursor.fetchall() if cursor.description else []
    if db.vendor == "postgresql" and settings.AGENTSITE_DB_PREPARED and not watched:
        # Prepared on the connection the first time it runs this text, then only bound and
        # run: planning was 27 to 50% of the server's time on these statements. Django's
        # cursors bind on the client (they cannot prepare), so this one is psycopg's own, on
        # Django's connection and in its transaction.
        db.ensure_connection()
        db.validate_no_broken_transaction()
        statement = _dollars(sql)
        with db.wrap_database_errors, psycopg.RawCursor(db.connection) as cursor:
            try:
                cursor.execute(statement, params, prepare=True)
            except psycopg.errors.FeatureNotSupported as exc:
                # In a transaction, the statement's failure aborted it: its rollback drops
                # the connection's prepared statements (psycopg does), and `retried` runs it
                # again. Outside one, nothing is left open: prepare them all again, here.
                if not _plan_changed(exc) or db.in_atomic_block:
                    raise
                cursor.execute("DEALLOCATE ALL")  # psycopg forgets its own list with it
                cursor.execute(statement, params, prepare=True)
            return _fetched(cursor)
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        if db.vendor == "postgresql":
            return _fetched(cursor.cursor)
        return cursor.fetchall() if cursor.description else []


def _plan_changed(exc: BaseException) -> bool:
    """PostgreSQL refused a statement prepared on this connection because a column it returns
    changed type since (a migration run from another connection): prepared again, it runs."""
    cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    if not isinstance(cause, psycopg.errors.FeatureNotSupported):
        return False
    return "cached plan must not change result type" in str(cause)


def _fetched(cursor: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
    """The rows of the statement a psycopg cursor has just run, if it returned any."""
    # By the result's status: psycopg builds a Column object for each column every time
    # `description` is read, 51 µs for a claim that returns its step and its run, 80 columns.
    result = cursor.pgresult
    return cursor.fetchall() if result and result.status == _TUPLES_OK else []


_PLACEHOLDER = re.compile(r"%.?", re.DOTALL)


@lru_cache(maxsize=1024)
def _dollars(sql: str) -> str:
    """A statement's `%s` placeholders as PostgreSQL's own `$1`, `$2`, … and its `%%` as `%`,
    worked out once per text, for psycopg's RawCursor, which sends a statement as it is. Its
    plain cursor parses the placeholders of a text of over 4,096 characters or 50 parameters
    again at every execution: the finish's statement (`steps._FINISH_COUNTING`, 4,365
    characters) took 87 µs a step, and an INSERT of a fan-out's 31 events 0.9 ms."""
    numbered = 0

    def placeholder(match: re.Match[str]) -> str:
        nonlocal numbered
        if match[0] == "%%":
            return "%"
        if match[0] != "%s":
            raise ValueError(f"only %s and %% may follow a % in a statement: {match[0]!r}")
        numbered += 1
        return f"${numbered}"

    return _PLACEHOLDER.sub(placeholder, sql)


@lru_cache(maxsize=1024)
def _qmarks(sql: str) -> str:
    """A statement's `%s` placeholders as SQLite's `?`, as Django's SQLite cursor rewrites
    them (there on every execution; here once per statement's text)."""
    return FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")


def decimal_of(value: Any) -> Decimal:
    """A DECIMAL column read back: PostgreSQL gives a Decimal, SQLite a float or an integer."""
    return value if isinstance(value, Decimal) else Decimal(str(value)).quantize(Decimal("1e-6"))


def json_loaded(value: Any) -> Any:
    """A `json` value a statement built (json_agg): decoded, whether or not the driver did."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def json_of(field: models.Field[Any, Any] | models.ForeignObjectRel, value: Any) -> Any:
    """A JSON column read back, decoded as the ORM would (`field`: as `_meta.get_field` gives
    it)."""
    assert isinstance(field, models.JSONField)
    # No expression: Django looks at it only to tell a key of the column from the column.
    return field.from_db_value(value, None, connection)  # type: ignore[arg-type]


def _column(field: models.Field[Any, Any]) -> str:
    """A concrete field's column: django-stubs allows None, which only a field without a column
    (none these statements write or read) has."""
    assert field.column is not None
    return field.column


def insert(instance: models.Model) -> None:
    """Insert one new instance as `Model.save()` would (its defaults and `auto_now_add` applied),
    in one INSERT … RETURNING of its primary key, which is set on it."""
    insert_many([instance])


def insert_many(instances: Sequence[models.Model]) -> None:
    """Insert new instances of one model in one INSERT … RETURNING, as `insert` does one."""
    if not instances:
        return
    meta = instances[0]._meta
    fields = _written(meta)
    # In batches the database accepts (SQLite limits the parameters of one statement).
    size = connection.ops.bulk_batch_size(fields, instances)
    if len(instances) > size:
        for start in range(0, len(instances), size):
            insert_many(instances[start : start + size])
        return
    values = [value for instance in instances for value in _prepared(instance, fields)]
    row = f"({marks(len(fields))})"
    keys = rows(
        f"INSERT INTO {table(type(instances[0]))} ({_columns(fields)}) "
        f"VALUES {', '.join([row] * len(instances))} "
        f"RETURNING {connection.ops.quote_name(_column(meta.pk))}",
        values,
    )
    # Both databases return the rows of a multi-row VALUES in its order, as bulk_create assumes.
    for instance, (key,) in zip(instances, keys, strict=True):
        _inserted(instance, key)


# Worked out once per model: every model call's record and every event's INSERT listed and
# quoted its columns again.
@cache
def _written(
    meta: Options[Any], numbered: models.Field[Any, Any] | None = None
) -> tuple[models.Field[Any, Any], ...]:
    """The fields an INSERT of the model writes: all but its key (and `numbered`, which
    insert_numbered writes apart)."""
    return tuple(f for f in meta.local_concrete_fields if f is not meta.pk and f is not numbered)


def _columns(fields: Sequence[models.Field[Any, Any]]) -> str:
    return _quoted(tuple(fields), connection.vendor)


@cache
def _quoted(fields: tuple[models.Field[Any, Any], ...], vendor: str) -> str:
    """`fields`' columns quoted as `vendor`'s backend quotes names (part of the cache's key)."""
    return ", ".join(connection.ops.quote_name(_column(f)) for f in fields)


def _prepared(instance: models.Model, fields: Sequence[models.Field[Any, Any]]) -> list[Any]:
    """The instance's values of `fields` as an INSERT sends them (defaults, auto_now_add)."""
    return [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]


def _inserted(instance: models.Model, key: Any) -> None:
    """The instance as the ORM leaves one it has just inserted."""
    instance.pk = key
    instance._state.adding = False
    instance._state.db = connection.alias


def insert_select(instance: models.Model) -> tuple[str, list[Any]]:
    """An INSERT of one new instance as `insert` makes it, written as INSERT … SELECT with
    `{source}` where a FROM may go (update_with's `along`); its key is not read back."""
    fields = _written(instance._meta)
    return (
        f"INSERT INTO {table(type(instance))} ({_columns(fields)}) "
        f"SELECT {marks(len(fields))}{{source}}",
        _prepared(instance, fields),
    )


def insert_numbered(
    instances: Sequence[models.Model], field: str, counter: str, params: Sequence[Any]
) -> tuple[Any, ...]:
    """Insert new instances of one model with `field` numbered on from a counter, in their
    order: `counter` is an UPDATE … RETURNING whose first column, named `last`, is the counter
    once it has added len(instances); its row is returned.

    On PostgreSQL both are one statement (the UPDATE in a WITH). Every transaction that
    appends to a run's event log queues for the counter's row, so it is held that many round
    trips less; and, being one statement, it needs no BEGIN and COMMIT where the caller has no
    transaction open. Elsewhere the statements run in a transaction of their own if the caller
    has none."""
    meta = instances[0]._meta
    numbered = meta.get_field(field)
    assert isinstance(numbered, models.Field)  # a column, not a relation's other side
    fields = _written(meta, numbered)
    count = len(instances)
    if connection.vendor != "postgresql" or count > connection.ops.bulk_batch_size(
        fields, instances
    ):
        with transaction.atomic(savepoint=False):  # nothing more where one is open already
            ((last, *rest),) = rows(counter, params)
            for number, instance in enumerate(instances, start=last - count + 1):
                setattr(instance, numbered.attname, number)
            insert_many(instances)
        return (last, *rest)
    values: list[Any] = []
    for index, instance in enumerate(instances):
        values += [index + 1, *_prepared(instance, fields)]
    quote = connection.ops.quote_name
    names = ["n", *(f"c{i}" for i in range(len(fields)))]
    row = f"({marks(len(names))})"
    found = rows(
        f"WITH counter AS ({counter}), inserted AS ("
        f"INSERT INTO {table(type(instances[0]))} "
        f"({_columns([numbered, *fields])}) "
        f"SELECT counter.last - {count} + v.n, {', '.join(f'v.{name}' for name in names[1:])} "
        f"FROM counter, (VALUES {', '.join([row] * count)}) AS v({', '.join(names)}) "
        f"RETURNING {quote(_column(meta.pk))}, {quote(_column(numbered))}) "
        "SELECT inserted.*, counter.* FROM inserted, counter",
        [*params, *values],
    )
    by_number = {number: key for key, number, *_ in found}
    first = found[0][2] - count + 1
    for number, instance in enumerate(instances, start=first):
        setattr(instance, numbered.attname, number)
        _inserted(instance, by_number[number])
    return tuple(found[0][2:])


# What update_with's `along` holds: statements with "{source}" where a FROM may go.
Along = Sequence[tuple[str, Sequence[Any]]]


def update_with(counter: str, params: Sequence[Any], *, along: Along = ()) -> tuple[Any, ...]:
    """Run `counter`, an UPDATE … RETURNING of one row, and then the writes `along` it, as one
    change; returns the row `counter` returned.

    On PostgreSQL it is one statement, with no BEGIN and COMMIT around it where the caller has
    no transaction open: the UPDATE in a WITH, and each of `along` beside it reading the
    counter's row, so that it runs after the counter and locks its rows after the counter's,
    in the order every writer of a run takes them, the run's row first. None of `along` may
    write the counter's row: of two changes to one row in one statement, PostgreSQL keeps one.
    Elsewhere the statements run in a transaction of their own if the caller has none."""
    if connection.vendor != "postgresql":
        with transaction.atomic(savepoint=False):
            (row,) = rows(counter, params)
            for statement, statement_params in along:
                rows(statement.format(source=""), statement_params)
        return row
    writes = "".join(
        f", along{index} AS ({statement.format(source=_AFTER_COUNTER)})"
        for index, (statement, _) in enumerate(along)
    )
    (row,) = rows(
        f"WITH counter AS ({counter}){writes} SELECT * FROM counter",
        [*params, *(value for _, statement_params in along for value in statement_params)],
    )
    return row


# Where `along` reads the counter's row on PostgreSQL: none of its columns, only that it is
# there, so that the statement runs after the counter.
_AFTER_COUNTER = " FROM (SELECT FROM counter) AS after_counter"


def clock() -> str:
    """The database's clock, as SQL (what Django's `Now()` writes): the one clock that times
    heartbeats and the sweep's periods, whichever machine writes or compares them. Each
    machine's own may be off by seconds; a worker 25 s behind had a healthy step taken over.
    On PostgreSQL the statement's start, not the transaction's (`now()`), which may be old."""
    if connection.vendor == "postgresql":
        return "statement_timestamp()"
    # In the text the ORM stores and compares on SQLite, to the millisecond.
    return "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now')"


def clock_ago(seconds: float) -> tuple[str, list[Any]]:
    """The database's clock `seconds` ago: SQL and its parameters."""
    if connection.vendor == "postgresql":
        return "statement_timestamp() - %s * interval '1 second'", [seconds]
    return "strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', %s)", [f"{-seconds:+.3f} seconds"]


def datetime_of(value: Any) -> datetime | None:
    """A DATETIME column read back, aware: SQLite's driver gives a naive datetime in UTC (or the
    ORM's text where it cannot tell the column's type), PostgreSQL's an aware one."""
    found: datetime | None = parse_datetime(value) if isinstance(value, str) else value
    if found is None or is_aware(found):
        return found
    return make_aware(found, UTC)


# --- loading one row as a model instance ------------------------------------------------------

# Per model, database, columns and lock: the SELECT, the attribute names, and the converters
# the ORM applies to each column read back. Worked out once: it was most of a raw query's cost.
_Reader = tuple[str, list[str], list[tuple[int, list[Any], Any]]]
_readers: dict[tuple[type[models.Model], str, tuple[str, ...] | None, str], _Reader] = {}

# How `load` locks the row, where the database locks rows (SQLite serializes every write).
Lock = Literal["", "update", "no key update", "key share"]


def locking(lock: Lock) -> str:
    """The clause that takes `lock` on the rows a SELECT reads (" FOR KEY SHARE"), where the
    database locks rows; nothing on SQLite, which serializes every write instead."""
    return f" FOR {lock.upper()}" if lock and connection.features.has_select_for_update else ""


def _reader(model: type[models.Model], fields: tuple[str, ...] | None, lock: Lock) -> _Reader:
    key = (model, connection.alias, fields, lock)
    if (reader := _readers.get(key)) is None:
        meta = model._meta
        chosen = [
            field
            for field in meta.concrete_fields
            if fields is None or field is meta.pk or field.attname in fields
        ]
        columns: list[Expression] = [field.get_col(meta.db_table) for field in chosen]
        # No query: only the converters are wanted, which depend on the columns alone.
        compiler = SQLCompiler(None, connection, connection.alias)  # type: ignore[arg-type]
        converters = [
            (index, funcs, expression)
            for index, (funcs, expression) in compiler.get_converters(columns).items()
        ]
        select = ", ".join(connection.ops.quote_name(_column(field)) for field in chosen)
        key_column = connection.ops.quote_name(_column(meta.pk))
        reader = (
            f"SELECT {select} FROM {table(model)} WHERE {key_column} = %s{locking(lock)}",
            [field.attname for field in chosen],
            converters,
        )
        _readers[key] = reader
    return reader


def load(model: type[_M], pk: Any, *, fields: tuple[str, ...] | None = None, lock: Lock = "") -> _M:
    """The row `pk` of `model` as `model.objects.get(pk=pk)` would give it, in a plain SELECT
    (only `fields` and the key, the rest deferred, when given); DoesNotExist when there is none.

    With `lock`, the row is locked until commit where the database locks rows: "update" as
    `select_for_update()` does; "key share" (PostgreSQL) only against those, so that other key
    shares and plain UPDATEs of the row go on meanwhile."""
    select, _, _ = _reader(model, fields, lock)
    found = rows(select, [pk])
    if not found:
        # Every concrete model has its DoesNotExist; django-stubs gives it to each model only.
        raise model.DoesNotExist(f"{model.__name__} {pk} does not exist")  # type: ignore[attr-defined]
    return instance_of(model, found[0], fields=fields)


def columns(model: type[models.Model], *, prefix: str = "") -> str:
    """Every column of the model, in the order `instance_of` reads them: what a RETURNING or a
    SELECT writes to give a whole row (`prefix`: a table's alias, with its dot)."""
    return ", ".join(
        prefix + connection.ops.quote_name(_column(field)) for field in model._meta.concrete_fields
    )


def instance_of(
    model: type[_M], values: Sequence[Any], *, fields: tuple[str, ...] | None = None
) -> _M:
    """A row read back as the ORM would give it: `values` are the model's columns as `columns`
    lists them (only `fields` and the key, as `load` reads them, when given)."""
    _, names, converters = _reader(model, fields, "")
    values = list(values[: len(names)])
    for index, funcs, expression in converters:
        value = values[index]
        for convert in funcs:
            value = convert(value, expression, connection)
        values[index] = value
    return model.from_db(connection.alias, names, values)


def durable() -> None:
    """This transaction's commit waits for its flush to disk, whatever the connection's default
    (AGENTSITE_DB_ASYNC_COMMIT): for what is written before and after an irreversible call,
    which must survive a crash of the database server. A flushed commit flushes every commit
    before it, so whatever the call depended on is on disk too. Inside a transaction only;
    nothing to do where commits always wait (the default, and SQLite)."""
    if not settings.AGENTSITE_DB_ASYNC_COMMIT or connection.vendor != "postgresql":
        return
    if not connection.in_atomic_block:
        raise RuntimeError("sql.durable() outside a transaction would change the connection")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = on")


def retried(attempt: Callable[[], _T], *, tries: int = 3) -> _T:
    """`attempt()`, a whole transaction, run again when the database rolled it back to break
    a deadlock or a serialization conflict, or refused a statement prepared before a migration
    changed a column's type (PostgreSQL); any other error goes through."""
    for tried in range(1, tries):
        try:
            return attempt()
        except DatabaseError as exc:
            if _plan_changed(exc):
                continue  # its rollback dropped the old statements: at once, prepared anew
            if getattr(exc.__cause__, "sqlstate", None) not in _TRY_AGAIN:
                raise
        # A moment, a random one, before going again: at once, the try took back the rows the
        # server had just freed before the transaction it was failed for could take them, and
        # the two deadlocked again (a finish's first statement locks its step's row), the
        # other failed this time.
        time.sleep(random.uniform(0.01, 0.05) * tried)
    return attempt()
