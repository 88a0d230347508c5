"""Create the PostgreSQL database a URL names if it is missing; exit 1 when no server answers.

The benchmarks run on a database of their own (agentsite_bench by convention): `python -m bench`
and its make targets create it, so that a fresh machine with a PostgreSQL server needs nothing
set up by hand before `DATABASE_URL=postgres://…/agentsite_bench make bench`."""

import sys

import psycopg
from psycopg import sql


def ensure_database(url: str) -> bool:
    """Whether the server answers; the database is created when it does and lacks it."""
    server, _, name = url.rpartition("/")
    name = name.split("?", 1)[0]
    try:
        with psycopg.connect(server + "/postgres", connect_timeout=3, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(0 if ensure_database(sys.argv[1]) else 1)
