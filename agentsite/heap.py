"""The long-lived processes' heap (Daphne, a worker's main and pool processes), kept out of the
garbage collector's way."""

from __future__ import annotations

import gc


def heap_freeze(*, views: bool = False) -> None:
    """Collect what is garbage now, then move every object left to the collector's permanent
    generation, which its collections never walk. With `views` (a process that serves pages),
    the URLconf and the views it imports, which the first request would load otherwise, are
    loaded first and frozen with the rest.

    Once a process has imported the app, its heap holds about 320,000 objects that live as long
    as it does (modules, Django's registries, URL patterns, the providers' tables), and every
    full collection walked them all: 82 ms of CPU in the middle of whatever step or page set it
    off, and about a tenth of a 1,000-step plan's page (benchmark-history.md, sixteenth round).
    Called before a worker forks its pool, the children inherit the frozen heap, and their
    collections no longer write to the parent's pages (copy-on-write keeps them shared)."""
    if views:
        from django.urls import get_resolver

        get_resolver().url_patterns  # noqa: B018 - loaded for its imports
    gc.collect()
    gc.freeze()
