"""`manage.py ensure_demo_user`: make sure the user "demo" exists and can log in, and say how.

The password is AGENTSITE_DEMO_PASSWORD when set, else one generated on first use and kept in
<VAR_DIR>/demo_password (mode 0600), so the login printed by `make run` stays the same.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "demo"


class Command(BaseCommand):
    help = "Create the user 'demo' if missing, give it the demo password, and print the login."

    def handle(self, *args: Any, **options: Any) -> None:
        password = demo_password(Path(settings.VAR_DIR) / "demo_password")
        user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        # Only when it differs: a new hash would log out every browser session of demo.
        if created or not user.check_password(password):
            user.set_password(password)
            user.save()
        self.stdout.write(f"Log in as {DEMO_USERNAME} / {password}")


def demo_password(path: Path) -> str:
    """AGENTSITE_DEMO_PASSWORD, else the password kept in path, created there if missing."""
    if from_env := os.environ.get("AGENTSITE_DEMO_PASSWORD"):
        return from_env
    if path.exists():
        if kept := path.read_text().strip():
            return kept
        path.unlink()  # an empty file helps nobody: start over
    password = secrets.token_urlsafe(12)
    # Write a private file aside, then link it into place: the file never appears half written,
    # and of two commands starting at once the second finds and reuses the first one's password.
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(password + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        return path.read_text().strip()
    finally:
        draft.unlink()
    return password
