"""Settings, all from the environment; the defaults run on one machine with nothing installed.

DATABASE_URL   default: SQLite in var/agentsite.sqlite3
REDIS_URL      default: the embedded Redis on the unix socket var/redis.sock, which `make run`
               starts itself (redis://host:port/db for a real server)
ANTHROPIC_API_KEY  optional; without it the deterministic offline provider plans and executes
"""

from __future__ import annotations

import json
import os
import re
import socket
from datetime import timedelta
from pathlib import Path

import dj_database_url
from redis.exceptions import ConnectionError as RedisConnectionError

from agentsite.file_modes import PRIVATE_FILE, private_dir, tighten
from planner_ui.core.plan import ROLES

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("AGENTSITE_VAR_DIR", BASE_DIR / "var"))
# The database, the secret key, the logs, the workspaces: only this site's user reads var/.
private_dir(VAR_DIR)


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


# The embedded default runs on one machine with an embedded Redis; naming a Redis server
# (REDIS_URL) means machines share it, and then they must share everything a login depends on.
# The launcher hands its own processes the embedded Redis's socket in REDIS_URL: still embedded.
EMBEDDED_REDIS_SOCKET = VAR_DIR / "redis.sock"
EMBEDDED = os.environ.get("REDIS_URL", "") in ("", f"unix://{EMBEDDED_REDIS_SOCKET}")


def _secret_key() -> str:
    """DJANGO_SECRET_KEY; on the embedded default, a random key kept in var/ so sessions
    survive restarts. Several machines each making their own would log users out as their
    requests move between them, so production refuses to start without one."""
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    if not EMBEDDED:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. With REDIS_URL set (a Redis server, so more than one "
            "machine may serve this site) every web server and worker must share one secret "
            "key: set DJANGO_SECRET_KEY to the same long random string everywhere, e.g. the "
            "output of python -c 'import secrets; print(secrets.token_urlsafe(50))'."
        )
    path = VAR_DIR / "secret_key"
    if not path.exists():
        import secrets

        # Written whole under another name, 0600 from the start, then linked into place: no
        # process reads it half written or readable by others, and the first to link wins.
        draft = path.with_name(f".secret_key.{os.getpid()}")
        with os.fdopen(
            os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE), "w"
        ) as f:
            f.write(secrets.token_urlsafe(50))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process of this site made it first: theirs is the key
        finally:
            draft.unlink()
    tighten(path, PRIVATE_FILE)  # a key an older install left readable
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# Earlier secret keys, comma-separated, while rotating: sessions, signatures and the admin's
# sealed API keys made under them still open (and are sealed again with the new one on save).
SECRET_KEY_FALLBACKS = [
    key for key in os.environ.get("DJANGO_SECRET_KEY_FALLBACKS", "").split(",") if key
]
DEBUG = _env_bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
CSRF_TRUSTED_ORIGINS = [
    o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o
]
# Behind a TLS proxy: cookies only over HTTPS, HSTS, and the header the proxy sets to say the
# request came in over HTTPS ("HTTP_X_FORWARDED_PROTO,https"; set it only behind such a proxy).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES")
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "0"))
SECURE_SSL_REDIRECT = _env_bool("DJANGO_SECURE_SSL_REDIRECT")
if _proxy_header := os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER"):
    _name, _, _value = _proxy_header.partition(",")
    SECURE_PROXY_SSL_HEADER = (_name.strip(), _value.strip() or "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    # The API's interactive docs page, served from this site's own static files.
    "ninja",
    # Login throttling (below, AXES_*).
    "axes",
    "planner_ui",
]

MIDDLEWARE = [
    # First: /healthz and /readyz answer a probe whatever its Host header (agentsite.probes).
    "agentsite.probes.ProbesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "agentsite.csp.SitePolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "planner_ui.middleware.RefuseNulMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its page (429).
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy (django-csp): scripts only from this site or with the page's nonce, no
# images from elsewhere (a Markdown image in model output must not leak data by being fetched),
# connections only back to this site and its WebSocket (agentsite.csp adds ws(s)://host), and
# never inside another site's frame. Style attributes stay allowed (the timeline positions its
# bars with them); style elements and sheets come from this site only.
from csp.constants import NONCE as CSP_NONCE  # noqa: E402  (the placeholder for the nonce)

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", CSP_NONCE],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "agentsite.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "agentsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "planner_ui.context_processors.approvals",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'agentsite.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (Daphne, workers) share one SQLite file: wait for locks instead of
    # failing, take the write lock up front, and let readers run beside a writer.
    DATABASES["default"]["ENGINE"] = "agentsite.sqlite"
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {
        # A file, not memory: the worker and Daphne processes of the tests must see it.
        "NAME": os.environ.get("AGENTSITE_TEST_DB", str(VAR_DIR / "test.sqlite3")),
    }
# AGENTSITE_DB_ASYNC_COMMIT=true (PostgreSQL): a commit does not wait for its flush to disk
# (synchronous_commit=off), except the outbox's, before and after an irreversible call
# (sql.durable). Every transaction that adds to a run's log holds the run's row through its
# commit, so the steps of a layer that finish together wait for each other's flushes, one after
# the other: 4 to 6 ms each on this project's test machine. What a crash of the database server
# can then lose, and what it cannot: README, "Durability on PostgreSQL".
AGENTSITE_DB_ASYNC_COMMIT = False
# AGENTSITE_DB_PREPARED (PostgreSQL): the hot path's statements (planner_ui/stores/sql.py) are
# prepared on each connection the first time it runs them, so the server plans each once per
# connection rather than at every call; planning was about half of the server's time on them
# (pg_stat_statements, benchmark-history.md, thirteenth round). On by default where connections
# last (the pool, or DATABASE_CONN_MAX_AGE): on a connection per task, preparing would only add
# a round trip. Behind PgBouncer in transaction mode with the pool, that needs PgBouncer 1.21 or
# later with max_prepared_statements set; or set this to false.
AGENTSITE_DB_PREPARED = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    AGENTSITE_DB_ASYNC_COMMIT = _env_bool("AGENTSITE_DB_ASYNC_COMMIT")
    # A pool of at most AGENTSITE_DB_POOL_MAX connections per process (a web server, each process
    # of a worker's pool and its main process), kept down to AGENTSITE_DB_POOL_MIN when idle. A
    # connection goes back to the pool when a request or a task is done with it: Daphne runs each
    # request in a thread of its own, and with persistent connections (DATABASE_CONN_MAX_AGE) every
    # such thread kept one, 83 for one idle web server after a burst, 97 under load against
    # PostgreSQL's 100. AGENTSITE_DB_POOL_MAX=0: no pool, a connection per request or task (behind
    # PgBouncer in transaction mode, for instance).
    AGENTSITE_DB_POOL_MAX = int(os.environ.get("AGENTSITE_DB_POOL_MAX") or 4)
    AGENTSITE_DB_POOL_MIN = min(
        AGENTSITE_DB_POOL_MAX, int(os.environ.get("AGENTSITE_DB_POOL_MIN") or 1)
    )
    AGENTSITE_DB_PREPARED = _env_bool(
        "AGENTSITE_DB_PREPARED",
        default=AGENTSITE_DB_POOL_MAX > 0 or DATABASES["default"]["CONN_MAX_AGE"] != 0,
    )
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    # A server that does not answer fails a connection in seconds, not the system's minutes.
    _options.setdefault("connect_timeout", 5)
    # pg_stat_activity says which machine and process holds each connection (a worker's pool
    # processes show their main process's id).
    _options.setdefault("application_name", f"agentsite {socket.gethostname()} {os.getpid()}"[:63])
    if AGENTSITE_DB_PREPARED:
        # psycopg prepares a statement when asked (sql.rows asks) or after this many runs of
        # it on a connection: never, here. Django's own cursors bind on the client and never
        # prepare anything; it turns psycopg's preparing off (None) unless told otherwise.
        _options.setdefault("prepare_threshold", 2**31 - 1)
    if AGENTSITE_DB_ASYNC_COMMIT:
        _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()
    # Behind PgBouncer in transaction mode a cursor may not outlive its transaction on the
    # server it was opened on: DATABASE_DISABLE_SERVER_SIDE_CURSORS=true (README, PgBouncer).
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = _env_bool(
        "DATABASE_DISABLE_SERVER_SIDE_CURSORS"
    )
    if AGENTSITE_DB_POOL_MAX > 0:
        if DATABASES["default"]["CONN_MAX_AGE"]:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(
                "DATABASE_CONN_MAX_AGE is set, and PostgreSQL connections come from a pool of "
                "AGENTSITE_DB_POOL_MAX per process: unset DATABASE_CONN_MAX_AGE (the pool keeps "
                "its connections), or set AGENTSITE_DB_POOL_MAX=0 to have no pool."
            )
        _options["pool"] = {
            "min_size": AGENTSITE_DB_POOL_MIN,
            "max_size": AGENTSITE_DB_POOL_MAX,
            # A request or a task waits this long for a connection when all are in use.
            "timeout": float(os.environ.get("AGENTSITE_DB_POOL_TIMEOUT_S") or 10),
            # Connections above the minimum close after this long unused.
            "max_idle": 60,
        }
        from agentsite.db_pool import forget_inherited_pool_after_fork

        forget_inherited_pool_after_fork()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Login throttling (django-axes): after AGENTSITE_LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is refused for AGENTSITE_LOGIN_COOLOFF_MIN minutes, on
# the login page and the admin's alike (every password check goes through authenticate()).
# The pair, not the address alone (users behind one NAT) nor the username alone (anyone could
# lock a person out). Attempts live in the database, so every web server counts the same ones.
# Behind a proxy every request comes from its address: let Daphne take the client's from the
# proxy's header (`daphne --proxy-headers`).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out pair before checking
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("AGENTSITE_LOGIN_FAILURE_LIMIT") or 5)
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("AGENTSITE_LOGIN_COOLOFF_MIN") or 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Trying again while locked out does not make the wait start over: the person who forgot their
# password is told how long to wait, and that holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_DISABLE_ACCESS_LOG = True  # no table of every login's address and browser, kept forever
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns when it is missing; it serves from finders
WHITENOISE_USE_FINDERS = True

# --- Redis: Celery broker and the Channels layer -------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL") or f"unix://{EMBEDDED_REDIS_SOCKET}"
REDIS_IS_EMBEDDED = EMBEDDED


def kombu_url(redis_url: str) -> str:
    """Kombu spells a unix socket redis+socket:///path; everything else passes through."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url[len("unix://") :]
    return redis_url


# Two installs may share one Redis server, even one database of it. Pub/sub ignores the database
# number, so each names everything it keeps there with a prefix of its own: its channels, its
# keys, and Celery's queue, keys and exchanges (below).
AGENTSITE_PREFIX = os.environ.get("AGENTSITE_PREFIX", "agentsite")
if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", AGENTSITE_PREFIX):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"AGENTSITE_PREFIX is {AGENTSITE_PREFIX!r}: it names this installation's queue, keys and "
        "channels in Redis, so it must be 1 to 63 letters, digits, '_', '.' or '-', starting "
        "with a letter or digit (e.g. agentsite-staging)."
    )

CHANNEL_LAYERS = {
    "default": {
        # One Redis publish per group send: the fastest fan-out to many watchers of one run.
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {
            # A command on a connection that Redis closed (it restarted) connects again and is
            # sent once more: the first WebSocket handshake after a restart used to get a 500.
            "hosts": [{"address": REDIS_URL, "retry_on_error": [RedisConnectionError]}],
            "prefix": AGENTSITE_PREFIX,
        },
    }
}

# Celery's broker is REDIS_URL's Redis unless another is named (RabbitMQ: amqp://...).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or kombu_url(REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A task whose worker vanished is re-delivered after this long; steps are idempotent.
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "600")),
    # How often a worker looks for such tasks: every interval × throttle seconds.
    "unacked_restore_interval": int(os.environ.get("CELERY_UNACKED_RESTORE_INTERVAL", "10")),
    "unacked_restore_throttle": int(os.environ.get("CELERY_UNACKED_RESTORE_THROTTLE", "10")),
    # A worker looks under a lock in Redis that expires after this long. kombu's 300 s meant
    # that a worker SIGKILLed inside its look (milliseconds, but a kill can land there) kept
    # every other worker from re-delivering anything for five minutes: seen in CI, a killed
    # step never came back within the test's minute.
    "unacked_mutex_expire": int(os.environ.get("CELERY_UNACKED_MUTEX_EXPIRE", "30")),
}
# Every other prefix names Celery's keys in Redis too, its queue and its exchanges, so that
# installs sharing one Redis database never take each other's tasks and `celery inspect` or
# `control` reaches only this install's workers. The default prefix keeps Celery's own names: an
# install from before the prefix named them finds its queue where it left it.
_CELERY_NAMES_DEFAULT = AGENTSITE_PREFIX == "agentsite"
if not _CELERY_NAMES_DEFAULT:
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = f"{AGENTSITE_PREFIX}:"
# The workers consume this queue, named here, not on their command line (no -Q).
CELERY_TASK_DEFAULT_QUEUE = AGENTSITE_PREFIX
# On Redis the key prefix keeps the control and event channels apart too (kombu prefixes their
# PUBLISH and SUBSCRIBE); on another broker, the control exchange's name does. (Celery reads
# CELERY_EVENT_EXCHANGE as a deprecated old name: on such a broker, use a virtual host.)
CELERY_CONTROL_EXCHANGE = "celery" if _CELERY_NAMES_DEFAULT else AGENTSITE_PREFIX
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery closes a worker's database connection before and after every task unless told to
# reuse it: opening one costs more than a short step's own queries. Closed every 2 x this many
# tasks; Django still replaces a connection that broke.
CELERY_DB_REUSE_MAX = int(os.environ.get("CELERY_DB_REUSE_MAX", "500"))

# --- Models -------------------------------------------------------------------------------
# Keys come from here or from an admin's ProviderCredential, which wins; they are never logged.
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "")
# Any server speaking OpenAI's Chat Completions: Ollama (http://localhost:11434/v1), vLLM,
# llama.cpp's server, LM Studio. Local servers need no key.
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
OPENAI_MODEL = os.environ.get("OPENAI_MODEL", "llama3.2")
# The provider of a route that names only a model: "offline", "anthropic" or "openai".
AGENTSITE_PROVIDER = os.environ.get(
    "AGENTSITE_PROVIDER",
    "anthropic" if ANTHROPIC_API_KEY else "openai" if OPENAI_BASE_URL else "offline",
)
# Routes are "provider:model" or a bare model id of AGENTSITE_PROVIDER: a strong model plans,
# a cheaper one executes. Each role may have its own (AGENTSITE_CODER_MODEL, ...); the
# synthesizer follows the executors unless AGENTSITE_SYNTHESIZER_MODEL says otherwise.
_planner_default, _executor_default = (
    (OPENAI_MODEL, OPENAI_MODEL)
    if AGENTSITE_PROVIDER == "openai"
    else ("claude-opus-5-5", "claude-sonnet-5-5")
)
AGENTSITE_PLANNER_MODEL = os.environ.get("AGENTSITE_PLANNER_MODEL", _planner_default)
AGENTSITE_EXECUTOR_MODEL = os.environ.get("AGENTSITE_EXECUTOR_MODEL", _executor_default)
AGENTSITE_SYNTHESIZER_MODEL = os.environ.get("AGENTSITE_SYNTHESIZER_MODEL", "")
# The model that judges an evaluation's judge checks, unless its suite or experiment names
# one; empty: the synthesizer's route.
AGENTSITE_JUDGE_MODEL = os.environ.get("AGENTSITE_JUDGE_MODEL", "")
AGENTSITE_ROLE_MODELS = {
    role: os.environ.get(f"AGENTSITE_{role.upper()}_MODEL", "") for role in ROLES
}
AGENTSITE_MODEL_TIMEOUT_S = float(os.environ.get("AGENTSITE_MODEL_TIMEOUT_S", "120"))
# Off, only the offline provider and model servers on this machine may be called (tests).
AGENTSITE_ALLOW_MODEL_REQUESTS = _env_bool("AGENTSITE_ALLOW_MODEL_REQUESTS", default=True)
# Each offline model call sleeps this long, to make its runs look like real ones (demos, bench).
AGENTSITE_OFFLINE_LATENCY_S = float(os.environ.get("AGENTSITE_OFFLINE_LATENCY_S") or 0)
# Retries with backoff on rate limits, overload, server errors and dropped connections.
AGENTSITE_MODEL_MAX_RETRIES = int(os.environ.get("AGENTSITE_MODEL_MAX_RETRIES", "3"))

# USD per million tokens, by "provider:model", bare model id, or "provider:*". Cache rates
# default to 0.1x (read) and 1.25x (write) of input. Anthropic's list prices of 2026-11; check
# them against the vendor's page and override with AGENTSITE_PRICES (a JSON file or JSON text).
AGENTSITE_PRICES = {
    "anthropic:claude-opus-5-5": {"input": 4, "output": 20, "cache_read": 0.2, "cache_write": 5},
    "anthropic:claude-sonnet-5-5": {
        "input": 2,
        "output": 10,
        "cache_read": 0.2,
        "cache_write": 2.5,
    },
    "anthropic:claude-haiku-5-5": {"input": 0.1, "output": 0.5},
    "anthropic:claude-opus-5": {"input": 5, "output": 25},
    "anthropic:claude-sonnet-5": {"input": 2, "output": 10},
    "offline:*": {"input": 0, "output": 0},
    "local:*": {"input": 0, "output": 0},  # a model this machine serves: no bill
}
if os.environ.get("AGENTSITE_PRICES"):
    _prices = os.environ["AGENTSITE_PRICES"].strip()
    AGENTSITE_PRICES = json.loads(_prices if _prices.startswith("{") else Path(_prices).read_text())
# A budget every new run starts with unless the person sets one; empty means none.
AGENTSITE_DEFAULT_BUDGET_TOKENS = (
    int(os.environ.get("AGENTSITE_DEFAULT_BUDGET_TOKENS") or 0) or None
)
AGENTSITE_DEFAULT_BUDGET_USD = os.environ.get("AGENTSITE_DEFAULT_BUDGET_USD") or None

# --- Runs and tools -----------------------------------------------------------------------
AGENTSITE_MAX_TASK_CHARS = 10_000
# How long an MCP server may take to start and answer one call (or list its tools).
AGENTSITE_MCP_TIMEOUT_S = float(os.environ.get("AGENTSITE_MCP_TIMEOUT_S") or 30)
# Requests per personal API token and minute, counted in Redis across every web server.
AGENTSITE_API_RATE_PER_MINUTE = int(os.environ.get("AGENTSITE_API_RATE_PER_MINUTE") or 120)
# POSTs to one template's webhook per minute, whoever sends them (a leaked token cannot flood).
AGENTSITE_WEBHOOK_RATE_PER_MINUTE = int(os.environ.get("AGENTSITE_WEBHOOK_RATE_PER_MINUTE") or 60)
# A page's socket (`?batch=1`) takes the events that reach its ASGI process within this many
# milliseconds of the first as one frame: the finishes and claims of a layer come a few ms
# apart, each in its own publish, and a frame each cost the server and every browser. 0 sends
# each burst of one event-loop pass at once.
AGENTSITE_WS_BATCH_MS = float(os.environ.get("AGENTSITE_WS_BATCH_MS") or 5)
# A worker refreshes the heartbeat of what it runs every AGENTSITE_HEARTBEAT_S (a quarter of the
# lease by default). A running step whose heartbeat is older than the lease has lost its worker:
# the sweep, every AGENTSITE_SWEEP_S, hands it to another, so a dead worker's step is taken over
# within lease + sweep seconds (30 by default). Work queued or asked for that nobody took up for
# AGENTSITE_REQUEUE_AFTER_S (its message lost with a Redis restart) is handed out again.
AGENTSITE_STEP_LEASE_S = float(os.environ.get("AGENTSITE_STEP_LEASE_S", "20"))
AGENTSITE_HEARTBEAT_S = float(
    os.environ.get("AGENTSITE_HEARTBEAT_S") or max(0.5, AGENTSITE_STEP_LEASE_S / 4)
)
AGENTSITE_SWEEP_S = float(os.environ.get("AGENTSITE_SWEEP_S", "10"))
AGENTSITE_REQUEUE_AFTER_S = float(os.environ.get("AGENTSITE_REQUEUE_AFTER_S", "60"))
# A task the queue refuses (Redis restarting or failing over) is sent again, with back-off, for
# this long; after that the sweep hands it out. The run waits meanwhile; it is never failed for it.
AGENTSITE_SEND_RETRY_S = float(os.environ.get("AGENTSITE_SEND_RETRY_S", "30"))
# A worker that has not said it is alive for this long is not counted (the form warns, /readyz
# fails when none is).
AGENTSITE_WORKER_ALIVE_S = float(os.environ.get("AGENTSITE_WORKER_ALIVE_S", "30"))
# Every worker runs the sweep that hands out again work whose worker died or whose message was
# lost (planner_ui.services.sweeper), one per period across the fleet; Celery beat, optional,
# may ask for it too, from any number of processes.
# How often beat looks for templates whose schedule is due (services.templates): a schedule
# fires within this many seconds of its time. Without beat, the workers' sweep timer looks
# (services.sweeper), within AGENTSITE_SWEEP_S.
AGENTSITE_SCHEDULE_TICK_S = float(os.environ.get("AGENTSITE_SCHEDULE_TICK_S", "5"))
CELERY_BEAT_SCHEDULE = {
    "sweep": {"task": "planner_ui.tasks.sweep", "schedule": AGENTSITE_SWEEP_S},
    "template-schedules": {
        "task": "planner_ui.tasks.template_schedules",
        "schedule": AGENTSITE_SCHEDULE_TICK_S,
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# When a step fails: "auto" re-plans what is left and carries on, "review" waits for the
# person, "off" fails the run; at most this many re-plans per run.
AGENTSITE_REPLAN_MODE = os.environ.get("AGENTSITE_REPLAN_MODE", "auto")
AGENTSITE_MAX_REPLANS = int(os.environ.get("AGENTSITE_MAX_REPLANS", "2"))
# How many of the closest past plans (the plan library, the person's own runs that succeeded)
# the planner is given as examples for a new task; 0 gives none.
AGENTSITE_PLAN_EXAMPLES = int(os.environ.get("AGENTSITE_PLAN_EXAMPLES", "2"))
# The single-agent baseline's model calls before it gives up.
AGENTSITE_BASELINE_MAX_ITERATIONS = int(os.environ.get("AGENTSITE_BASELINE_MAX_ITERATIONS", "24"))
AGENTSITE_MAX_STEP_ITERATIONS = int(os.environ.get("AGENTSITE_MAX_STEP_ITERATIONS", "8"))
# Where a step keeps its local copy of the run's files while it works; the files themselves
# live in the database, so every machine sees them.
AGENTSITE_WORKSPACES_DIR = Path(os.environ.get("AGENTSITE_WORKSPACES_DIR", VAR_DIR / "workspaces"))
AGENTSITE_RUN_FILE_MAX_BYTES = int(os.environ.get("AGENTSITE_RUN_FILE_MAX_BYTES", "5000000"))
AGENTSITE_RUN_FILES_MAX_BYTES = int(os.environ.get("AGENTSITE_RUN_FILES_MAX_BYTES", "50000000"))
AGENTSITE_FETCH_MAX_BYTES = int(os.environ.get("AGENTSITE_FETCH_MAX_BYTES", "200000"))
AGENTSITE_FETCH_TIMEOUT_S = float(os.environ.get("AGENTSITE_FETCH_TIMEOUT_S", "10"))
# Tools refuse loopback and private addresses (SSRF) except these: IPs, CIDRs or host[:port].
AGENTSITE_TOOL_NET_ALLOW = [
    entry.strip()
    for entry in os.environ.get("AGENTSITE_TOOL_NET_ALLOW", "").split(",")
    if entry.strip()
]
# What each tool reads from its ToolContext.settings.
AGENTSITE_TOOL_SETTINGS = {
    "fetch_max_bytes": AGENTSITE_FETCH_MAX_BYTES,
    "fetch_timeout_s": AGENTSITE_FETCH_TIMEOUT_S,
    "post_max_bytes": int(os.environ.get("AGENTSITE_POST_MAX_BYTES", "100000")),
    "post_timeout_s": float(os.environ.get("AGENTSITE_POST_TIMEOUT_S", "10")),
    "shell_timeout_s": float(os.environ.get("AGENTSITE_SHELL_TIMEOUT_S", "20")),
    "shell_max_output_chars": int(os.environ.get("AGENTSITE_SHELL_MAX_OUTPUT_CHARS", "20000")),
    # Limits of each sandboxed command (shell, python): its address space, its processes and
    # the largest file it may write; CPU time follows AGENTSITE_SHELL_TIMEOUT_S.
    "command_memory_bytes": int(os.environ.get("AGENTSITE_COMMAND_MEMORY_BYTES", str(1 << 30))),
    "command_processes": int(os.environ.get("AGENTSITE_COMMAND_PROCESSES", "64")),
    "command_file_bytes": int(
        os.environ.get("AGENTSITE_COMMAND_FILE_BYTES", AGENTSITE_RUN_FILE_MAX_BYTES)
    ),
    "net_allow": AGENTSITE_TOOL_NET_ALLOW,
}

# send_email: through SMTP once EMAIL_HOST is set; until then into the run's own files, under
# sent_mail/ (services.mail), readable from every machine.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", default=EMAIL_PORT == 587)
EMAIL_USE_SSL = _env_bool("EMAIL_USE_SSL", default=EMAIL_PORT == 465)
EMAIL_TIMEOUT = 30
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.filebased.EmailBackend",
)
EMAIL_FILE_PATH = VAR_DIR / "sent_mail"
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "agentsite@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # lockouts; not a line per process start
    },
}
