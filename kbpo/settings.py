"""Django settings for KBPO, read from environment variables.

With nothing set, the service runs on SQLite with Celery in eager mode and the
simulated crowd, so a newcomer needs no servers. Production sets KBPO_ENV=production,
DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and the allowed hosts
(every variable is described in docs/reference/settings.md).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kbpo.envvars import env_bool, env_float, env_int, env_list

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_SECRET_KEY = "insecure-development-key-do-not-use-in-production"


# KBPO_ENV=production turns on every production safeguard; anything else is development.
KBPO_ENV = os.environ.get("KBPO_ENV", "development").strip().lower()
PRODUCTION = KBPO_ENV == "production"
DEBUG = env_bool("DEBUG", not PRODUCTION)
SECRET_KEY = os.environ.get("SECRET_KEY", DEFAULT_SECRET_KEY)
if PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured(
            "DEBUG is on but KBPO_ENV=production: set DEBUG=0 (debug pages leak secrets).")
    if SECRET_KEY == DEFAULT_SECRET_KEY or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured(
            "KBPO_ENV=production needs SECRET_KEY set to a random string of at least 50 "
            "characters (the built-in development key is refused), e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(64))'.")

# --- Behind the TLS proxy (deploy/Caddyfile, docs/operators/deployment.md) ----------------------
# KBPO_HOSTNAME is the public name the proxy holds a certificate for, KBPO_HTTPS_PORT the
# port it answers HTTPS on. The allowed hosts, the trusted CSRF origin and the public URL
# default to that site; an explicit ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS or
# KBPO_PUBLIC_URL wins (empty counts as unset, as in a copied .env).
KBPO_HOSTNAME = os.environ.get("KBPO_HOSTNAME", "").strip().lower()
if KBPO_HOSTNAME and not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", KBPO_HOSTNAME):
    raise ImproperlyConfigured(
        f"KBPO_HOSTNAME must be a bare host name such as kbpo.example.org (no scheme, port "
        f"or path), got {KBPO_HOSTNAME!r}")
KBPO_HTTPS_PORT = env_int("KBPO_HTTPS_PORT", 443)
KBPO_SITE_ORIGIN = "" if not KBPO_HOSTNAME else f"https://{KBPO_HOSTNAME}" + (
    "" if KBPO_HTTPS_PORT == 443 else f":{KBPO_HTTPS_PORT}")
ALLOWED_HOSTS = (env_list("ALLOWED_HOSTS", "")
                 or ([KBPO_HOSTNAME] if KBPO_HOSTNAME
                     else ["localhost", "127.0.0.1", "[::1]", "testserver"]))
CSRF_TRUSTED_ORIGINS = (env_list("CSRF_TRUSTED_ORIGINS", "")
                        or ([KBPO_SITE_ORIGIN] if KBPO_SITE_ORIGIN else []))
# Django believes the proxy's X-Forwarded-Proto only when told it runs behind one
# (docker-compose.yml sets KBPO_BEHIND_PROXY=1; only Caddy can reach its web service, and
# Caddy overwrites whatever a client sent). Without a proxy the header is the client's
# own claim, so it is ignored.
KBPO_BEHIND_PROXY = env_bool("KBPO_BEHIND_PROXY", False)
if KBPO_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS is host-wide and outlives the trial: a browser told it for localhost would refuse
# plain http://localhost:<any port> (make demo, say) for a year. A local name gets none
# unless SECURE_HSTS_SECONDS asks for it.
KBPO_LOCAL_HOSTNAME = KBPO_HOSTNAME in {"localhost", "127.0.0.1"} or KBPO_HOSTNAME.endswith(
    ".localhost")
# --- end of the proxy block ------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as our own static files
    "axes",
    "kbpo.core",
    "submissions",
    "annotations",
    "estimation",
    "kbpo.demo",
]

MIDDLEWARE = [
    "kbpo.core.middleware.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "kbpo.core.middleware.RejectNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "kbpo.core.middleware.CSPMiddleware",  # django-csp's, the policy built once
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "kbpo.urls"

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
                "kbpo.core.context_processors.site",
            ],
        },
    },
]

WSGI_APPLICATION = "kbpo.wsgi.application"

# Database: DATABASE_URL (postgres://user@host:5432/name) or SQLite by default.
DATABASE_URL = os.environ.get("DATABASE_URL", "")
DATABASES = {
    "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)
    if DATABASE_URL
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}
}
# A kept connection is pinged before each request reuses it: after a database restart
# or a terminated backend the request reconnects instead of answering 500.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# The raw queries every page view runs are prepared once per Postgres connection
# (kbpo/core/prepared.py); 0 behind a pooler in transaction mode, which loses them.
KBPO_DB_PREPARED_STATEMENTS = env_bool("KBPO_DB_PREPARED_STATEMENTS", True)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Long lock waits instead of "database is locked" under concurrent requests; and
    # every transaction takes the write lock when it begins (BEGIN IMMEDIATE): a deferred
    # one that reads and then writes fails at once, without waiting, when another writer
    # holds the lock (serve_demo's crowd and a `submit` beside it did, about one run in five).
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options["timeout"] = 30
    options["transaction_mode"] = "IMMEDIATE"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "var" / "media"))
MEDIA_URL = "media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Email: printed to the console unless an SMTP backend is configured.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "KBPO <noreply@kbpo.local>")

# Security headers. Task pages that MTurk frames override X-Frame-Options per view.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS",
                                  0 if KBPO_LOCAL_HOSTNAME else 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# REST API: token or session auth; OpenAPI schema by drf-spectacular.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KBPO API",
    "DESCRIPTION": "Submit knowledge bases and read evaluation results.",
    "VERSION": "1.0.0",
    # /api/docs/ loads Swagger UI from the installed package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# Celery: eager (in-process) unless a broker is configured.
# Eager mode still names an in-memory transport, with its host: without one kombu logs
# "No hostname was supplied" whenever a connection describes itself.
_BROKER = os.environ.get("CELERY_BROKER_URL", "")
CELERY_BROKER_URL = _BROKER or "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = not _BROKER
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or _BROKER or None
# Tasks a worker enqueues itself (ingest → plan → aggregate) go to this queue.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Score recomputations to a queue of their own (unset: the default queue), consumed by
# one single-process worker (docker-compose.yml's `scorer`): each corpus's population,
# labels and answers are kept in memory between runs by the process that ran it last,
# so one process keeps one copy and finds it warm every time, and a long recompute never
# holds up the crowd's tasks (confirming answers, posting HITs) queued behind it.
KBPO_SCORING_QUEUE = os.environ.get("KBPO_SCORING_QUEUE", "").strip()
# Ingestions to their own queue too (compose's `ingester`): a burst of large or hostile
# uploads never starves the default queue (confirmations, postings, aggregation).
KBPO_INGEST_QUEUE = os.environ.get("KBPO_INGEST_QUEUE", "").strip()
CELERY_TASK_ROUTES = {
    **({"estimation.recompute_corpus": {"queue": KBPO_SCORING_QUEUE}}
       if KBPO_SCORING_QUEUE else {}),
    **({"submissions.ingest": {"queue": KBPO_INGEST_QUEUE}} if KBPO_INGEST_QUEUE else {}),
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# ==== Security: shared cache, login lockout, rate limits, CSP, task acknowledgement ====
# (docs/reference/settings.md, "Security"). Kept together so a reviewer sees every knob.
#
# Shared cache. Rate-limit counters must be shared by every gunicorn worker, so
# production uses Redis: CACHE_URL, else the broker's Redis when the broker is Redis.
# Development and tests keep a per-process memory cache (nothing to run).
CACHE_URL = os.environ.get("CACHE_URL", "")
if not CACHE_URL and PRODUCTION and CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CACHE_URL = CELERY_BROKER_URL
CACHES = {"default": (
    {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
     "KEY_PREFIX": "kbpo"}
    if CACHE_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"})}
# Sessions are read from that Redis and written through to the database (a lost cache
# entry is read back from the table), so a signed-in page view makes no session query.
# Without Redis they stay in the database alone: a per-process memory cache would let
# the other workers go on accepting a session after its log-out.
# (Django's engines, with the table read as a prepared query: kbpo/core/sessions.)
SESSION_ENGINE = ("kbpo.core.sessions.cached_db" if CACHE_URL else "kbpo.core.sessions.db")
# Proxies in front of the web server that append to X-Forwarded-For (0: none, the
# client is REMOTE_ADDR). Every per-IP limit below reads the client address through it.
KBPO_TRUSTED_PROXY_COUNT = env_int("KBPO_TRUSTED_PROXY_COUNT", 0)
#
# Login lockout (django-axes, site login and admin login): after
# KBPO_LOGIN_FAILURE_LIMIT failed attempts from one client address, logins from it are
# refused with HTTP 429 for KBPO_LOGIN_COOLOFF_SECONDS. Attempts are kept in the
# database, so every web worker sees them; a successful login resets the count.
# After it, Django's ModelBackend with the per-request user read prepared (no caching).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "kbpo.core.backends.PreparedModelBackend"]
AXES_FAILURE_LIMIT = env_int("KBPO_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = dt.timedelta(seconds=env_int("KBPO_LOGIN_COOLOFF_SECONDS", 900))
# Per address and, separately, per account (issue 41): either count locks the login.
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
# Its page, with a Retry-After header (kbpo/core/accounts.py).
AXES_LOCKOUT_CALLABLE = "kbpo.core.accounts.lockout_response"
AXES_CLIENT_IP_CALLABLE = "kbpo.core.security.client_ip"
AXES_VERBOSE = False
# Sign-ups per client address, and password-reset requests per address (429 beyond) and
# reset mails per account (silently none beyond), within their windows (seconds). A new
# account must open the link mailed to it (valid KBPO_EMAIL_CONFIRM_MAX_AGE seconds)
# before it may upload; accounts not made by sign-up count as confirmed.
KBPO_REGISTER_RATE_PER_IP = env_int("KBPO_REGISTER_RATE_PER_IP", 5)
KBPO_REGISTER_RATE_WINDOW = env_int("KBPO_REGISTER_RATE_WINDOW", 3600)
KBPO_PASSWORD_RESET_RATE_PER_IP = env_int("KBPO_PASSWORD_RESET_RATE_PER_IP", 5)
KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT = env_int("KBPO_PASSWORD_RESET_RATE_PER_ACCOUNT", 3)
KBPO_PASSWORD_RESET_RATE_WINDOW = env_int("KBPO_PASSWORD_RESET_RATE_WINDOW", 3600)
KBPO_EMAIL_CONFIRM_MAX_AGE = env_int("KBPO_EMAIL_CONFIRM_MAX_AGE", 3 * 24 * 3600)
#
# API rate limits (DRF throttles). Anonymous and authenticated request rates, and a
# limit on failed token logins per client address (a guessed token is refused with 429
# once it is reached, until the window ends).
KBPO_API_RATE_ANON = os.environ.get("KBPO_API_RATE_ANON", "120/min")
KBPO_API_RATE_USER = os.environ.get("KBPO_API_RATE_USER", "600/min")
KBPO_TOKEN_FAILURE_LIMIT = env_int("KBPO_TOKEN_FAILURE_LIMIT", 20)
KBPO_TOKEN_FAILURE_WINDOW = env_int("KBPO_TOKEN_FAILURE_WINDOW", 900)
# POST /api/auth/token/ (username and password for the API token, kbpo/core/token_api.py):
# attempts per client address per window, and failed attempts per username per window
# (django-axes' lockout above applies as well).
KBPO_TOKEN_LOGIN_RATE_PER_IP = env_int("KBPO_TOKEN_LOGIN_RATE_PER_IP", 10)
KBPO_TOKEN_LOGIN_RATE_WINDOW = env_int("KBPO_TOKEN_LOGIN_RATE_WINDOW", 60)
KBPO_TOKEN_LOGIN_FAILURES_PER_USER = env_int("KBPO_TOKEN_LOGIN_FAILURES_PER_USER", 10)
KBPO_TOKEN_LOGIN_FAILURE_WINDOW = env_int("KBPO_TOKEN_LOGIN_FAILURE_WINDOW", 900)
REST_FRAMEWORK.update({
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "kbpo.core.security.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle",
                                 "rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"anon": KBPO_API_RATE_ANON, "user": KBPO_API_RATE_USER},
    "NUM_PROXIES": KBPO_TRUSTED_PROXY_COUNT,
})
#
# The crowd answer endpoint (POST /annotate/hit/<key>/answers/): answers accepted per
# client address and per worker id within KBPO_ANSWER_RATE_WINDOW seconds; more are
# answered 429 with the wait in Retry-After.
KBPO_ANSWER_RATE_PER_IP = env_int("KBPO_ANSWER_RATE_PER_IP", 60)
KBPO_ANSWER_RATE_PER_WORKER = env_int("KBPO_ANSWER_RATE_PER_WORKER", 10)
KBPO_ANSWER_RATE_WINDOW = env_int("KBPO_ANSWER_RATE_WINDOW", 60)
# The public try-it pages (/annotate/try/...): at most this many per client address per
# window; more are answered 429 with the wait in Retry-After (0 disables the limit).
KBPO_TRY_RATE_PER_IP = env_int("KBPO_TRY_RATE_PER_IP", 30)
KBPO_TRY_RATE_WINDOW = env_int("KBPO_TRY_RATE_WINDOW", 60)
#
# The compare page and API (/leaderboard/<tag>/compare/, /api/compare/<tag>/): fresh
# comparisons per client address within KBPO_COMPARE_RATE_WINDOW seconds. Each loads the
# whole corpus (seconds at 100 systems); an answer already in the cache is not counted.
# More are answered 429 with the wait in Retry-After.
KBPO_COMPARE_RATE_PER_IP = env_int("KBPO_COMPARE_RATE_PER_IP", 10)
KBPO_COMPARE_RATE_WINDOW = env_int("KBPO_COMPARE_RATE_WINDOW", 60)
#
# Content-Security-Policy on every page (django-csp). MTurk task pages and the try-it
# pages send their own policy (annotations/interfaces/views.py), which keeps MTurk's
# frame-ancestors. The API docs page needs nothing more (kbpo/urls.py).
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": ["'self'"], "script-src": ["'self'"], "style-src": ["'self'"],
    # Inline style="" attributes (progress bars) only; <style> elements stay refused.
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"], "font-src": ["'self'"], "connect-src": ["'self'"],
    "object-src": ["'none'"], "base-uri": ["'none'"], "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}}
#
# Celery task acknowledgement. Tasks are idempotent and acknowledged only after they
# finish (acks_late); a task whose pool process dies (SIGKILL, OOM) is requeued at once
# (reject_on_worker_lost). If the whole worker dies, Redis redelivers its unacknowledged
# tasks after CELERY_VISIBILITY_TIMEOUT seconds; keep it above the longest task (and
# above any countdown), or a slow task would be run twice in parallel.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    # How often a running worker looks for unacknowledged tasks past the timeout.
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": 1,
}
# ==== end of the security block =========================================================

# KBPO product settings.
KBPO_CROWD_BACKEND = os.environ.get("KBPO_CROWD_BACKEND", "simulated")
if KBPO_CROWD_BACKEND not in {"simulated", "local", "mturk"}:
    raise ImproperlyConfigured(
        f"KBPO_CROWD_BACKEND must be simulated, local or mturk, got {KBPO_CROWD_BACKEND!r}")
MTURK_SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
MTURK_PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
# Production MTurk spends real money: it needs this flag *and* a budget (crowd app).
MTURK_USE_PRODUCTION = env_bool("MTURK_USE_PRODUCTION", False)
MTURK_ENDPOINT_URL = os.environ.get("MTURK_ENDPOINT_URL") or (
    MTURK_PRODUCTION_ENDPOINT if MTURK_USE_PRODUCTION else MTURK_SANDBOX_ENDPOINT)
# boto3 reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from the environment itself.
AWS_DEFAULT_REGION = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
KBPO_PUBLIC_URL = (os.environ.get("KBPO_PUBLIC_URL") or KBPO_SITE_ORIGIN
                   or "http://localhost:8000")
# A corpus line longer than this is reported as an error rather than parsed.
KBPO_CORPUS_MAX_LINE_BYTES = env_int("KBPO_CORPUS_MAX_LINE_BYTES", 5_000_000)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # django-axes logs every login; failures and lockouts are WARNINGs.
        "axes": {"level": "WARNING"},
        # In eager mode every task would log two lines inside commands like the demo.
        "celery.app.trace": {"level": "WARNING" if CELERY_TASK_ALWAYS_EAGER else "INFO"},
    },
}

# Submissions (docs/reference/kb-format.md). Uncompressed size cap, enforced while streaming at
# upload and again in the ingestion task, so a gzip bomb is refused early.
KBPO_SUBMISSION_MAX_BYTES = env_int("KBPO_SUBMISSION_MAX_BYTES", 100_000_000)
FILE_UPLOAD_HANDLERS = [
    "submissions.uploads.CappedUploadHandler",  # stops an oversized upload mid-stream
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# A single KB line longer than this is reported (LINE_TOO_LONG) instead of parsed.
KBPO_SUBMISSION_MAX_LINE_BYTES = env_int("KBPO_SUBMISSION_MAX_LINE_BYTES", 100_000)
# Lines read at most (blank ones too): checking costs per line, and a small gzip can
# hold tens of millions of them. Line MAX_LINES + 1 refuses the file (TOO_MANY_LINES).
KBPO_SUBMISSION_MAX_LINES = env_int("KBPO_SUBMISSION_MAX_LINES", 3_000_000)
# The same for a DocRED result file: predictions read at most (TOO_MANY_PREDICTIONS);
# each prediction's JSON text is held to MAX_LINE_BYTES characters (PREDICTION_TOO_LONG).
KBPO_SUBMISSION_MAX_PREDICTIONS = env_int("KBPO_SUBMISSION_MAX_PREDICTIONS", 1_000_000)
# Uploads per user and corpus: within any 24 hours, and in total (rejected ones don't count).
KBPO_SUBMISSION_DAILY_LIMIT = env_int("KBPO_SUBMISSION_DAILY_LIMIT", 5)
KBPO_SUBMISSION_TOTAL_LIMIT = env_int("KBPO_SUBMISSION_TOTAL_LIMIT", 100)
# Rejected uploads take no slot but each costs a validation: this many per user in any
# 24 hours (all corpora), then uploads wait.
KBPO_SUBMISSION_REJECTED_DAILY_LIMIT = env_int("KBPO_SUBMISSION_REJECTED_DAILY_LIMIT", 20)
# Problems stored per submission (per-code counts are always complete).
KBPO_SUBMISSION_REPORT_MAX = env_int("KBPO_SUBMISSION_REPORT_MAX", 1000)
# Drop-invalid accepts at most this many invalid lines; more reject the file (and bound
# the memory and the stored list of dropped lines).
KBPO_SUBMISSION_MAX_DROPPED = env_int("KBPO_SUBMISSION_MAX_DROPPED", 100_000)
# An ingestion still running after this many seconds is stopped and the submission marked
# failed (a hostile file must not hold a worker process for long); 60 s later its
# process is killed if it has not stopped.
KBPO_SUBMISSION_TIME_LIMIT = env_int("KBPO_SUBMISSION_TIME_LIMIT", 1200)
# An ingestion whose database connection was lost is retried (delay s, times).
KBPO_SUBMISSION_RETRY_DELAY = env_int("KBPO_SUBMISSION_RETRY_DELAY", 30)
KBPO_SUBMISSION_RETRIES = env_int("KBPO_SUBMISSION_RETRIES", 5)
# Re-drive: submissions left in uploaded/validating longer than this (seconds) are
# re-queued, at most KBPO_SUBMISSION_MAX_ATTEMPTS times before they are marked failed.
KBPO_SUBMISSION_REDRIVE_AFTER = env_int("KBPO_SUBMISSION_REDRIVE_AFTER", 900)
# A submission `validating` whose row no ingestion holds (its worker died: the lock went
# with its database session) is re-queued after this many seconds.
KBPO_SUBMISSION_LOST_AFTER = env_int("KBPO_SUBMISSION_LOST_AFTER", 60)
KBPO_SUBMISSION_MAX_ATTEMPTS = env_int("KBPO_SUBMISSION_MAX_ATTEMPTS", 3)
KBPO_SUBMISSION_REDRIVE_INTERVAL = env_int("KBPO_SUBMISSION_REDRIVE_INTERVAL", 60)
# A starting worker runs the re-drives once (after the lease and the lost-ingestion
# delay), so work a killed worker left is picked up even where no beat runs.
KBPO_REDRIVE_ON_WORKER_START = env_bool("KBPO_REDRIVE_ON_WORKER_START", True)
CELERY_BEAT_SCHEDULE = {
    "submissions-redrive-stuck": {
        "task": "submissions.redrive_stuck",
        "schedule": float(KBPO_SUBMISSION_REDRIVE_INTERVAL),
    },
}

# Crowd work (docs/internals/crowd.md). Money is in US dollars.
KBPO_ANSWERS_PER_QUESTION = env_int("KBPO_ANSWERS_PER_QUESTION", 3)
# Estimate with soft labels (P(right) from the workers' measured rates) where the
# quality pass has stored them (docs/internals/estimation.md, noisy crowds).
KBPO_SOFT_LABELS = env_bool("KBPO_SOFT_LABELS", True)
# With soft labels, bootstrap replicates of the model's parameters (refitted on questions
# drawn with replacement) whose soft labels add the correction's own uncertainty to the
# intervals (0 or 1: none; estimation/correction.py).
KBPO_SOFT_LABEL_BOOTSTRAP = env_int("KBPO_SOFT_LABEL_BOOTSTRAP", 8)
# The replicates' parameters are stored and refitted only when the relation answers grew
# by more than this share since (or changed, or brought a new answer key or pair type);
# between refits each replicate's posteriors of the current answers use the stored
# parameters.
KBPO_SOFT_LABEL_REFIT_GROWTH = env_float("KBPO_SOFT_LABEL_REFIT_GROWTH", 0.1)
# A worker the stored fit has not seen takes a fitted worker's rates (drawn per replicate)
# until they have given more than this many answers; then the replicates are refitted.
KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS = env_int("KBPO_SOFT_LABEL_NEW_WORKER_ANSWERS", 50)
# Extra assignments requested for a question whose answers tie, at most this many.
KBPO_MAX_EXTRA_ANSWERS = env_int("KBPO_MAX_EXTRA_ANSWERS", 2)
# The stored (hard) label after the quality pass: the answer of this aggregator
# (lopsided one-coin, one-coin, or the majority vote; chosen by the accuracy
# bench/bench_aggregation.py measured, docs/internals/noisy-crowds.md). A label moves off its
# current answer only when the model's answer beats it by the switch margin in
# posterior probability, so refits do not make labels flip back and forth.
KBPO_LABEL_AGGREGATION = os.environ.get("KBPO_LABEL_AGGREGATION", "lopsided").strip().lower()
if KBPO_LABEL_AGGREGATION not in ("lopsided", "one_coin", "majority"):
    raise ImproperlyConfigured("KBPO_LABEL_AGGREGATION must be lopsided, one_coin or majority, "
                               f"got {KBPO_LABEL_AGGREGATION!r}")
KBPO_LABEL_SWITCH_MARGIN = env_float("KBPO_LABEL_SWITCH_MARGIN", 0.2)
KBPO_QUESTIONS_PER_HIT = env_int("KBPO_QUESTIONS_PER_HIT", 5)
KBPO_REWARD_PER_QUESTION_USD = env_float("KBPO_REWARD_PER_QUESTION_USD", 0.05)
KBPO_BUDGET_GLOBAL_USD = env_float("KBPO_BUDGET_GLOBAL_USD", 500.0)
KBPO_BUDGET_PER_SUBMISSION_USD = env_float("KBPO_BUDGET_PER_SUBMISSION_USD", 100.0)
# Workers agreeing with the others less often than this (after enough answers) are flagged.
KBPO_WORKER_FLAG_AGREEMENT = env_float("KBPO_WORKER_FLAG_AGREEMENT", 0.5)
KBPO_WORKER_FLAG_MIN_ANSWERS = env_int("KBPO_WORKER_FLAG_MIN_ANSWERS", 20)
# Control questions (known answers from the exhaustive gold): a worker with at least
# this many control answers whose 90% upper bound on control accuracy is more than the
# margin below the rest of the crowd's is blocked by the quality pass. The share is of
# all of a HIT's questions: 0.09 costs 0.09/0.91 = 9.9% extra questions (target ≤ 10%).
KBPO_CONTROL_SHARE = env_float("KBPO_CONTROL_SHARE", 0.09)
KBPO_CONTROL_BLOCK_MIN_ANSWERS = env_int("KBPO_CONTROL_BLOCK_MIN_ANSWERS", 5)
KBPO_CONTROL_BLOCK_MARGIN = env_float("KBPO_CONTROL_BLOCK_MARGIN", 0.2)
# Cheating guards (docs/internals/crowd.md, "Too fast and over the cap"). An MTurk assignment
# submitted sooner after it was accepted (MTurk's own AcceptTime and SubmitTime) than
# this many seconds per question of its HIT (a document task: per sentence of its
# document) is paid and not counted: the preview shows the questions, so an honest
# worker may be quick. The worker is blocked at the KBPO_TOO_FAST_LIMIT-th such
# assignment (0 never blocks). 0 seconds turns the check off.
KBPO_MIN_SECONDS_PER_QUESTION = env_float("KBPO_MIN_SECONDS_PER_QUESTION", 1.0)
KBPO_TOO_FAST_LIMIT = env_int("KBPO_TOO_FAST_LIMIT", 3)
# Relations one answer may mark for one mention pair. Labels are built for a primary
# relation and, where two hold, a second (estimation/data.py, the task page's "usually
# one"); ticking every box must not make an answer "right" on every pair.
KBPO_MAX_RELATIONS_PER_ANSWER = env_int("KBPO_MAX_RELATIONS_PER_ANSWER", 2)
if KBPO_MAX_RELATIONS_PER_ANSWER < 1:
    raise ImproperlyConfigured("KBPO_MAX_RELATIONS_PER_ANSWER must be at least 1, got "
                               f"{KBPO_MAX_RELATIONS_PER_ANSWER}")
# Estimation: the scheme draws come from, and the target 90% half-width for planning.
KBPO_SAMPLING_SCHEME = os.environ.get("KBPO_SAMPLING_SCHEME", "instance")
KBPO_TARGET_HALFWIDTH = env_float("KBPO_TARGET_HALFWIDTH", 0.05)
# The joint estimator behind the headline scores and the planner (docs/researchers/scores.md):
# "distinct" counts each labelled mention pair once (Horvitz–Thompson over the distinct
# drawn pairs), "importance" every draw; distinct needs about 20-30% fewer labels for the
# same intervals (docs/internals/estimation.md §12).
KBPO_JOINT_ESTIMATOR = os.environ.get("KBPO_JOINT_ESTIMATOR", "distinct").strip().lower()
if KBPO_JOINT_ESTIMATOR not in ("distinct", "importance"):
    raise ImproperlyConfigured("KBPO_JOINT_ESTIMATOR must be distinct or importance, "
                               f"got {KBPO_JOINT_ESTIMATOR!r}")
# A system whose joint precision interval (before the crowd correction widens it) comes
# out wider than the target by more than this share gets more draws, at most
# KBPO_TOP_UP_ROUNDS times, before it is scored (estimation/planning.py `top_up`).
KBPO_TOP_UP_SLACK = env_float("KBPO_TOP_UP_SLACK", 0.1)
KBPO_TOP_UP_ROUNDS = env_int("KBPO_TOP_UP_ROUNDS", 2)
KBPO_CONFIDENCE = env_float("KBPO_CONFIDENCE", 0.9)
# Salt of the sample draws' seed (estimation/planning.py): 0 seeds each submission's
# draws by its id alone. Benchmarks salt per world, whose submissions all number 1, 2, ...
KBPO_SAMPLE_SALT = env_int("KBPO_SAMPLE_SALT", 0)
# Exhaustive annotation (docs/operators/exhaustive.md): entity tasks pay per document token,
# exhaustive-relation tasks per candidate pair (per assignment, rounded to cents).
KBPO_EXHAUSTIVE_REWARD_PER_TOKEN_USD = env_float("KBPO_EXHAUSTIVE_REWARD_PER_TOKEN_USD", 0.002)
KBPO_EXHAUSTIVE_REWARD_PER_PAIR_USD = env_float("KBPO_EXHAUSTIVE_REWARD_PER_PAIR_USD", 0.02)
# DocRED corpora (annotations/exhaustive/docred_facts.py): a document's entities are split
# into HITs of at most this many head entities; each HIT pays tokens × the per-token rate
# (reading) + its ordered entity pairs (heads × other entities) × the per-pair rate below.
KBPO_EXHAUSTIVE_DOCRED_HEADS_PER_HIT = env_int("KBPO_EXHAUSTIVE_DOCRED_HEADS_PER_HIT", 5)
KBPO_EXHAUSTIVE_REWARD_PER_ENTITY_PAIR_USD = env_float(
    "KBPO_EXHAUSTIVE_REWARD_PER_ENTITY_PAIR_USD", 0.005)

# Crowd pipeline (docs/internals/crowd.md): MTurk HIT types, qualifications, confirmation
# and rejection (kbpo/settings_mturk.py), then periodic work and payments.
from kbpo.settings_mturk import *  # noqa: E402, F403

# Periodic crowd work (seconds): re-drive stuck planning/posting, MTurk sync, worker quality.
KBPO_CROWD_REDRIVE_AFTER = env_int("KBPO_CROWD_REDRIVE_AFTER", 900)
KBPO_CROWD_REDRIVE_INTERVAL = env_int("KBPO_CROWD_REDRIVE_INTERVAL", 300)
KBPO_CROWD_SYNC_INTERVAL = env_int("KBPO_CROWD_SYNC_INTERVAL", 300)
KBPO_CROWD_QUALITY_INTERVAL = env_int("KBPO_CROWD_QUALITY_INTERVAL", 3600)
# The crowd model of a corpus is refitted this many seconds after its labels change
# (debounced: one refit per burst), so scores do not rest on majority labels until the
# periodic pass; 0 turns it off.
KBPO_CROWD_REFIT_DEBOUNCE = env_int("KBPO_CROWD_REFIT_DEBOUNCE", 10)
CELERY_BEAT_SCHEDULE.update({
    "annotations-redrive": {"task": "annotations.redrive",
                            "schedule": float(KBPO_CROWD_REDRIVE_INTERVAL)},
    "estimation-redrive-planning": {"task": "estimation.redrive_planning",
                                    "schedule": float(KBPO_CROWD_REDRIVE_INTERVAL)},
    "annotations-sync-mturk": {"task": "annotations.sync_mturk",
                               "schedule": float(KBPO_CROWD_SYNC_INTERVAL)},
    "annotations-worker-quality": {"task": "annotations.worker_quality",
                                   "schedule": float(KBPO_CROWD_QUALITY_INTERVAL)},
})
# The bonus the admin's "pay the standard bonus" action grants, in dollars.
KBPO_BONUS_USD = env_float("KBPO_BONUS_USD", 0.10)
# Live scoring: label changes within this many seconds share one recomputation; a run
# holds a lease this long, renewed every third of it while it runs (a killed worker's
# run is retried once it expires); lagging scores are re-driven this often (beat).
KBPO_SCORE_DEBOUNCE_SECONDS = env_float("KBPO_SCORE_DEBOUNCE_SECONDS", 2.0)
KBPO_SCORE_LEASE_SECONDS = env_float("KBPO_SCORE_LEASE_SECONDS", 60.0)
KBPO_SCORE_REDRIVE_INTERVAL = env_float("KBPO_SCORE_REDRIVE_INTERVAL", 60.0)
# The sampling schemes whose scores every recomputation stores (the draw scheme always).
KBPO_SCORE_SCHEMES = env_list("KBPO_SCORE_SCHEMES", "instance,predicate,entity,entity_relation")
# On: each label batch's recomputation estimates the draw scheme and stores it at once;
# the reweighted schemes follow in a queued task, shown as updating until then. Off:
# every scheme in one run (slower per batch, never behind).
KBPO_SCORE_FOLLOW_UP = env_bool("KBPO_SCORE_FOLLOW_UP", True)
# 2: a recompute runs the noise correction's replicates on a thread beside its final
# estimate (the same numbers; ~0.7 s less per batch at 100 systems on 2 cores, ~110 MB
# more at the peak); 1: one after the other. Default 2 when the machine has 2 cores.
KBPO_SCORE_THREADS = env_int("KBPO_SCORE_THREADS", 2 if (os.cpu_count() or 1) >= 2 else 1)
