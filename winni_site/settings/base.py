"""Settings shared by every environment. Every value a user may change is an environment
variable read here (documented in README.md, "Settings"), or a line of the settings file
(`winni.env`, winni_site.envfile) for the variables the environment does not set."""
import os
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_float, env_globs, env_int, env_list, env_str
from winni_site import embedded, envfile
from winni_site.toolsets import parse_toolsets

WINNI_SETTINGS_FILE = envfile.load()  # first: it may set any variable below
BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = Path(env_str("WINNI_DATA_DIR", str(BASE_DIR / "var"))).expanduser().resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """WINNI_SECRET_KEY, or one generated once and kept in the data dir."""
    if env_str("WINNI_SECRET_KEY"):
        return env_str("WINNI_SECRET_KEY")
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


def database_from_url(url: str) -> dict:
    """postgresql://user:password@host:port/name?host=/socket/dir&port=5432"""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql", "postgresql+psycopg"):
        raise ImproperlyConfigured(f"DATABASE_URL must start with postgresql://, got {parsed.scheme!r}")
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL must name a database (postgresql://…/NAME)")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or query.get("user", "")),
        "PASSWORD": unquote(parsed.password or query.get("password", "")),
        "HOST": query.get("host") or parsed.hostname or "",
        "PORT": str(query.get("port") or parsed.port or ""),
    }


SECRET_KEY = _secret_key()
DEBUG = env_bool("WINNI_DEBUG", False)
WINNI_HOST = env_str("WINNI_HOST", "127.0.0.1")
WINNI_PORT = env_int("WINNI_PORT", 9020, minimum=1, maximum=65535)
ALLOWED_HOSTS = env_list("WINNI_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
# Origins a browser-based MCP client may call /mcp from; empty Origin (CLI clients) always passes.
WINNI_ALLOWED_ORIGINS = env_list(
    "WINNI_ALLOWED_ORIGINS", [f"http://{host}:{WINNI_PORT}" for host in ("127.0.0.1", "localhost")]
)
CSRF_TRUSTED_ORIGINS = [origin for origin in WINNI_ALLOWED_ORIGINS if origin.startswith("http")]
# The MCP tool sets /mcp serves (winni_site/toolsets.py): the default set is what an agent uses in
# a session; an unknown name stops start-up with a message listing the sets.
WINNI_MCP_TOOLSETS = parse_toolsets(env_list("WINNI_MCP_TOOLSETS", ["default"]))

# Winni's own apps: each may have `mcp.py` (its MCP registry) and `urls.py` (REST under /api/v1/).
# memory.librarian is the answer cache, an app nested in memory/ (label "librarian").
WINNI_APPS = ["conversations", "contexts", "memory", "memory.librarian", "medallions"]

INSTALLED_APPS = [
    # Django's admin with Winni's site (dashboard index, search, estimated-count lists).
    "winni_site.admin_site.WinniAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # The kernel's tables (projects); not one of WINNI_APPS: it has no MCP tools or URLs of its own.
    "core",
    "winni_site",
    *WINNI_APPS,
    # The coding agents' side (capture, hooks, automatic recall): calls the apps, served by winni_site.
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Before CommonMiddleware: /api/ paths answer with or without their slash, never a redirect.
    "winni_site.middleware.ApiPathsMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "core.redaction.RedactionCountMiddleware",
    "winni_site.auth.AccessMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "winni_site.urls"
ASGI_APPLICATION = "winni_site.asgi.application"

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
            ],
        },
    },
]

# --- Database: DATABASE_URL, or the embedded PostgreSQL 18 + pgvector in WINNI_DATA_DIR ------
DATABASE_URL = env_str("DATABASE_URL")
WINNI_EMBEDDED_POSTGRES = not DATABASE_URL
# The embedded server's buffer cache; it should hold the vector indexes (1M messages: ≈ 1.1 GB of
# HNSW). `auto`: a quarter of the machine's memory, PostgreSQL's usual starting point; memory is
# only taken as pages are used. A change restarts the embedded server once, at the next start.
WINNI_PG_SHARED_BUFFERS = env_str("WINNI_PG_SHARED_BUFFERS", "auto").replace(" ", "")
if WINNI_PG_SHARED_BUFFERS == "auto":
    WINNI_PG_SHARED_BUFFERS = f"{max(128, os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 4 // 2**20)}MB"
if not re.fullmatch(r"[1-9][0-9]*(kB|MB|GB|TB)", WINNI_PG_SHARED_BUFFERS):
    raise ImproperlyConfigured(
        f"WINNI_PG_SHARED_BUFFERS must be auto or a size like 512MB or 2GB, got {WINNI_PG_SHARED_BUFFERS!r}")
_database = (database_from_url(DATABASE_URL) if DATABASE_URL
             else embedded.postgres_settings(DATA_DIR, shared_buffers=WINNI_PG_SHARED_BUFFERS))
# Tools run in worker threads that Django's request cycle never cleans up; keep connections for a
# while (persistent per thread) and check them before reuse.
_database["CONN_MAX_AGE"] = env_int("WINNI_DB_CONN_MAX_AGE", 300, minimum=0)
_database["CONN_HEALTH_CHECKS"] = True
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis / Celery ------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
WINNI_EMBEDDED_REDIS = not REDIS_URL
if WINNI_EMBEDDED_REDIS:
    REDIS_URL = embedded.redis_url(DATA_DIR)
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# The worker logs through LOGGING below (JSON, file + console) instead of Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A task running when the broker connection drops (Redis restarted) is cancelled and redelivered
# instead of finishing unacknowledgeable (Celery 6's default; silences its warning).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
WINNI_WORKER_CONCURRENCY = env_int("WINNI_WORKER_CONCURRENCY", 1, minimum=1)
# The worker's CPU priority (nice, 0-19): embedding is background work, and on a busy host the web
# processes answering searches should get the CPU first (winni_site.celery).
WINNI_WORKER_NICE = env_int("WINNI_WORKER_NICE", 10, minimum=0, maximum=19)
WINNI_WEB_WORKERS = env_int("WINNI_WEB_WORKERS", 1, minimum=1)
WINNI_HEARTBEAT_SECONDS = env_int("WINNI_HEARTBEAT_SECONDS", 30, minimum=1)

# --- Limits ----------------------------------------------------------------------------------
# One message, memory, context or answer: 1 MiB of UTF-8 (SPEC "Defaults that matter").
WINNI_MAX_CONTENT_BYTES = env_int("WINNI_MAX_CONTENT_BYTES", 1024 * 1024, minimum=1)
# A whole HTTP request body (bulk stores carry many messages); beyond it: 413.
WINNI_MAX_REQUEST_BYTES = env_int("WINNI_MAX_REQUEST_BYTES", 8 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = WINNI_MAX_REQUEST_BYTES

# --- Auth ------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/admin/login/"

# --- REST ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["winni_site.auth.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated",
                                   "winni_site.auth.TokenScopePermission"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.errors.rest_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["core.redaction.RedactionCountRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Winni API",
    "DESCRIPTION": "Memory server for LLM agents: conversations, startup contexts, orchestration results, "
    "semantic memories, an answer cache and medallions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SECURITY": [{"bearerAuth": []}],
    "APPEND_COMPONENTS": {
        "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
    },
    # One tag per store, in the order a reader meets them (docs/api.md).
    "TAGS": [
        {"name": "conversations", "description": "Conversations and their messages (\"Dewey\"): store, list, search."},
        {"name": "contexts", "description": "Startup contexts: named text a new session loads; one active per "
                                            "project plus one global; audited."},
        {"name": "memories", "description": "Semantic memories: facts, preferences and decisions, found by meaning."},
        {"name": "recall", "description": "One ranked search over every store at once (`winni_recall`)."},
        {"name": "cache", "description": "The adaptive answer cache (\"Librarian\"): ask, remember, feedback, "
                                         "forget, statistics."},
        {"name": "medallions", "description": "Medallions: structured checkpoints of what is understood, decided "
                                              "and open about a scope."},
        {"name": "fiedler-results", "description": "Orchestration results (\"Fiedler\"): each model's answer in "
                                                   "a fan-out, by correlation id."},
        {"name": "projects", "description": "Projects: one per repository; every store carries one."},
        {"name": "capture", "description": "What the coding agents' hook program calls (docs/capture.md)."},
        {"name": "tokens", "description": "API tokens (admin tokens only): list, create, revoke."},
        {"name": "operations", "description": "Export and import of the stores on the server (admin tokens only)."},
    ],
}

# --- Static files (found by WhiteNoise, sent by the ASGI app before Django: winni_site/static.py)
STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- Logging: one JSON line per event, the request id on every line -------------------------
# Every line at WINNI_LOG_LEVEL goes to the log file, which all processes share and which rotates
# by size (winni_site.logfile); the console (stderr) shows WINNI_LOG_CONSOLE_LEVEL and above.
WINNI_LOG_LEVEL = env_str("WINNI_LOG_LEVEL", "INFO").upper()
if WINNI_LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR"):
    raise ImproperlyConfigured(f"WINNI_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {WINNI_LOG_LEVEL!r}")
WINNI_LOG_CONSOLE_LEVEL = env_str("WINNI_LOG_CONSOLE_LEVEL", "WARNING").upper()
if WINNI_LOG_CONSOLE_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR"):
    raise ImproperlyConfigured(
        f"WINNI_LOG_CONSOLE_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {WINNI_LOG_CONSOLE_LEVEL!r}")
WINNI_LOG_FILE = env_str("WINNI_LOG_FILE") or str(DATA_DIR / "logs" / "winni.log")  # "off": no file
if WINNI_LOG_FILE != "off":
    WINNI_LOG_FILE = str(Path(WINNI_LOG_FILE).expanduser().resolve())
WINNI_LOG_MAX_BYTES = env_int("WINNI_LOG_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
WINNI_LOG_BACKUPS = env_int("WINNI_LOG_BACKUPS", 5, minimum=0, maximum=1000)
_log_file_handlers = ["null"] if WINNI_LOG_FILE == "off" else ["file"]
_log_handlers = ["console", *_log_file_handlers]
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logs.RequestIdFilter"}},
    "formatters": {"json": {"()": "winni_site.logfile.ProcessJsonFormatter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_id"],
                    "level": WINNI_LOG_CONSOLE_LEVEL},
        "null": {"class": "logging.NullHandler"},
        **({} if WINNI_LOG_FILE == "off" else {"file": {
            "()": "winni_site.logfile.SharedRotatingFileHandler", "filename": WINNI_LOG_FILE,
            "max_bytes": WINNI_LOG_MAX_BYTES, "backups": WINNI_LOG_BACKUPS,
            "formatter": "json", "filters": ["request_id"]}}),
    },
    "root": {"handlers": _log_handlers, "level": "WARNING"},
    "loggers": {
        "winni": {"handlers": _log_handlers, "level": WINNI_LOG_LEVEL, "propagate": False},
        # `./winni run`'s own records: the file only (it writes its console lines itself).
        "winni.run": {"handlers": _log_file_handlers, "level": "INFO", "propagate": False},
        "django.request": {"handlers": _log_handlers, "level": "ERROR", "propagate": False},
        # uvicorn's own lines (start-up, errors in the ASGI app) in the same JSON.
        "uvicorn": {"handlers": _log_handlers, "level": "WARNING", "propagate": False},
    },
}

# --- Admin dashboard -------------------------------------------------------------------------
# Admin lists and store counts use PostgreSQL's row estimate (pg_class.reltuples) for tables at
# least this big instead of COUNT(*) on every page view; smaller tables are counted exactly.
WINNI_ADMIN_EXACT_COUNT_BELOW = env_int("WINNI_ADMIN_EXACT_COUNT_BELOW", 20_000, minimum=0)

# --- Privacy (docs/privacy.md) ---------------------------------------------------------------
# Secrets in free text become [REDACTED:<type>] before anything is stored (core.redaction);
# `<private>` spans become [private] whatever this says.
WINNI_SCRUB = env_bool("WINNI_SCRUB", True)

# --- Capture (Claude Code hooks, transcript import, MCP logging proxy) ----------------------
# Characters the SessionStart hook may print (startup context, then medallions).
WINNI_CAPTURE_SESSION_START_CHARS = env_int("WINNI_CAPTURE_SESSION_START_CHARS", 20000, minimum=200, maximum=500000)
# A stored tool call + result (PostToolUse, transcript tool blocks, proxied tools/call) is cut here.
WINNI_CAPTURE_TOOL_MAX_CHARS = env_int("WINNI_CAPTURE_TOOL_MAX_CHARS", 20000, minimum=200, maximum=1000000)
# Projects whose sessions are not captured: comma-separated globs over the project's name or slug
# and the session's working directory ("client-*,/home/me/private/*"). Their hook events are
# acknowledged and dropped, and SessionStart injects nothing.
WINNI_CAPTURE_EXCLUDE = env_globs("WINNI_CAPTURE_EXCLUDE")
# Latest medallions of the project printed at SessionStart (0: none).
WINNI_CAPTURE_SESSION_START_MEDALLIONS = env_int("WINNI_CAPTURE_SESSION_START_MEDALLIONS", 3, minimum=0, maximum=20)
# PreCompact and SessionEnd hook events checkpoint the session into the project's medallion.
WINNI_CAPTURE_CHECKPOINT = env_bool("WINNI_CAPTURE_CHECKPOINT", True)

# --- Embeddings, semantic memories, hybrid recall (memory app) -------------------------------
WINNI_EMBEDDING_PROVIDER = env_str("WINNI_EMBEDDING_PROVIDER", "local")
if WINNI_EMBEDDING_PROVIDER not in ("local", "ollama", "openai", "hash"):
    raise ImproperlyConfigured(
        f"WINNI_EMBEDDING_PROVIDER must be local, ollama, openai or hash, got {WINNI_EMBEDDING_PROVIDER!r}"
    )
WINNI_EMBEDDING_MODEL = env_str("WINNI_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
if not WINNI_EMBEDDING_MODEL.strip() or len(WINNI_EMBEDDING_MODEL) > 200:
    raise ImproperlyConfigured("WINNI_EMBEDDING_MODEL must be a name of 1 to 200 characters")
WINNI_EMBEDDING_DIMENSIONS = env_int("WINNI_EMBEDDING_DIMENSIONS", 384, minimum=2, maximum=2000)
WINNI_EMBEDDING_URL = env_str("WINNI_EMBEDDING_URL", "http://127.0.0.1:11434")
WINNI_EMBEDDING_API_KEY = env_str("WINNI_EMBEDDING_API_KEY", "")
WINNI_EMBEDDING_TIMEOUT = env_float("WINNI_EMBEDDING_TIMEOUT", 60.0, minimum=0.1)
# Rows per worker task (and texts per provider call). The local model sorts a task's texts by
# length into passes of 16, so a larger task pads less: LoCoMo messages, two threads, 174 rows/s
# in tasks of 64, 233 in tasks of 256.
WINNI_EMBEDDING_BATCH_SIZE = env_int("WINNI_EMBEDDING_BATCH_SIZE", 256, minimum=1, maximum=2048)
# torch intra-op threads per process for the local model (0 = torch's default: one per core).
WINNI_EMBEDDING_THREADS = env_int("WINNI_EMBEDDING_THREADS", 1, minimum=0, maximum=64)
# bfloat16 inference for the local model: `auto` uses it where the CPU computes bf16 natively
# (AVX512-BF16 or AMX): about twice the throughput, vectors within 1e-4 cosine of float32. On CPUs
# without it, bf16 is emulated and slower than float32, so `auto` keeps float32 there.
WINNI_EMBEDDING_BF16 = env_str("WINNI_EMBEDDING_BF16", "auto").lower()
if WINNI_EMBEDDING_BF16 not in ("auto", "on", "off"):
    raise ImproperlyConfigured(f"WINNI_EMBEDDING_BF16 must be auto, on or off, got {WINNI_EMBEDDING_BF16!r}")
# Small batches (a query, a few fresh rows) of the local model through ONNX Runtime: ≈ 4.5 ms a
# short query instead of ≈ 10 ms through torch, same vectors; and no torch in web processes.
WINNI_EMBEDDING_ONNX = env_bool("WINNI_EMBEDDING_ONNX", True)
# int8 (dynamically quantised) ONNX graph of the local model: `batches` = the worker's batches
# (import, re-embed, live rows; queries stay float32), `all` = queries too, `off`. Judged by
# retrieval recall, not cosine to float32 (docs/embeddings.md).
WINNI_EMBEDDING_INT8 = env_str("WINNI_EMBEDDING_INT8", "off").lower()
if WINNI_EMBEDDING_INT8 not in ("off", "batches", "all"):
    raise ImproperlyConfigured(f"WINNI_EMBEDDING_INT8 must be off, batches or all, got {WINNI_EMBEDDING_INT8!r}")
# Longer texts are cut before embedding (MiniLM reads at most 256 tokens anyway).
WINNI_EMBEDDING_MAX_CHARS = env_int("WINNI_EMBEDDING_MAX_CHARS", 4000, minimum=100)
# A message's vector is its own text's vector plus this share of the previous turn's (each turn
# is embedded once; see memory.embeddings.embed_parts). 0 embeds a message alone.
# A long chat turn's passages embedded beside its own vector, at most (conversations.services.passages;
# 0: none, one vector per message as before passages existed).
WINNI_EMBEDDING_PASSAGES_MAX = env_int("WINNI_EMBEDDING_PASSAGES_MAX", 8, minimum=0, maximum=16)
WINNI_EMBEDDING_CONTEXT_WEIGHT = env_float("WINNI_EMBEDDING_CONTEXT_WEIGHT", 0.4, minimum=0.0, maximum=1.0)
# The beat task that finds rows without a vector (a lost task, a provider outage) and embeds them.
WINNI_EMBEDDING_SWEEP_SECONDS = env_int("WINNI_EMBEDDING_SWEEP_SECONDS", 60, minimum=5)
# Hybrid recall: how the full-text and vector rankings are fused, and the weight of each side.
WINNI_RECALL_FUSION = env_str("WINNI_RECALL_FUSION", "score")
if WINNI_RECALL_FUSION not in ("score", "rrf"):
    raise ImproperlyConfigured(f"WINNI_RECALL_FUSION must be score or rrf, got {WINNI_RECALL_FUSION!r}")
WINNI_RECALL_RRF_K = env_int("WINNI_RECALL_RRF_K", 60, minimum=1)
WINNI_RECALL_FTS_WEIGHT = env_float("WINNI_RECALL_FTS_WEIGHT", 0.65, minimum=0.0, maximum=100.0)
WINNI_RECALL_VECTOR_WEIGHT = env_float("WINNI_RECALL_VECTOR_WEIGHT", 0.35, minimum=0.0, maximum=100.0)
# Share of a message's score passed to the turns before and after it (0 = off).
WINNI_RECALL_CONTEXT_WEIGHT = env_float("WINNI_RECALL_CONTEXT_WEIGHT", 0.3, minimum=0.0, maximum=10.0)
# Automatic recall (agents.autorecall): the hooks add what Winni knows about each prompt.
WINNI_RECALL_INJECT = env_bool("WINNI_RECALL_INJECT", True)
# Automatic recall's order learns from use: items the agent ignored for similar prompts rank a little
# lower, used ones higher, within what the gate admits (agents.use.prior_for, docs/autorecall.md).
WINNI_RECALL_USE_PRIOR = env_bool("WINNI_RECALL_USE_PRIOR", True)
# Characters of the block added to one prompt at most (≈ 1,000 tokens at the default).
WINNI_RECALL_INJECT_MAX_CHARS = env_int("WINNI_RECALL_INJECT_MAX_CHARS", 4000, minimum=200, maximum=50000)
WINNI_RECALL_HNSW_EF_SEARCH = env_int("WINNI_RECALL_HNSW_EF_SEARCH", 100, minimum=1, maximum=1000)
# A project with this many vectors of a kind gets an HNSW index of its own, and one with a fifth as
# many rows a full-text index of its own (memory.vectors.project_indexes_sync, every 10 minutes); 0: none.
WINNI_RECALL_PROJECT_INDEX_MIN = env_int("WINNI_RECALL_PROJECT_INDEX_MIN", 10_000, minimum=0)
# store_memory's `similar`: existing current memories at least this similar (cosine, active model)
# that share a subject word; 0 turns the check off. Measured with all-MiniLM-L6-v2 by
# bench/near_duplicates.py (docs/benchmarks.md); another model needs its own measurement.
WINNI_MEMORY_SIMILAR_THRESHOLD = env_float("WINNI_MEMORY_SIMILAR_THRESHOLD", 0.6, minimum=0.0, maximum=1.0)
# Persona prompts: "name=path,name2=path"; the first is the default an unknown name falls back to.
WINNI_PERSONA_FILES = env_list("WINNI_PERSONA_FILES", [f"memory_protocol={BASE_DIR / 'memory' / 'personas' / 'memory_protocol.md'}"])
# --- Conversations: search and orchestration results ---------------------------------------
# dewey_search ranks only the most recent N matches (docs/search.md, "Common words"); also the cap up to which
# `total` is exact.
WINNI_SEARCH_CANDIDATES = env_int("WINNI_SEARCH_CANDIDATES", 1000, minimum=100, maximum=100_000)
# dewey_search's mode when the caller names none. SPEC: the mode that measures best on the
# retrieval benchmark, which is hybrid (docs/benchmarks.md, "Retrieval quality").
WINNI_SEARCH_DEFAULT_MODE = env_str("WINNI_SEARCH_DEFAULT_MODE", "hybrid")
if WINNI_SEARCH_DEFAULT_MODE not in ("fts", "semantic", "hybrid"):
    raise ImproperlyConfigured(
        f"WINNI_SEARCH_DEFAULT_MODE must be fts, semantic or hybrid, got {WINNI_SEARCH_DEFAULT_MODE!r}"
    )
# true: store NULL for every Fiedler prompt (a request's `redact: true` does it for one).
WINNI_REDACT_PROMPTS = env_bool("WINNI_REDACT_PROMPTS", False)

# --- The LLM: medallions and the cache's judge (core/llm.py, medallions/llm.py) --------------------
# extractive: offline and deterministic (default); openai: any OpenAI-compatible chat-completions
# server (OpenAI, Ollama /v1, vLLM, llama.cpp); anthropic: the Messages API.
WINNI_MEDALLION_LLM_PROVIDER = env_str("WINNI_MEDALLION_LLM_PROVIDER", "extractive").strip().lower()
if WINNI_MEDALLION_LLM_PROVIDER not in ("extractive", "openai", "anthropic"):
    raise ImproperlyConfigured(
        f"WINNI_MEDALLION_LLM_PROVIDER must be extractive, openai or anthropic, got {WINNI_MEDALLION_LLM_PROVIDER!r}"
    )
WINNI_MEDALLION_LLM_BASE_URL = env_str("WINNI_MEDALLION_LLM_BASE_URL", "")
if WINNI_MEDALLION_LLM_BASE_URL and not WINNI_MEDALLION_LLM_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"WINNI_MEDALLION_LLM_BASE_URL must start with http:// or https://, got {WINNI_MEDALLION_LLM_BASE_URL!r}")
WINNI_MEDALLION_LLM_API_KEY = env_str("WINNI_MEDALLION_LLM_API_KEY", "")
WINNI_MEDALLION_LLM_MODEL = env_str("WINNI_MEDALLION_LLM_MODEL", "")
if WINNI_MEDALLION_LLM_PROVIDER != "extractive" and not WINNI_MEDALLION_LLM_MODEL:
    raise ImproperlyConfigured(
        f"WINNI_MEDALLION_LLM_MODEL must name a model when WINNI_MEDALLION_LLM_PROVIDER is {WINNI_MEDALLION_LLM_PROVIDER}"
    )
WINNI_MEDALLION_LLM_JSON_MODE = env_str("WINNI_MEDALLION_LLM_JSON_MODE", "object").strip().lower()
if WINNI_MEDALLION_LLM_JSON_MODE not in ("object", "schema", "off"):
    raise ImproperlyConfigured(f"WINNI_MEDALLION_LLM_JSON_MODE must be object, schema or off, got {WINNI_MEDALLION_LLM_JSON_MODE!r}")
WINNI_MEDALLION_LLM_TIMEOUT_SECONDS = env_float("WINNI_MEDALLION_LLM_TIMEOUT_SECONDS", 120.0, minimum=1, maximum=3600)
# Evidence beyond this many characters is trimmed (oldest transcript text first) before prompting.
WINNI_MEDALLION_LLM_MAX_INPUT_CHARS = env_int("WINNI_MEDALLION_LLM_MAX_INPUT_CHARS", 48_000, minimum=1000)
# Every call to the model counts against one daily token budget (input + output, UTC day, every
# purpose: medallions, digests, the cache's judge); a call that could pass it is not made
# (core.llm). 0 makes no call at all. Cost is estimated from per-million-token prices in USD
# (defaults: a mid-size hosted model's list price; 0 for a local Ollama or vLLM).
WINNI_LLM_DAILY_TOKEN_BUDGET = env_int("WINNI_LLM_DAILY_TOKEN_BUDGET", 200_000, minimum=0)
WINNI_LLM_INPUT_USD_PER_MTOK = env_float("WINNI_LLM_INPUT_USD_PER_MTOK", 3.0, minimum=0)
WINNI_LLM_OUTPUT_USD_PER_MTOK = env_float("WINNI_LLM_OUTPUT_USD_PER_MTOK", 15.0, minimum=0)
# Session digests are written by the model when one is configured: at most this many wait for it,
# and a session beyond them keeps its offline digest (conversations.services.digest). 0: digests
# stay offline while medallions use the model.
WINNI_DIGEST_LLM_BACKLOG = env_int("WINNI_DIGEST_LLM_BACKLOG", 20, minimum=0)

# --- Answer cache ("Librarian", seed 002 §8; names and defaults from the seed) ----------------
LIBRARIAN_MEMORY_ENABLED = env_bool("LIBRARIAN_MEMORY_ENABLED", True)
LIBRARIAN_SEMANTIC_SEARCH = env_bool("LIBRARIAN_SEMANTIC_SEARCH", True)
LIBRARIAN_AUTO_TIER_PROMOTION = env_bool("LIBRARIAN_AUTO_TIER_PROMOTION", True)
LIBRARIAN_CACHE_THRESHOLD = env_int("LIBRARIAN_CACHE_THRESHOLD", 3, minimum=1, maximum=1_000_000)
LIBRARIAN_EXPENSIVE_THRESHOLD_MS = env_int("LIBRARIAN_EXPENSIVE_THRESHOLD_MS", 500, minimum=0, maximum=3_600_000)
# Cosine distance (0 identical, 2 opposite); above 1 would accept unrelated questions.
LIBRARIAN_SIMILARITY_THRESHOLD = env_float("LIBRARIAN_SIMILARITY_THRESHOLD", 0.15, minimum=0.0, maximum=1.0)
LIBRARIAN_MAX_CACHED = env_int("LIBRARIAN_MAX_CACHED", 10_000, minimum=1)
LIBRARIAN_TTL_SECONDS = env_int("LIBRARIAN_TTL_SECONDS", 24 * 3600, minimum=0)  # 0: never expire
LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT = env_int("LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT", 2, minimum=1)
LIBRARIAN_EVICT_INTERVAL_SECONDS = env_int("LIBRARIAN_EVICT_INTERVAL_SECONDS", 300, minimum=10)
LIBRARIAN_UNCACHED_RETENTION_DAYS = env_int("LIBRARIAN_UNCACHED_RETENTION_DAYS", 30, minimum=1)
# An LLM rates each answer before it is cached: the chat model of WINNI_MEDALLION_LLM_* (core.llm);
# the offline extractive provider has none.
LIBRARIAN_JUDGMENT_MODEL = env_bool("LIBRARIAN_JUDGMENT_MODEL", False)
if LIBRARIAN_JUDGMENT_MODEL and WINNI_MEDALLION_LLM_PROVIDER == "extractive":
    raise ImproperlyConfigured(
        "LIBRARIAN_JUDGMENT_MODEL needs an LLM: set WINNI_MEDALLION_LLM_PROVIDER to openai or anthropic"
    )

# --- Operations: backups, retention (issue #7) ----------------------------------------------
# Backups (pg_dump custom format + a JSON manifest) go to WINNI_BACKUP_DIR; the newest
# WINNI_BACKUP_KEEP are kept; beat takes one every WINNI_BACKUP_INTERVAL_HOURS (0 = never).
WINNI_BACKUP_DIR = Path(env_str("WINNI_BACKUP_DIR", str(DATA_DIR / "backups"))).expanduser().resolve()
WINNI_BACKUP_KEEP = env_int("WINNI_BACKUP_KEEP", 7, minimum=1, maximum=10_000)
WINNI_BACKUP_INTERVAL_HOURS = env_float("WINNI_BACKUP_INTERVAL_HOURS", 24, minimum=0, maximum=24 * 365)
# A backup before `migrate` applies migrations to a database that already holds data.
WINNI_BACKUP_BEFORE_MIGRATE = env_bool("WINNI_BACKUP_BEFORE_MIGRATE", True)
# Folder with pg_dump / pg_restore matching the server's major version (empty: the embedded
# server's own programs, or the ones on PATH for an external DATABASE_URL).
WINNI_PG_BIN_DIR = env_str("WINNI_PG_BIN_DIR")
if WINNI_PG_BIN_DIR and not (Path(WINNI_PG_BIN_DIR) / "pg_dump").exists():
    raise ImproperlyConfigured(f"WINNI_PG_BIN_DIR must be a folder containing pg_dump, got {WINNI_PG_BIN_DIR!r}")
# Retention (off = 0): rows older than N days are purged daily by beat. Memories, medallions and
# startup contexts are never purged.
WINNI_RETENTION_DAYS_CONVERSATIONS = env_int("WINNI_RETENTION_DAYS_CONVERSATIONS", 0, minimum=0)
WINNI_RETENTION_DAYS_FIEDLER = env_int("WINNI_RETENTION_DAYS_FIEDLER", 0, minimum=0)
WINNI_RETENTION_DAYS_CACHE = env_int("WINNI_RETENTION_DAYS_CACHE", 0, minimum=0)
# The LLM calls' accounting rows (core.LLMCall; the dashboard's panel and the daily budget read the
# last days only): kept 90 days by default, 0 keeps them forever.
WINNI_RETENTION_DAYS_LLM_CALLS = env_int("WINNI_RETENTION_DAYS_LLM_CALLS", 90, minimum=0)
# Every operation in /api/schema/ documents the error responses (core.errors).
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [
    "drf_spectacular.hooks.postprocess_schema_enums",
    "core.errors.document_error_responses",
    "core.rest.declare_input_rules",
]
# Distinct component names for the views' nested serializers, the bearer scheme (winni_site.schema).
REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "winni_site.schema.WinniAutoSchema"
