"""Settings from the environment, read by a fresh process as a server would: production refuses
to start without a shared secret key; the proxy, cookie, CSRF, mail and broker settings land."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What the settings read: a probe starts without the shell's (make test-postgres sets
# DATABASE_URL, for one).
ENVIRONMENT_OF_THE_SETTINGS = (
    "DJANGO_", "REDIS_URL", "CELERY_", "EMAIL_", "AGENTSITE_", "DATABASE_"
)  # fmt: skip

PROBE = """
import json, django
django.setup()
from django.conf import settings as s
print(json.dumps({
    "secret": bool(s.SECRET_KEY),
    "embedded": s.EMBEDDED,
    "csrf": s.CSRF_TRUSTED_ORIGINS,
    "secure_cookies": [s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE],
    "hsts": s.SECURE_HSTS_SECONDS,
    "proxy": list(getattr(s, "SECURE_PROXY_SSL_HEADER", None) or []),
    "broker": s.CELERY_BROKER_URL,
    "prefix": s.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
    "email": [s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS],
    "conn_max_age": s.DATABASES["default"]["CONN_MAX_AGE"],
    "server_side_cursors": not s.DATABASES["default"].get("DISABLE_SERVER_SIDE_CURSORS"),
    "options": {k: v for k, v in s.DATABASES["default"].get("OPTIONS", {}).items()
                if k != "application_name"},
    "prepared": s.AGENTSITE_DB_PREPARED,
}))
"""


def settings_of(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(ENVIRONMENT_OF_THE_SETTINGS)
    }
    base.update(DJANGO_SETTINGS_MODULE="agentsite.settings", AGENTSITE_VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=base, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_production_without_a_secret_key_refuses_to_start_and_says_what_to_set(tmp_path):
    result = settings_of(tmp_path, REDIS_URL="redis://127.0.0.1:6379/9")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set. With REDIS_URL set" in result.stderr
    assert "secrets.token_urlsafe(50)" in result.stderr


def test_the_embedded_default_keeps_making_its_own_key(tmp_path):
    result = settings_of(tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["secret"] and seen["embedded"]
    assert (tmp_path / "secret_key").exists()


def test_a_production_setup_reads_everything_from_the_environment(tmp_path):
    result = settings_of(
        tmp_path,
        REDIS_URL="redis://redis.internal:6379/0",
        DJANGO_SECRET_KEY="shared-by-every-machine",
        DJANGO_CSRF_TRUSTED_ORIGINS="https://agents.example.com,https://www.example.com",
        DJANGO_SECURE_COOKIES="true",
        DJANGO_HSTS_SECONDS="31536000",
        DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
        CELERY_BROKER_URL="amqp://guest:guest@rabbit:5672//",
        AGENTSITE_PREFIX="staging",
        EMAIL_HOST="smtp.example.com",
        DATABASE_CONN_MAX_AGE="60",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "secret": True,
        "embedded": False,
        "csrf": ["https://agents.example.com", "https://www.example.com"],
        "secure_cookies": [True, True],
        "hsts": 31536000,
        "proxy": ["HTTP_X_FORWARDED_PROTO", "https"],
        "broker": "amqp://guest:guest@rabbit:5672//",
        "prefix": "staging",
        "email": ["django.core.mail.backends.smtp.EmailBackend", "smtp.example.com", 587, True],
        "conn_max_age": 60,
        "server_side_cursors": True,
        "prepared": False,
        "options": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


def test_the_broker_is_redis_unless_another_is_named(tmp_path):
    result = settings_of(tmp_path, REDIS_URL="redis://r:6379/2", DJANGO_SECRET_KEY="k")
    assert json.loads(result.stdout)["broker"] == "redis://r:6379/2"
    assert json.loads(result.stdout)["prefix"] == "agentsite"


CELERY_PROBE = """
import json, django
django.setup()
from django.conf import settings
from agentsite.celery import app
names = sorted(k for k in dir(settings) if k.startswith("CELERY_"))
print(json.dumps({
    "unread": [k for k in names if app.conf.get(k[len("CELERY_"):].lower(), "?") != getattr(
        settings, k) and k[len("CELERY_"):].lower() in app.conf],
    "broker": app.conf.broker_url,
    "visibility": app.conf.broker_transport_options["visibility_timeout"],
    "mutex_expire": app.conf.broker_transport_options["unacked_mutex_expire"],
    "acks_late": app.conf.task_acks_late,
    "queue": app.conf.task_default_queue,
    "keyprefix": app.conf.broker_transport_options.get("global_keyprefix"),
    "control": app.conf.control_exchange,
    "reuse": app.conf.get("CELERY_DB_REUSE_MAX"),
    "serializer": app.conf.task_serializer,
}))
"""


def test_celery_reads_every_celery_setting_from_the_environment(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(ENVIRONMENT_OF_THE_SETTINGS)
    }
    env.update(
        DJANGO_SETTINGS_MODULE="agentsite.settings",
        AGENTSITE_VAR_DIR=str(tmp_path),
        REDIS_URL="redis://redis.internal:6379/3",
        DJANGO_SECRET_KEY="k",
        CELERY_VISIBILITY_TIMEOUT="77",
        CELERY_UNACKED_MUTEX_EXPIRE="7",
        CELERY_DB_REUSE_MAX="9",
    )
    result = subprocess.run(
        [sys.executable, "-c", CELERY_PROBE], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "unread": [],
        "broker": "redis://redis.internal:6379/3",
        "visibility": 77,
        "mutex_expire": 7,
        "acks_late": True,
        "queue": "agentsite",
        # The default prefix keeps Celery's own names: an older install's queue stays found.
        "keyprefix": None,
        "control": "celery",
        "reuse": 9,
        "serializer": "json",  # Celery's own default, where Django sets nothing
    }


def celery_of(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(ENVIRONMENT_OF_THE_SETTINGS)
    }
    base.update(
        DJANGO_SETTINGS_MODULE="agentsite.settings",
        AGENTSITE_VAR_DIR=str(tmp_path),
        REDIS_URL="redis://redis.internal:6379/0",
        DJANGO_SECRET_KEY="k",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", CELERY_PROBE], cwd=REPO, env=base, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def test_another_prefix_names_the_queue_the_brokers_keys_and_the_control_exchange(tmp_path):
    result = celery_of(tmp_path, AGENTSITE_PREFIX="staging")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["unread"] == []
    assert (seen["queue"], seen["keyprefix"], seen["control"]) == ("staging", "staging:", "staging")


def test_a_prefix_redis_cannot_hold_is_refused_at_start_up(tmp_path):
    result = celery_of(tmp_path, AGENTSITE_PREFIX="my site")
    assert result.returncode != 0
    assert "AGENTSITE_PREFIX is 'my site': it names this installation's queue" in result.stderr


def test_postgresql_connections_come_from_a_small_pool_per_process(tmp_path):
    url = "postgres://agentsite@db.internal:5432/agentsite"
    result = settings_of(tmp_path, DATABASE_URL=url, AGENTSITE_DB_POOL_MAX="3")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["conn_max_age"] == 0
    assert seen["options"] == {
        "connect_timeout": 5,
        "pool": {"min_size": 1, "max_size": 3, "timeout": 10.0, "max_idle": 60},
        "prepare_threshold": 2**31 - 1,
    }
    # Behind PgBouncer in transaction mode: no pool of its own, no server-side cursors.
    no_pool = settings_of(
        tmp_path,
        DATABASE_URL=url,
        AGENTSITE_DB_POOL_MAX="0",
        DATABASE_DISABLE_SERVER_SIDE_CURSORS="true",
    )
    assert json.loads(no_pool.stdout)["options"] == {"connect_timeout": 5}
    assert json.loads(no_pool.stdout)["server_side_cursors"] is False
    assert seen["server_side_cursors"] is True


def test_asynchronous_commits_are_asked_of_postgresql_only(tmp_path):
    url = "postgres://agentsite@db.internal:5432/agentsite"
    result = settings_of(tmp_path, DATABASE_URL=url, AGENTSITE_DB_ASYNC_COMMIT="true")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["options"]["options"] == "-c synchronous_commit=off"
    durable = settings_of(tmp_path, DATABASE_URL=url)
    assert "options" not in json.loads(durable.stdout)["options"]
    # SQLite has no such setting: its own (WAL, synchronous=NORMAL) stands.
    sqlite = settings_of(tmp_path, AGENTSITE_DB_ASYNC_COMMIT="true")
    assert "synchronous=NORMAL" in json.loads(sqlite.stdout)["options"]["init_command"]


def test_the_hot_path_s_statements_are_prepared_on_postgresql_unless_told_not_to(tmp_path):
    url = "postgres://agentsite@db.internal:5432/agentsite"
    prepared = json.loads(settings_of(tmp_path, DATABASE_URL=url).stdout)
    # psycopg prepares only what sql.rows asks it to (Django's own cursors never prepare).
    assert prepared["prepared"] and prepared["options"]["prepare_threshold"] == 2**31 - 1
    behind_an_old_pgbouncer = settings_of(tmp_path, DATABASE_URL=url, AGENTSITE_DB_PREPARED="false")
    seen = json.loads(behind_an_old_pgbouncer.stdout)
    assert not seen["prepared"] and "prepare_threshold" not in seen["options"]
    # A connection per task would prepare every statement only to run it once or twice.
    unpooled = settings_of(tmp_path, DATABASE_URL=url, AGENTSITE_DB_POOL_MAX="0")
    assert not json.loads(unpooled.stdout)["prepared"]
    kept = settings_of(
        tmp_path, DATABASE_URL=url, AGENTSITE_DB_POOL_MAX="0", DATABASE_CONN_MAX_AGE="60"
    )
    assert json.loads(kept.stdout)["prepared"]
    assert not json.loads(settings_of(tmp_path).stdout)["prepared"]  # SQLite


def test_persistent_connections_beside_the_pool_are_refused_with_what_to_do(tmp_path):
    result = settings_of(
        tmp_path,
        DATABASE_URL="postgres://agentsite@db.internal:5432/agentsite",
        DATABASE_CONN_MAX_AGE="60",
    )
    assert result.returncode != 0
    assert (
        "DATABASE_CONN_MAX_AGE is set, and PostgreSQL connections come from a pool of "
        "AGENTSITE_DB_POOL_MAX per process: unset DATABASE_CONN_MAX_AGE"
    ) in result.stderr
