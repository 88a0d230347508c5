"""agentsite.heap: the long-lived processes' heap, frozen out of the collector's way."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

from agentsite.heap import heap_freeze

ROOT = Path(__file__).resolve().parent.parent


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_heap_freeze_collects_the_garbage_first_and_freezes_what_lives() -> None:
    gone, kept = Node(), Node()
    gone_ref = weakref.ref(gone)
    del gone
    try:
        heap_freeze()
        assert gone_ref() is None  # freed, not frozen for the life of the process
        assert gc.get_freeze_count() > 0
        # What lives is out of reach of every collection from now on.
        assert all(o is not kept for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()


def _frozen_after(code: str) -> tuple[int, bool]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agentsite.settings"}
    shown = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return int(shown[-2]), shown[-1] == "True"


def test_the_asgi_server_freezes_the_app_with_its_views_loaded() -> None:
    frozen, views = _frozen_after(
        "import gc, sys, agentsite.asgi; "
        "print(gc.get_freeze_count(), 'planner_ui.views' in sys.modules)"
    )
    assert frozen > 50_000 and views


def test_a_worker_freezes_what_its_pool_will_inherit_before_it_forks() -> None:
    frozen, loaded = _frozen_after(
        "import django, gc, sys; django.setup(); "
        "from agentsite.celery import _preload; _preload(); "
        "print(gc.get_freeze_count(), 'planner_ui.services.steps' in sys.modules)"
    )
    assert frozen > 50_000 and loaded
