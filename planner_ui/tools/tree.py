"""Walking a workspace that a command may have changed, without following a link anywhere.

A sandboxed command cannot reach the server's files, but it can leave symbolic links in its
workspace that point at them, and a process of it may still be dying while the server reads the
workspace (the kernel empties a sandbox's PID namespace a moment after the call). So every
component is opened relative to its already opened parent, with O_NOFOLLOW: a link swapped in
anywhere along the way is refused, never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

# O_NONBLOCK: opening a named pipe a command left must not wait for a writer.
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def regular_files(root: Path) -> Iterator[tuple[str, int, os.stat_result]]:
    """(relative path, open descriptor, its stat) of every regular file under `root`, sorted by
    path; each descriptor is closed when the caller asks for the next. Links, pipes and sockets
    are skipped."""
    for relative, fd, info in _entries(root):
        if stat.S_ISREG(info.st_mode):
            os.set_blocking(fd, True)
            yield relative, fd, info


def read_at_most(fd: int, limit: int) -> bytes:
    """The content of an open regular file from its start, `limit` bytes at most (a process
    may still be writing it)."""
    chunks, left = [], limit
    os.lseek(fd, 0, os.SEEK_SET)
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give `root` and the directories and regular files under it to uid:gid (links are left
    alone, and nothing is reached through one)."""
    for _, fd, _ in _entries(root, with_directories=True):
        os.fchown(fd, uid, gid)


def _entries(
    root: Path, *, with_directories: bool = False
) -> Iterator[tuple[str, int, os.stat_result]]:
    try:
        top = os.open(root, _OPEN | os.O_DIRECTORY)
    except OSError:
        return
    if with_directories:
        yield "", top, os.fstat(top)
    yield from _walk(top, "", with_directories)


def _walk(
    directory: int, prefix: str, with_directories: bool
) -> Iterator[tuple[str, int, os.stat_result]]:
    """Everything under the open `directory`, which it closes."""
    try:
        for name in sorted(os.listdir(directory)):
            try:
                fd = os.open(name, _OPEN, dir_fd=directory)
            except OSError:
                continue  # a link (ELOOP), or gone meanwhile
            try:
                info = os.fstat(fd)
                if stat.S_ISDIR(info.st_mode):
                    if with_directories:
                        yield f"{prefix}{name}", fd, info
                    yield from _walk(os.dup(fd), f"{prefix}{name}/", with_directories)
                else:
                    yield f"{prefix}{name}", fd, info
            finally:
                os.close(fd)
    finally:
        os.close(directory)
