"""Test settings: a throw-away embedded PostgreSQL in a temporary data dir (unless DATABASE_URL
is set), eager Celery, fast hashing (HS config/django/test.py)."""
import atexit
import os
import shutil
import tempfile

_THROWAWAY_SERVERS = not os.environ.get("WINNI_DATA_DIR")
if _THROWAWAY_SERVERS:
    # Short path: PostgreSQL's unix socket must fit in ~107 characters. Child processes (xdist,
    # the live server, the Celery worker) inherit the variable and so share this server.
    _data_dir = tempfile.mkdtemp(prefix="winni-test-", dir="/tmp")
    os.environ["WINNI_DATA_DIR"] = _data_dir

    def _stop_test_servers() -> None:
        from pathlib import Path

        from winni_site import embedded

        embedded.stop_all(Path(_data_dir))
        shutil.rmtree(_data_dir, ignore_errors=True)

    atexit.register(_stop_test_servers)

# Tests never read the checkout's winni.env (a developer's port or database must not leak in);
# the tests of the settings file name their own file.
os.environ.setdefault("WINNI_ENV_FILE", os.devnull)

# Tests embed with the deterministic hashing stand-in unless a test asks for the real model.
os.environ.setdefault("WINNI_EMBEDDING_PROVIDER", "hash")
os.environ.setdefault("WINNI_EMBEDDING_MODEL", "hash-bow")
# The tests call every MCP tool; tests/core/test_mcp_tools.py builds the default set's server itself.
os.environ.setdefault("WINNI_MCP_TOOLSETS", "all")

from .base import *  # noqa: E402,F401,F403

if _THROWAWAY_SERVERS and WINNI_EMBEDDED_POSTGRES:  # noqa: F405
    # The throw-away server's data dies with the run: skip the disk flushes that make a crash safe
    # (every test database's migrations and every transactional test's flush commit many times).
    # The tests that kill PostgreSQL start servers in data dirs of their own.
    from winni_site import embedded as _embedded

    with _embedded._admin_connection(DATABASES["default"]["HOST"], DATABASES["default"]["PORT"]) as _admin:  # noqa: F405
        for _name in ("fsync", "synchronous_commit", "full_page_writes"):
            _admin.execute(f"ALTER SYSTEM SET {_name} = off")
        _admin.execute("SELECT pg_reload_conf()")

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
WINNI_LOG_LEVEL = env_str("WINNI_LOG_LEVEL", "WARNING").upper()  # noqa: F405 - quiet unless a test asks
LOGGING["loggers"]["winni"]["level"] = WINNI_LOG_LEVEL  # noqa: F405
# Off in tests (test databases are migrated all the time) unless a test enables it.
WINNI_BACKUP_BEFORE_MIGRATE = env_bool("WINNI_BACKUP_BEFORE_MIGRATE", False)  # noqa: F405
# pytest-xdist runs the suite in worker processes (gw0, gw1, ...) that share the embedded servers;
# pytest-django gives each its own test database. Each gets its own Redis database too, so the Celery
# worker a test of gw0 starts never takes a task queued by gw1 (and heartbeats stay apart). Child
# processes get REDIS_URL from the tests (tests.support.child_env), so they are not moved again.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WINNI_EMBEDDED_REDIS and _XDIST_WORKER.startswith("gw"):  # noqa: F405
    REDIS_URL = f"{REDIS_URL.rsplit('/', 1)[0]}/{1 + int(_XDIST_WORKER[2:]) % 15}"  # noqa: F405
    CELERY_BROKER_URL = CELERY_RESULT_BACKEND = REDIS_URL

# Most search tests pin full-text ranking; test_search_default_mode covers the production default.
WINNI_SEARCH_DEFAULT_MODE = "fts"
