"""Create the PostgreSQL database a URL names if it is missing; exit 1 when no server answers.

`make bench-throughput` uses it so that the PostgreSQL pass needs nothing set up by hand."""

import sys

import psycopg
from psycopg import sql


def main(url: str) -> int:
    server, _, name = url.rpartition("/")
    try:
        with psycopg.connect(server + "/postgres", connect_timeout=3, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
