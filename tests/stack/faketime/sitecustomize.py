"""Imported at start-up (as `sitecustomize`) by the worker a test runs under libfaketime, and by
nothing else. Debian's libfaketime 0.9.10, told to leave the monotonic clock alone, fails
clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) with EINVAL, and Python's time.sleep makes
just that call; a timed wait on a condition is unaffected, so sleeps wait on one instead."""

import threading
import time


def _sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    threading.Event().wait(seconds)


time.sleep = _sleep
