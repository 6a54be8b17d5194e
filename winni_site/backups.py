"""Whole-database backups and restores (pg_dump custom format), with a manifest.

A backup is two files: `winni-<UTC time>.dump` and `winni-<UTC time>.dump.manifest.json`
(format version, time, server version, schema version = last migration per app, row counts per
table, SHA-256 and size of the dump). Both are written to a temporary name and renamed, the
manifest last: a dump without its manifest is unfinished and is never restored or counted.

The row counts and the dump come from one snapshot (`pg_export_snapshot()` + `pg_dump
--snapshot`), so they agree even while agents keep writing.

A restore never touches the live database until the very end: it restores into a new database,
checks the row counts against the manifest, and only then swaps the names."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from django.conf import settings
from django.db import connections
from psycopg import sql

from core.errors import Conflict, InvalidInput, NotFound
from core.logs import storage_op
from winni_site import pgtools
from winni_site.pgtools import OperationFailed

MANIFEST_FORMAT = "winni-backup"
MANIFEST_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
RESTORE_REFUSED = (
    "the database {name!r} already holds data; restoring replaces all of it (pass --force to do that)"
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Backup:
    path: Path
    manifest: dict[str, Any]

    @property
    def manifest_path(self) -> Path:
        return manifest_path(self.path)


def manifest_path(dump: Path) -> Path:
    return dump.with_name(dump.name + MANIFEST_SUFFIX)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _default_name() -> str:
    return "winni-" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + ".dump"


def _remove_stale_temporaries(folder: Path) -> None:
    """Leftovers of a backup whose process was killed (their pg_dump died with it)."""
    for tmp in folder.glob(".winni-*.tmp-*"):
        try:
            pid = int(tmp.name.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            tmp.unlink(missing_ok=True)
        except PermissionError:
            pass  # a live process of another user


def backup_create(
    *, out: Path | None = None, database: dict[str, Any] | None = None, progress: Progress | None = None
) -> Backup:
    """Dump the database to `out` (a file, or a folder for a timestamped name; default
    WINNI_BACKUP_DIR), write its manifest, and prune old backups in WINNI_BACKUP_DIR."""
    database = database or pgtools.database_settings()
    say = progress or (lambda message: None)
    if out is None or out.is_dir():
        folder = out or settings.WINNI_BACKUP_DIR
        target = folder / _default_name()
    else:
        target = out
    if target.suffix != ".dump":
        raise InvalidInput(f"out must end in .dump or be a folder, got {str(target)!r}", field="out")
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target.parent)
    programs = pgtools.programs_for(database)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    started = time.monotonic()
    with storage_op("backup.create", path=str(target)) as log:
        # One snapshot for the dump and the counts: hold the exporting transaction open until
        # pg_dump has taken the snapshot over (it does so at its start; we wait for its end).
        with pgtools.connect(database, autocommit=False) as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            snapshot_row = conn.execute("SELECT pg_export_snapshot()").fetchone()
            assert snapshot_row is not None
            counts = pgtools.row_counts(conn)
            schema = pgtools.schema_version(conn)
            version_row = conn.execute("SHOW server_version").fetchone()
            assert version_row is not None
            server_version = str(version_row[0])
            say(f"dumping {sum(counts.values())} rows in {len(counts)} tables with {programs / 'pg_dump'}")
            try:
                pgtools.run_program(
                    [str(programs / "pg_dump"), "--format=custom", "--no-password", f"--snapshot={snapshot_row[0]}",
                     f"--file={tmp}", database["NAME"]],
                    database,
                )
                with open(tmp, "rb+") as handle:
                    os.fsync(handle.fileno())
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            conn.rollback()
        os.replace(tmp, target)
        manifest = {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "database": database["NAME"],
            "server_version": server_version,
            "schema_version": schema,
            "row_counts": counts,
            "size_bytes": target.stat().st_size,
            "sha256": file_sha256(target),
            "duration_seconds": round(time.monotonic() - started, 3),
        }
        _write_atomically(manifest_path(target), json.dumps(manifest, indent=2, sort_keys=True).encode())
        log.update(size_bytes=manifest["size_bytes"], rows=sum(counts.values()))
    say(f"wrote {target} ({manifest['size_bytes']} bytes, sha256 {manifest['sha256'][:12]}…)")
    if target.parent == settings.WINNI_BACKUP_DIR:
        for removed in backup_prune(keep=settings.WINNI_BACKUP_KEEP):
            say(f"removed old backup {removed}")
    return Backup(path=target, manifest=manifest)


def backup_list(*, folder: Path | None = None) -> list[Backup]:
    """Finished backups (those with a manifest), oldest first."""
    folder = folder or settings.WINNI_BACKUP_DIR
    found = []
    for manifest_file in sorted(folder.glob("winni-*.dump" + MANIFEST_SUFFIX)):
        dump = manifest_file.with_name(manifest_file.name[: -len(MANIFEST_SUFFIX)])
        try:
            found.append(Backup(path=dump, manifest=json.loads(manifest_file.read_text())))
        except ValueError:
            continue
    return found


def backup_prune(*, keep: int, folder: Path | None = None) -> list[Path]:
    """Delete all but the newest `keep` finished backups; returns the removed dump paths."""
    if keep < 1:
        raise InvalidInput("keep must be at least 1", field="keep")
    backups = backup_list(folder=folder)
    removed = []
    for backup in backups[: max(0, len(backups) - keep)]:
        backup.path.unlink(missing_ok=True)
        backup.manifest_path.unlink(missing_ok=True)
        removed.append(backup.path)
    return removed


def backup_verify(*, path: Path) -> dict[str, Any]:
    """The manifest of a finished backup whose dump still has the recorded checksum."""
    if not path.exists():
        raise NotFound(f"no backup at {path}", field="path")
    if not manifest_path(path).exists():
        raise InvalidInput(f"{path} has no manifest ({manifest_path(path).name}): an unfinished backup?", field="path")
    try:
        manifest = json.loads(manifest_path(path).read_text())
    except ValueError as exc:
        raise InvalidInput(f"the manifest of {path} is not JSON: {exc}", field="path") from None
    if manifest.get("format") != MANIFEST_FORMAT or manifest.get("version") != MANIFEST_VERSION:
        raise InvalidInput(
            f"{manifest_path(path).name} is not a {MANIFEST_FORMAT} manifest version {MANIFEST_VERSION}", field="path"
        )
    actual = file_sha256(path)
    if actual != manifest.get("sha256"):
        raise InvalidInput(
            f"checksum mismatch for {path}: the manifest says {manifest.get('sha256')}, the file is {actual}",
            field="path",
        )
    return manifest


def _allow_connections(conn: Any, name: str, allow: bool) -> None:
    conn.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(
        sql.Identifier(name), sql.SQL("true" if allow else "false")))


def _terminate_other_sessions(conn: Any, name: str) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (name,),
    )


def backup_restore(
    *,
    path: Path,
    force: bool = False,
    keep_old: bool = False,
    database: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Replace the database with the backup at `path`.

    Refuses a database that holds data unless `force`. Restores into a new database first; the
    live one is renamed away only after the restored copy has the manifest's row counts, so a
    failed restore leaves the old data untouched. Returns the manifest."""
    database = database or pgtools.database_settings()
    say = progress or (lambda message: None)
    manifest = backup_verify(path=path)
    say(f"checksum ok ({manifest['sha256'][:12]}…), backup of {manifest['created_at']}")
    name = database["NAME"]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d%H%M%S")
    fresh, old = f"{name[:40]}_restore_{stamp}", f"{name[:40]}_before_restore_{stamp}"
    with pgtools.connect(database, dbname="postgres") as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
    if exists:
        with pgtools.connect(database) as conn:
            if pgtools.holds_data(conn) and not force:
                raise Conflict(RESTORE_REFUSED.format(name=name), field="force")
    programs = pgtools.programs_for(database)
    with storage_op("backup.restore", path=str(path), database=name) as log:
        with pgtools.connect(database, dbname="postgres") as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(fresh)))
        try:
            say(f"restoring into a new database {fresh}")
            pgtools.run_program(
                [str(programs / "pg_restore"), "--exit-on-error", "--no-owner", "--no-password",
                 f"--dbname={fresh}", str(path)],
                database,
            )
            with pgtools.connect({**database, "NAME": fresh}) as conn:
                counts = pgtools.row_counts(conn)
            if counts != manifest["row_counts"]:
                differ = sorted(t for t in set(counts) | set(manifest["row_counts"])
                                if counts.get(t) != manifest["row_counts"].get(t))
                raise OperationFailed(f"restored row counts differ from the manifest in {differ[:10]}")
        except BaseException:
            with pgtools.connect(database, dbname="postgres") as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(fresh)))
            raise
        # The swap: Django's own connections first, then everyone else's; two renames.
        connections.close_all()
        with pgtools.connect(database, dbname="postgres") as admin:
            if exists:
                # No new sessions may slip in between closing the old ones and the rename.
                _allow_connections(admin, name, False)
                try:
                    _terminate_other_sessions(admin, name)
                    admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(name), sql.Identifier(old)))
                except BaseException:
                    _allow_connections(admin, name, True)
                    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(fresh)))
                    raise
            admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(fresh), sql.Identifier(name)))
            if exists and keep_old:
                _allow_connections(admin, old, True)
            elif exists:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(old)))
        log.update(rows=sum(counts.values()), kept_old=old if exists and keep_old else None)
    say(f"restored {sum(counts.values())} rows into {name}" + (f"; the previous data is in {old}" if exists and keep_old else ""))
    return manifest


# --- the automatic backup before migrations -----------------------------------------------


def backup_before_migrate(*, plan: list[tuple[Any, bool]], database: dict[str, Any] | None = None,
                          progress: Progress | None = None) -> Backup | None:
    """Take a backup when `plan` (migrate's list of (migration, backwards)) is not empty and the
    database already holds data; None otherwise. A failed backup stops the migration."""
    if not settings.WINNI_BACKUP_BEFORE_MIGRATE or not plan:
        return None
    database = database or pgtools.database_settings()
    with pgtools.connect(database) as conn:
        if not pgtools.holds_data(conn):
            return None
    names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5]) + (" …" if len(plan) > 5 else "")
    (progress or (lambda message: None))(f"backing up before applying {len(plan)} migration(s): {names}")
    try:
        return backup_create(database=database, progress=progress)
    except OperationFailed as exc:
        raise OperationFailed(
            f"no migration applied: the automatic backup before migrate failed ({exc.message}). "
            "Fix it, or set WINNI_BACKUP_BEFORE_MIGRATE=false to migrate without a backup."
        ) from exc


# --- scheduled backups (Celery beat) --------------------------------------------------------


def backup_scheduled(*, task_id: str) -> Any:
    """The beat-driven backup, recorded as a BackupRun keyed by the task id. A redelivered task
    (its worker died) picks up the same row: one run, attempts counted, never two records."""
    from django.utils import timezone

    from winni_site.models import BackupRun

    run, _ = BackupRun.objects.get_or_create(task_id=task_id)
    if run.status == BackupRun.Status.DONE:
        return run
    BackupRun.objects.filter(pk=run.pk).update(
        status=BackupRun.Status.RUNNING, attempts=run.attempts + 1, worker_pid=os.getpid(), error=""
    )
    try:
        backup = backup_create()
    except OperationFailed as exc:
        BackupRun.objects.filter(pk=run.pk).update(status=BackupRun.Status.FAILED, error=exc.message,
                                                   finished_at=timezone.now())
        raise
    BackupRun.objects.filter(pk=run.pk).update(
        status=BackupRun.Status.DONE, path=str(backup.path), size_bytes=backup.manifest["size_bytes"],
        finished_at=timezone.now(),
    )
    run.refresh_from_db()
    return run
