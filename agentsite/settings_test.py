"""Settings for the test suite: the same as production's defaults, in their own var/test/ folder,
so tests never share a database, a Redis socket or a Celery queue with a running `make run`.

Whatever keys and model settings the developer's shell holds, tests (and every process they
start, which load these settings too) plan and execute offline, and the provider factory
refuses any model server that is not on this machine.
"""

import os
import re
import sys
from pathlib import Path

# Model keys, endpoints and routes from the shell must change nothing in a test. Except
# AGENTSITE_TEST_MODEL: a GGUF file a developer hands the opt-in real-model test, served on
# this machine like the test's own small model.
MODEL_ENVIRONMENT = re.compile(
    r"^(ANTHROPIC_.*|OPENAI_.*|AGENTSITE_PROVIDER|AGENTSITE_(?!TEST_MODEL$)[A-Z]+_MODEL"
    r"|AGENTSITE_PRICES|AGENTSITE_DEFAULT_BUDGET_.*)$"
)
for _name in [name for name in os.environ if MODEL_ENVIRONMENT.match(name)]:
    del os.environ[_name]
os.environ["AGENTSITE_ALLOW_MODEL_REQUESTS"] = "false"
# A test session on a Redis server (REDIS_URL) is not production: it needs no key of its own.
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-a-secret")

os.environ.setdefault(
    "AGENTSITE_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test")
)
# Each pytest-xdist worker (gw0, gw1, ...) in a folder of its own: its own SQLite files,
# embedded Redis and Celery queue, as if it were the only session. Its workers inherit the
# controller's environment, folder included; the processes a test starts get the worker's.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_var_dir = Path(os.environ["AGENTSITE_VAR_DIR"])
if _worker and _var_dir.name != _worker:
    os.environ["AGENTSITE_VAR_DIR"] = str(_var_dir / _worker)

from .settings import *  # noqa: E402,F403

# The offline model answers at once in the test process, whatever the shell holds (`make run`
# gives it a latency of its own); a test that wants it slower sets it. The processes tests
# start get theirs from tests/conftest.py's child_env: 0 unless the test asks.
if "pytest" in sys.modules:
    AGENTSITE_OFFLINE_LATENCY_S = 0.0

# Hashing test users' passwords slowly buys nothing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Login throttling stays configured (the backend, the middleware) but off: the test client's
# login() calls authenticate() without a request, which django-axes refuses, and a suite that
# logs in often must not lock itself out. tests/security/test_login_throttle.py turns it on.
AXES_ENABLED = False
