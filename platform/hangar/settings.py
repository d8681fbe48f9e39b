"""Hangar settings. Every value comes from the environment (see hangar.env); the same settings run
development, tests and production: there is no production-only setting."""

import os
import socket

import dj_database_url

from hangar.env import ROOT, csv, flag, flag_or_csv, load_dotenv, required

load_dotenv()

BASE_DIR = ROOT
SECRET_KEY = required("DJANGO_SECRET_KEY")
DEBUG = flag("DJANGO_DEBUG")
ALLOWED_HOSTS = csv("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = csv("DJANGO_CSRF_TRUSTED_ORIGINS", "http://localhost:8000,http://127.0.0.1:8000")
# How many reverse proxies in front of Daphne append to X-Forwarded-For (0: trust no forwarded header).
HANGAR_TRUSTED_PROXY_HOPS = int(os.environ.get("HANGAR_TRUSTED_PROXY_HOPS", "0"))
# Login attempts (API, admin and SSO starts) allowed per window, per client address and per account named
# from that address (hangar.accounts.login_throttle).
HANGAR_LOGIN_WINDOW_S = int(os.environ.get("HANGAR_LOGIN_WINDOW_S", "60"))
HANGAR_LOGIN_MAX_PER_ADDRESS = int(os.environ.get("HANGAR_LOGIN_MAX_PER_ADDRESS", "20"))
HANGAR_LOGIN_MAX_PER_ACCOUNT = int(os.environ.get("HANGAR_LOGIN_MAX_PER_ACCOUNT", "20"))
# A WebSocket ticket (hangar.accounts.ws_tickets) opens one connection within this many seconds.
HANGAR_WS_TICKET_TTL_S = int(os.environ.get("HANGAR_WS_TICKET_TTL_S", "30"))
# How long a session's share link (OpenCode's /share) opens before it expires (conversations.share_services).
HANGAR_SHARE_TTL_HOURS = int(os.environ.get("HANGAR_SHARE_TTL_HOURS", "168"))
PUBLIC_URL = os.environ.get("HANGAR_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")

# Transport security follows the public URL: a site served over https sends its session and CSRF cookies only
# over TLS and asks browsers for HSTS (a year unless HANGAR_HSTS_SECONDS says otherwise; 0 turns it off).
# A plain-http development URL keeps both off, or the browser would drop the cookies. X-Forwarded-Proto is
# client-controlled: it marks a request secure only behind the proxies the operator declares, as
# X-Forwarded-For does (hangar.accounts.actors.client_ip).
_SERVED_OVER_HTTPS = PUBLIC_URL.startswith("https://")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = flag("HANGAR_SECURE_COOKIES", default=_SERVED_OVER_HTTPS)
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = int(os.environ.get("HANGAR_HSTS_SECONDS", "31536000" if _SERVED_OVER_HTTPS else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = flag("HANGAR_HSTS_INCLUDE_SUBDOMAINS")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HANGAR_TRUSTED_PROXY_HOPS else None
SECURE_SSL_REDIRECT = flag("HANGAR_SSL_REDIRECT")

# API tokens are stored as HMAC digests; the first pepper signs new tokens, the rest still verify old ones.
TOKEN_PEPPERS = csv("HANGAR_TOKEN_PEPPERS") or [required("HANGAR_TOKEN_PEPPERS")]
# Provider keys are encrypted with MultiFernet; the first key encrypts, all decrypt (rotation).
ENCRYPTION_KEYS = csv("HANGAR_ENCRYPTION_KEYS") or [required("HANGAR_ENCRYPTION_KEYS")]

# No "daphne" app: it only makes runserver use Daphne, and loads Twisted into every worker (run-web.sh).
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "hangar.accounts",
    "hangar.projects",
    "hangar.audit",
    "hangar.usage",
    "hangar.sso",
    "hangar.conversations",
    "hangar.repos",
    "hangar.engine",
    "hangar.realtime",
    "hangar.api",
    "hangar.integrations.webhooks",
    "hangar.integrations.slack",
]

MIDDLEWARE = [
    "hangar.logging.RequestIdMiddleware",
    "hangar.csp.ContentSecurityPolicyMiddleware",  # on every response, errors and static files too
    "django.middleware.security.SecurityMiddleware",
    # Serves admin/Swagger/frontend static files from Daphne with DEBUG off (collectstatic output).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "hangar.urls"
ASGI_APPLICATION = "hangar.asgi.application"
WSGI_APPLICATION = None
AUTH_USER_MODEL = "accounts.User"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hangar"), conn_max_age=60
    )
}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Django turns psycopg's prepared statements off (None), which also refuses an explicit prepare=True. Only
# server-side-binding cursors ever prepare: Django's own cursors bind on the client and never do, the
# store's fixed hot statements (hangar.rawsql) ask to. Safe with psycopg's pool; not behind a
# transaction-pooling pgbouncer.
DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
# No JIT compilation on our connections: every statement here reads or writes a handful of rows, and
# LLVM compiling one costs ~10 ms, far more than running it. A planner estimate over jit_above_cost is enough
# to trigger it (a prepared statement's generic plan multiplies per-key averages): the step-state read took
# 8.5 ms with JIT against 0.1 ms without (tests/conversations/test_loop_selectors.py).
_options = DATABASES["default"]["OPTIONS"]
_options["options"] = f"{_options.get('options', '')} -c jit=off".strip()
# HANGAR_DB_POOL_MAX turns on Django's psycopg pool (needs psycopg-pool), one per process, shared by its threads.
# A worker carrying 100 agent sessions in threads must not hold 100 Postgres connections (max_connections
# is 100 here): the engine gives its connection back before every model call and tool run, so a few serve
# every session (deploy/run-worker.sh). The web needs it too (deploy/run-web.sh): under ASGI each request
# runs in a new thread, so a thread's persistent connection (CONN_MAX_AGE) is never reused.
# With the pool, CONN_HEALTH_CHECKS (on above) makes Django give it psycopg_pool's check_connection: each
# connection is checked (one empty round trip) before it is handed out, so after a Postgres restart the
# dead ones are replaced instead of failing the requests they were handed to (tests/test_db_pool_check.py).
if os.environ.get("HANGAR_DB_POOL_MAX"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 2,
        "max_size": int(os.environ["HANGAR_DB_POOL_MAX"]),
        "timeout": 60,
    }

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")

# RedisPubSubChannelLayer: the default RedisChannelLayer drops messages past its capacity (measured:
# 423 of 1,000 burst messages). Postgres stays the durable log; the layer only carries notifications.
HANGAR_CHANNEL_PREFIX = os.environ.get("HANGAR_CHANNEL_PREFIX", "asgi")  # one Redis, several deployments
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": None, "max_connections": 1000}],
            # Redis Pub/Sub channels ignore the database number: deployments (or test processes) sharing
            # one Redis keep their groups apart by prefix.
            "prefix": HANGAR_CHANNEL_PREFIX,
        },
    }
}

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "hangar",
        "OPTIONS": {"pool_class": "hangar.cache_pool.SharedPool"},  # one per process, not per thread
    }
}

STATIC_URL = "/static/"
STATIC_ROOT = ROOT / "staticfiles"
FRONTEND_DIST = ROOT / "frontend" / "dist"
# A model server this machine runs (deploy/up.sh's bundled one): /api/health reports whether it answers.
MODEL_HEALTH_URL = os.environ.get("HANGAR_MODEL_HEALTH_URL", "")
STATICFILES_DIRS = [p for p in [FRONTEND_DIST] if p.exists()]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Before collectstatic too (tests, a fresh checkout); Vite names assets/ by content hash: cached for good.
WHITENOISE_USE_FINDERS, WHITENOISE_IMMUTABLE_FILE_TEST = True, r"^/static/assets/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "hangar.drf_auth.TokenAuthentication",
        "hangar.drf_auth.BasicTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "hangar.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"tokens": "30/min"},
    # DRF's throttles read X-Forwarded-For only behind this many declared proxies (None would trust any).
    "NUM_PROXIES": HANGAR_TRUSTED_PROXY_HOPS,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Hangar API",
    "DESCRIPTION": "Hosted, multi-tenant OpenCode. Authenticate with `Authorization: Bearer <token>`.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {
        "PermissionReplyEnum": ["once", "always", "reject"],  # one name for several serializers' choices
        # Sets sharing a field name ("scope", "state") named each; a network policy and its cap: one set.
        "GrantScopeEnum": ["session", "project"],
        "CredentialScopeEnum": ["org", "user"],
        "HostStateEnum": "hangar.conversations.models.HostState",
        "InvitationStateEnum": ["pending", "accepted", "revoked", "expired"],
        "NetworkPolicyEnum": "hangar.projects.models.NetworkPolicy",
    },
}

# Celery. Long agent runs are owned by a Postgres lease + heartbeat (see hangar.engine.run.leases), not by
# acks_late: with the Redis broker a task outliving visibility_timeout is re-delivered concurrently.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
# Results are ignored but for host tasks an engine worker awaits (engine.workspace.remote): read once, forgotten.
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Tasks are acked when they start, so the prefetch window alone lets a worker whose threads are all busy
# reserve more runs, which then wait behind whole sessions while another worker idles (measured: 3 of
# 100 burst sessions started ~10 s late). A worker takes a task only when it has a free thread.
CELERY_WORKER_DISABLE_PREFETCH = True
CELERY_TASK_ALWAYS_EAGER = flag("CELERY_TASK_ALWAYS_EAGER")
# Not tasks.py modules: autodiscovery would not find them.
CELERY_IMPORTS = ("hangar.engine.workspace_tasks", "hangar.engine.workspace.host_tasks")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# LiteLLM is the gateway to named providers (anthropic/..., gemini/..., openai without a base URL). An explicit
# OpenAI-compatible endpoint (a credential's api_base: vLLM, llama.cpp, OpenRouter, the scripted server) is
# streamed by the direct adapter (hangar.engine.providers.openai_compat): the same request without
# LiteLLM's ~5 ms of per-call work (see hangar.engine.providers.resolve). 0 routes those through LiteLLM too.
HANGAR_DIRECT_OPENAI_COMPAT = flag("HANGAR_DIRECT_OPENAI_COMPAT", default=True)

# Sandbox defaults (a project's limits override them).
# Repository URLs may name private, loopback or link-local hosts (and plain http://): 1 for every address (a
# development machine or tests whose git server runs on 127.0.0.1), or CIDRs (a git server on 10.1.0.0/16).
# Off in production: a URL is a server-side request (rule: sandbox/netguard.py).
HANGAR_REPO_ALLOW_PRIVATE_HOSTS = flag_or_csv("HANGAR_REPO_ALLOW_PRIVATE_HOSTS")
SANDBOX_POOL_SIZE = int(os.environ.get("HANGAR_SANDBOX_POOL_SIZE", "2"))
# The Docker images a project's `sandbox_image` may name besides the platform's own (comma-separated, exact
# names): a project admin chooses among what the operator built and trusts, never any image at all.
HANGAR_SANDBOX_IMAGES = csv("HANGAR_SANDBOX_IMAGES")
# At most this many bytes of files per workspace upload (hangar.engine.repo_ops); the body is cut off as it
# streams at this plus 1 MB of multipart framing (hangar.body_limit).
HANGAR_WORKSPACE_UPLOAD_MAX_BYTES = int(os.environ.get("HANGAR_WORKSPACE_UPLOAD_MAX_BYTES", str(25 * 2**20)))
# Per-org fair shares (hangar.engine.run.fairness) where the org sets none (Org.max_concurrent_runs, ...):
# a share of a worker's threads (HANGAR_WORKER_CONCURRENCY, default 100) and of a host's sandboxes.
HANGAR_ORG_MAX_RUNS = int(os.environ.get("HANGAR_ORG_MAX_RUNS", "32"))
HANGAR_ORG_MAX_SANDBOXES = int(os.environ.get("HANGAR_ORG_MAX_SANDBOXES", "64"))
# How many orgs one account may own: anyone can sign up and create orgs, and the caps above are per org
# (hangar.accounts.ownership_services). The operator's own tools (bootstrap) are not held to it.
HANGAR_USER_MAX_OWNED_ORGS = int(os.environ.get("HANGAR_USER_MAX_OWNED_ORGS", "5"))
# And the caps per person across the orgs they own: an org on the default caps counts against each of its
# owners, whose orgs together hold at most this many runs and live sandboxes (hangar.engine.run.fairness,
# hangar.engine.workspace.sandbox_share; sandbox disk: HANGAR_SANDBOX_USER_DISK_BUDGET_MB, sandbox/budget.py). By
# default one org's share: five orgs of one account do not get five shares. 0 turns a cap off.
HANGAR_USER_MAX_RUNS = int(os.environ.get("HANGAR_USER_MAX_RUNS", str(HANGAR_ORG_MAX_RUNS)))
HANGAR_USER_MAX_SANDBOXES = int(os.environ.get("HANGAR_USER_MAX_SANDBOXES", str(HANGAR_ORG_MAX_SANDBOXES)))
# Private ranges an egress allowlist may reach (comma-separated CIDRs, e.g. a package mirror on 10.0.0.0/8).
# Loopback, link-local and metadata addresses stay unreachable whatever this says (sandbox/agent/netpolicy.py).
HANGAR_EGRESS_ALLOW_PRIVATE = os.environ.get("HANGAR_EGRESS_ALLOW_PRIVATE", "")
# The reaper (hangar.engine.workspace.reaping): a deleted session's workspace is destroyed once idle this long; an
# archived session's sandbox is hibernated (never destroyed) once idle this long.
HANGAR_SANDBOX_DELETE_GRACE_S = float(os.environ.get("HANGAR_SANDBOX_DELETE_GRACE_S", "600"))
HANGAR_SANDBOX_ARCHIVED_IDLE_S = float(os.environ.get("HANGAR_SANDBOX_ARCHIVED_IDLE_S", "60"))
# The least number of days an org may keep its audit log (an org admin sets its own retention above it).
HANGAR_AUDIT_RETENTION_MIN_DAYS = int(os.environ.get("HANGAR_AUDIT_RETENTION_MIN_DAYS", "30"))
# Events of finished sessions older than this many days are purged hourly (0 keeps them forever). Messages
# and parts stay; a client resuming from a purged seq is told to reload (hangar.conversations.retention_services).
HANGAR_EVENT_RETENTION_DAYS = float(os.environ.get("HANGAR_EVENT_RETENTION_DAYS", "30"))

# Engine: per-model price overrides ({"provider/model": {"input": $/tok, "output": $/tok}}), else LiteLLM's
# local price map, else zero; and the offline local model used when a provider has no credential.
HANGAR_MODEL_PRICES = __import__("json").loads(os.environ.get("HANGAR_MODEL_PRICES", "{}"))
HANGAR_LOCAL_MODEL_URL = os.environ.get("HANGAR_LOCAL_MODEL_URL", "")
# The bundled model's start-up report (deploy/local-model.sh writes it; hangar.local_model reads it).
HANGAR_LOCAL_MODEL_STATUS = os.environ.get("HANGAR_LOCAL_MODEL_STATUS", "")
# Model endpoints (a credential's api_base) may resolve only to globally routable addresses, plus these
# networks (CIDRs): e.g. "10.20.0.0/16" for a self-hosted model. Tests and the dev scripts allow loopback
# (127.0.0.0/8, ::1/128) for the scripted server and the bundled local model; production should not.
HANGAR_MODEL_ALLOWED_NETWORKS = csv("HANGAR_MODEL_ALLOWED_NETWORKS")
# Where a remote MCP server may be besides public addresses (CIDRs; hangar.engine.mcp.guard): a team's own
# server on a private network. Loopback, metadata and private addresses are refused unless listed here.
HANGAR_MCP_ALLOWED_NETWORKS = csv("HANGAR_MCP_ALLOWED_NETWORKS")
# What a model may send: the whole response and one SSE event (bytes), one tool call's arguments and one
# text or reasoning part (characters). Crossing one ends the step with "response too large" (hangar.engine.providers.limits).
HANGAR_MODEL_MAX_RESPONSE_BYTES = int(os.environ.get("HANGAR_MODEL_MAX_RESPONSE_BYTES", str(32 << 20)))
HANGAR_MODEL_MAX_EVENT_BYTES = int(os.environ.get("HANGAR_MODEL_MAX_EVENT_BYTES", str(8 << 20)))
HANGAR_MODEL_MAX_TOOL_ARGS_CHARS = int(os.environ.get("HANGAR_MODEL_MAX_TOOL_ARGS_CHARS", str(8 << 20)))
HANGAR_MODEL_MAX_PART_CHARS = int(os.environ.get("HANGAR_MODEL_MAX_PART_CHARS", str(4 << 20)))

# Outbound webhooks. Destinations must resolve to public addresses unless the operator allows private ones
# (an on-premises receiver: 1 for every address, or CIDRs; rule: sandbox/netguard.py); retries back off
# exponentially from the base (with jitter) up to the cap, and an endpoint whose deliveries exhaust their
# attempts DISABLE_AFTER times in a row is disabled.
HANGAR_WEBHOOKS_ALLOW_PRIVATE = flag_or_csv("HANGAR_WEBHOOKS_ALLOW_PRIVATE")
HANGAR_WEBHOOK_RETRY_BASE_S = float(os.environ.get("HANGAR_WEBHOOK_RETRY_BASE_S", "10"))
HANGAR_WEBHOOK_RETRY_CAP_S = float(os.environ.get("HANGAR_WEBHOOK_RETRY_CAP_S", "1800"))
HANGAR_WEBHOOK_MAX_ATTEMPTS = int(os.environ.get("HANGAR_WEBHOOK_MAX_ATTEMPTS", "8"))
HANGAR_WEBHOOK_DISABLE_AFTER = int(os.environ.get("HANGAR_WEBHOOK_DISABLE_AFTER", "5"))
# One attempt's total time (connect, send, the answer's headers and its first bytes), the attempts of one
# org in flight at once, and how many endpoints an org may have (hangar.integrations.webhooks.outbound).
HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S = float(os.environ.get("HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S", "15"))
HANGAR_WEBHOOK_ORG_IN_FLIGHT = int(os.environ.get("HANGAR_WEBHOOK_ORG_IN_FLIGHT", "4"))
# A trigger's refused calls (forged, stale, replayed) are audited once per window, the next row counting the rest.
HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S = float(os.environ.get("HANGAR_WEBHOOK_REFUSED_AUDIT_WINDOW_S", "60"))
HANGAR_WEBHOOK_MAX_ENDPOINTS_PER_ORG = int(os.environ.get("HANGAR_WEBHOOK_MAX_ENDPOINTS_PER_ORG", "20"))

# The engine's runs (hangar.engine): a run's lease lives this long without its keeper's renewal; a
# provider's retryable error is tried again this many times; a session whose runs took their worker down
# this many times in a row is ended (crash_budget).
HANGAR_LEASE_TTL_S = int(os.environ.get("HANGAR_LEASE_TTL_S", "15"))
HANGAR_MAX_RETRIES = int(os.environ.get("HANGAR_MAX_RETRIES", "5"))
HANGAR_RUN_CRASH_BUDGET = int(os.environ.get("HANGAR_RUN_CRASH_BUDGET", "3"))
# The sandbox host registry (hangar.engine.workspace.hosts, docs/scale-out.md): this host's name and labels,
# its heartbeat's period, and how long a silent host lives before beat marks it lost and ends its busy turns.
HANGAR_SANDBOX_HOST = (os.environ.get("HANGAR_SANDBOX_HOST", "") or socket.gethostname())[:100]
HANGAR_SANDBOX_HOST_LABELS = csv("HANGAR_SANDBOX_HOST_LABELS")
HANGAR_HOST_HEARTBEAT_S = float(os.environ.get("HANGAR_HOST_HEARTBEAT_S", "10"))
HANGAR_HOST_LOST_AFTER_S = float(os.environ.get("HANGAR_HOST_LOST_AFTER_S", "30"))
# An engine worker that holds no Docker socket (hangar.engine.workspace.remote, docs/scale-out.md): its
# sandboxes are made, claimed, resumed and prepared by the host services (Celery queue host.<name>) and
# reached over the agent channel; how long it waits on a host's answer before the turn fails; how often at
# most a live workspace that changed is checkpointed to HANGAR_WORKSPACE_ARCHIVE (0: never).
HANGAR_SANDBOX_REMOTE = flag("HANGAR_SANDBOX_REMOTE")
HANGAR_HOST_TASK_TIMEOUT_S = float(os.environ.get("HANGAR_HOST_TASK_TIMEOUT_S", "900"))
HANGAR_WORKSPACE_CHECKPOINT_S = float(os.environ.get("HANGAR_WORKSPACE_CHECKPOINT_S", "300"))
# Workspace downloads and diffs (hangar.engine.repo_ops): an archive's (512 MiB) and a diff's cap, archives at once.
HANGAR_WORKSPACE_ARCHIVE_MAX_BYTES = int(os.environ.get("HANGAR_WORKSPACE_ARCHIVE_MAX_BYTES", str(2**29)))
HANGAR_WORKSPACE_DIFF_MAX_BYTES = int(os.environ.get("HANGAR_WORKSPACE_DIFF_MAX_BYTES", str(2**20)))
HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY = int(os.environ.get("HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY", "2"))
HANGAR_WORKSPACE_ARCHIVE_DEADLINE_S = float(os.environ.get("HANGAR_WORKSPACE_ARCHIVE_DEADLINE_S", "600"))
# A web request's own sandbox reads (hangar.engine.workspace.web_sandbox): at once per process, at once per
# org across the web processes, and one request's total deadline.
HANGAR_WEB_SANDBOX_CONCURRENCY = int(os.environ.get("HANGAR_WEB_SANDBOX_CONCURRENCY", "8"))
HANGAR_WEB_SANDBOX_PER_ORG = int(os.environ.get("HANGAR_WEB_SANDBOX_PER_ORG", "4"))
HANGAR_WEB_SANDBOX_DEADLINE_S = float(os.environ.get("HANGAR_WEB_SANDBOX_DEADLINE_S", "30"))
# Language servers (hangar.engine.tools.diagnostics, tools.lsp): which workspaces get them ("auto" follows
# the workspace's opencode.json `lsp` key, as OpenCode; "on"; "off"), how long write/edit/apply_patch wait
# for a changed file's findings, and whether the `lsp` tool is offered (OpenCode's experimental flag).
HANGAR_LSP = os.environ.get("HANGAR_LSP", "auto").strip().lower()
HANGAR_LSP_WAIT_MS = max(0, min(int(os.environ.get("HANGAR_LSP_WAIT_MS", "3000") or 0), 30_000))
HANGAR_LSP_TOOL = os.environ.get("HANGAR_LSP_TOOL", "") in ("1", "true", "on")
# Formatters after a file tool's change (hangar.engine.tools.formatting): how long one may run on one file.
HANGAR_FORMAT_TIMEOUT_S = max(1.0, min(float(os.environ.get("HANGAR_FORMAT_TIMEOUT_S", "10") or 10), 120.0))
# Streams (hangar.realtime): how often a live stream re-checks its token and membership; how many
# notifications a process keeps queued for Redis before it drops the oldest.
HANGAR_STREAM_RECHECK_S = float(os.environ.get("HANGAR_STREAM_RECHECK_S", "15"))
HANGAR_BROADCAST_MAX_QUEUED = int(os.environ.get("HANGAR_BROADCAST_MAX_QUEUED", "20000"))

# Slack app credentials (api.slack.com: Basic Information) and where its Web API is (tests point it at a
# local server speaking the same wire API). Without a signing secret the Slack endpoints answer 503.
SLACK_SIGNING_SECRET = os.environ.get("SLACK_SIGNING_SECRET", "")
SLACK_CLIENT_ID = os.environ.get("SLACK_CLIENT_ID", "")
SLACK_CLIENT_SECRET = os.environ.get("SLACK_CLIENT_SECRET", "")
SLACK_API_URL = os.environ.get("SLACK_API_URL", "https://slack.com/api/")
SLACK_AUTHORIZE_URL = os.environ.get("SLACK_AUTHORIZE_URL", "https://slack.com/oauth/v2/authorize")


from hangar.logging import LOGGING  # noqa: E402,F401  (Django reads settings.LOGGING; it lives next to its middleware)

# Mail (invitation links). Development prints mail on the console (or writes files: the file backend with
# HANGAR_EMAIL_FILE_PATH); production sets an SMTP backend with Django's EMAIL_HOST... variables. The tests
# use Django's in-memory outbox (pytest-django sets it).
EMAIL_BACKEND = os.environ.get("HANGAR_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_FILE_PATH = os.environ.get("HANGAR_EMAIL_FILE_PATH", str(ROOT / "var" / "mail"))
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = flag("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = os.environ.get("HANGAR_FROM_EMAIL", "Hangar <hangar@localhost>")
# An invitation link works once, for this many hours.
HANGAR_INVITATION_HOURS = int(os.environ.get("HANGAR_INVITATION_HOURS", "168"))

# Single sign-on (hangar.sso). An org's identity provider must resolve to public addresses unless the operator
# opens networks for it (CIDRs; an identity provider on the company network, or the tests' on 127.0.0.1).
# Setting it also permits plain http:// issuers (a private provider).
HANGAR_SSO_ALLOWED_NETWORKS = csv("HANGAR_SSO_ALLOWED_NETWORKS")
# A request to an identity provider has this many seconds in all (connect, headers, body); at most this many
# are in flight per provider host and web process (hangar.sso.outbound). Its discovery document and keys are
# kept this many seconds; a failed fetch is remembered (and answered at once) for the shorter time.
HANGAR_SSO_TIMEOUT_S = float(os.environ.get("HANGAR_SSO_TIMEOUT_S", "10"))
HANGAR_SSO_MAX_IN_FLIGHT = int(os.environ.get("HANGAR_SSO_MAX_IN_FLIGHT", "4"))
HANGAR_SSO_METADATA_CACHE_S = int(os.environ.get("HANGAR_SSO_METADATA_CACHE_S", "300"))
HANGAR_SSO_FAILURE_CACHE_S = int(os.environ.get("HANGAR_SSO_FAILURE_CACHE_S", "15"))
# Where an email domain's proof (a DNS TXT record) is looked up: host:port nameservers; unset, the system's.
HANGAR_SSO_DNS_NAMESERVERS = csv("HANGAR_SSO_DNS_NAMESERVERS")
