"""Django's SQLite backend, with writers queued on a file lock instead of SQLite's busy wait.

On the embedded default several processes (Daphne, the workers) write one SQLite file. SQLite
lets one write transaction in at a time and makes the others poll: its busy handler sleeps 1,
2, 5, 10, 15, 20, 25 ms ... between tries, so a step that meets another's transaction often
waits far longer than that transaction lasts. Here a write transaction first takes an exclusive
flock() on a file beside the database, which the kernel hands to the next waiter the moment it
is released; SQLite then never has to wait.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base

from agentsite.file_modes import PRIVATE_FILE, private_file, tighten


class DatabaseWrapper(base.DatabaseWrapper):
    _lock_fd: int | None = None

    def _lock_path(self) -> str | None:
        name = str(self.settings_dict["NAME"])
        if not name or name == ":memory:" or name.startswith("file:"):
            return None
        return name + ".writelock"

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        # The file holds every password hash and token digest: made 0600 before SQLite makes
        # it with the umask's mode, and tightened if an older install left it looser. SQLite
        # gives its -wal and -shm files the database's mode; older ones are tightened too.
        #
        # Never by opening the file when it exists: closing any descriptor of a file drops every
        # POSIX lock this process holds on it, so the other connections of this process (a
        # server's threads) lost their SQLite locks each time one more was opened, and another
        # process checkpointed or wrote under them ("disk I/O error", "database disk image is
        # malformed"). stat and chmod take no descriptor.
        if self._lock_path() is not None:
            database = Path(self.settings_dict["NAME"])
            if database.parent.is_dir():
                if database.exists():
                    tighten(database, PRIVATE_FILE)
                else:
                    private_file(database)  # no connection can be open on a file not there
                for companion in ("-wal", "-shm"):
                    tighten(Path(f"{database}{companion}"), PRIVATE_FILE)
        return super().get_new_connection(conn_params)

    def _start_transaction_under_autocommit(self) -> None:
        path = self._lock_path()
        if path is not None and self._lock_fd is None:
            self._lock_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._unlock()
            raise

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            os.close(fd)  # closing the descriptor releases the lock

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._unlock()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._unlock()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._unlock()
