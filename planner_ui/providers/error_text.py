"""Wording shared by the vendor providers' error messages, so both say the same thing alike."""

from __future__ import annotations

import json


def retries_text(retries: int) -> str:
    if retries == 0:
        return "retries are off"
    return f"{retries} retr{'y' if retries == 1 else 'ies'} did not help"


def body_text(body: object) -> str:
    """An error body as the server sent it: JSON when it was JSON."""
    if body is None:
        return ""
    if isinstance(body, (dict, list)):
        return json.dumps(body)
    return str(body)


def timeout_seconds(timeout: object) -> str:
    # A client keeps a float, or an httpx2 Timeout whose read timeout is the one that fires.
    seconds = getattr(timeout, "read", timeout)
    return f"{seconds:g}" if isinstance(seconds, (int, float)) else str(seconds)
