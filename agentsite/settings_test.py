"""Settings for the test suite: the same as production's defaults, in their own var/test/ folder,
so tests never share a database, a Redis socket or a Celery queue with a running `make run`."""

import os
from pathlib import Path

os.environ.setdefault(
    "AGENTSITE_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test")
)

from .settings import *  # noqa: E402,F403

# Hashing test users' passwords slowly buys nothing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
