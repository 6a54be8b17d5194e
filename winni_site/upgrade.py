"""Upgrades in place: what `./winni run` does with migrations a `git pull` brought.

Before anything serves, the pending migrations are listed, a backup is taken (the one
WINNI_BACKUP_BEFORE_MIGRATE takes, skipped for a database without data) and they are applied.

When one fails, the migrations before it (each is its own transaction) may already be applied: the
database is restored from that backup, so it holds the previous version's schema and data again.
The code on disk is the new version, which cannot run on that schema, so Winni does not start:
the message names the failed migration, its error, the backup, and the commit that last started
(`git checkout <commit>` runs the previous version on the restored data). A marker in the run
folder remembers the failure: the next start with the same migrations (same names, same files)
stops at once with the same message instead of backing up and failing again (under the user
service that would be a loop pruning older backups); changed migration files, or `--retry-
migrations`, try again. Meanwhile Claude Code's hooks find no server and spool their events
(agents.hook); they are sent once Winni runs again."""
from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.models.signals import pre_migrate

from winni_site import backups

FAILED_MARKER = "failed-migration.json"
LAST_START = "last-start.json"
Say = Callable[[str], None]


class UpgradeFailed(Exception):
    pass


def pending_plan() -> list[tuple[Any, bool]]:
    executor = MigrationExecutor(connection)
    return executor.migration_plan(executor.loader.graph.leaf_nodes())


def _names(plan: list[tuple[Any, bool]]) -> list[str]:
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def _plan_key(plan: list[tuple[Any, bool]]) -> str:
    """The pending migrations' names and file contents: an edited migration is a new attempt."""
    digest = hashlib.sha256()
    for migration, _ in plan:
        digest.update(f"{migration.app_label}.{migration.name}\n".encode())
        try:
            digest.update(Path(inspect.getfile(type(migration))).read_bytes())
        except (OSError, TypeError):
            pass
    return digest.hexdigest()


def git_commit() -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(settings.BASE_DIR), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def migrate(*, run_dir: Path, say: Say, retry: bool = False) -> None:
    """Apply the pending migrations, or raise UpgradeFailed with what happened and what to do."""
    run_dir.mkdir(parents=True, exist_ok=True)
    marker = run_dir / FAILED_MARKER
    plan = pending_plan()
    if not plan:
        marker.unlink(missing_ok=True)
        _record_start(run_dir)
        return
    key = _plan_key(plan)
    failed_before = _read_json(marker)
    if failed_before and failed_before.get("plan_key") == key and not retry:
        raise UpgradeFailed(
            f"{failed_before['message']}\n(This start applied nothing: these migrations failed before, on "
            f"{failed_before['at']}. Start with --retry-migrations to try them again unchanged.)")
    names = _names(plan)
    upgrading = bool(MigrationExecutor(connection).loader.applied_migrations)  # not the first start
    if upgrading:
        say(f"{len(plan)} new migration(s) to apply: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}")
    backup = backups.backup_before_migrate(plan=plan, progress=say)
    try:
        # The backup above is the pre-migrate backup: the hook must not take a second one.
        from winni_site.apps import _backup_before_migrate

        app = apps.get_app_config("winni_site")
        pre_migrate.disconnect(sender=app, dispatch_uid="winni_backup_before_migrate")
        try:
            call_command("migrate", interactive=False, verbosity=0)
        finally:
            pre_migrate.connect(_backup_before_migrate, sender=app, dispatch_uid="winni_backup_before_migrate")
    except Exception as exc:  # noqa: BLE001 - any failure: restore, explain, stop
        message = _after_failure(plan, exc, backup, run_dir, say)
        _write_json(marker, {"plan_key": key, "message": message, "at": dt.datetime.now(dt.timezone.utc).isoformat()})
        raise UpgradeFailed(message) from exc
    marker.unlink(missing_ok=True)
    if upgrading:
        say(f"applied {len(plan)} migration(s)" + (f"; the backup taken before: {backup.path}" if backup else ""))
    _record_start(run_dir)


def _after_failure(plan: list[tuple[Any, bool]], exc: Exception, backup: backups.Backup | None, run_dir: Path,
                   say: Say) -> str:
    connections.close_all()
    applied = set(MigrationExecutor(connection).loader.applied_migrations)
    done = [name for (migration, _), name in zip(plan, _names(plan))
            if (migration.app_label, migration.name) in applied]
    failed = next((name for name in _names(plan) if name not in done), "?")
    error = f"{type(exc).__name__}: {str(exc).strip()[:500]}"
    lines = [f"the update's migration {failed} failed: {error}"]
    if backup is None:
        reason = ("the database held no data" if settings.WINNI_BACKUP_BEFORE_MIGRATE
                  else "WINNI_BACKUP_BEFORE_MIGRATE is false")
        lines.append(f"No backup was taken ({reason}); the database stays as the failed migration left it: "
                     f"{len(done)} of {len(plan)} new migration(s) applied ({', '.join(done) or 'none'}).")
    else:
        connections.close_all()
        try:
            backups.backup_restore(path=backup.path, force=True, progress=say)
            lines.append(f"{len(done)} of {len(plan)} new migration(s) had been applied; the database was restored "
                         f"from the backup taken just before ({backup.path}): it holds the previous version's "
                         "schema and data again, nothing is lost.")
        except Exception as restore_exc:  # noqa: BLE001
            lines.append(f"Restoring the backup taken just before ({backup.path}) failed too ({restore_exc}); "
                         f"{len(done)} of {len(plan)} new migration(s) are applied. Restore it by hand: "
                         f"./winni manage winni_restore {backup.path} --force")
    previous = (_read_json(run_dir / LAST_START) or {}).get("commit")
    lines.append("This version of the code needs the new schema, so Winni did not start. Either")
    if previous:
        lines.append(f"  - run the version that last started here on it:  git checkout {previous} && ./winni run")
    else:
        lines.append("  - run the version that ran before on it (git checkout <the commit you pulled from> && ./winni run)")
    lines.append(f"  - or fix the migration {failed} and start again.")
    return "\n".join(lines)


def _record_start(run_dir: Path) -> None:
    """The commit and schema that started well: where `git checkout` goes back to after a failed upgrade."""
    executor = MigrationExecutor(connection)
    latest: dict[str, str] = {}
    for app, name in sorted(executor.loader.applied_migrations):
        latest[app] = max(latest.get(app, name), name)
    _write_json(run_dir / LAST_START, {"commit": git_commit(), "at": dt.datetime.now(dt.timezone.utc).isoformat(),
                                       "migrations": latest})
