"""A forked process starts its own PostgreSQL pool.

A Celery worker forks its pool processes from its main process, and re-forks one when one dies:
if the main process had opened the database pool by then (the sweep runs there), the child
would inherit the pool's object without its threads, and the parent's connections with it.
The child forgets them, without closing them: closing would end the parent's sessions on the
server, through the sockets the two share. They are kept referenced so that nothing collects
and closes them either, and the child's first query opens a pool of its own."""

from __future__ import annotations

import os
import sys

_inherited: list[object] = []


def forget_inherited_pool() -> None:
    # Runs between fork and exec too (subprocess with a preexec_fn): import nothing there, where
    # another thread may have held the import lock at the fork.
    backend = sys.modules.get("django.db.backends.postgresql.base")
    if backend is None or not backend.DatabaseWrapper._connection_pools:
        return
    pools = backend.DatabaseWrapper._connection_pools
    _inherited.extend(pools.values())
    pools.clear()
    for wrapper in sys.modules["django.db"].connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _inherited.append(wrapper.connection)
            wrapper.connection = None


def forget_inherited_pool_after_fork() -> None:
    os.register_at_fork(after_in_child=forget_inherited_pool)
