"""Files of this site that only its own user may read: var/ (0700) and, in it, the SQLite
database, the secret key and the logs (0600). The database holds every password hash and token
digest and the key signs every session, so another account on the machine must not read them.

Each is made with its mode, not chmod-ed after the fact (no moment when it is readable), and one
left looser by an install made before is tightened when the site starts. Plain Python: the
settings and the launcher use it before Django is configured.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path
from typing import IO

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path) -> Path:
    """`path` made (with its parents) if missing, and only its owner's."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    tighten(path, PRIVATE_DIR)
    return path


def private_file(path: Path) -> Path:
    """`path` made empty if missing (SQLite takes an empty file as a new database), and only
    its owner's; its contents are left alone."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
    tighten(path, PRIVATE_FILE)
    return path


def open_private(path: Path, mode: str = "wb") -> IO:
    """`path` opened for writing ("wb", "w", "ab" ...), made only its owner's first; its
    folder is made private if missing."""
    if not path.parent.exists():
        private_dir(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags, PRIVATE_FILE)
    if stat.S_IMODE(os.fstat(fd).st_mode) & ~PRIVATE_FILE:
        os.fchmod(fd, PRIVATE_FILE)  # a file made before, with a looser mode
    return os.fdopen(fd, mode)


def tighten(path: Path, allowed: int) -> None:
    """Take from `path` any permission beyond `allowed`. A path of another user's cannot be
    changed: say so, and carry on (the site still works; its files are as safe as they were)."""
    try:
        current = stat.S_IMODE(path.stat().st_mode)
        if current & ~allowed:
            path.chmod(current & allowed)
    except FileNotFoundError:
        return
    except PermissionError as exc:
        warnings.warn(
            f"{path} is readable by others and cannot be made private ({exc}): run the site "
            f"as the user who owns it, or chmod {allowed:o} it.",
            stacklevel=2,
        )
