"""Backup, restore, export and import times for a database of N conversations × M messages, in
a throw-away embedded PostgreSQL.
    .venv/bin/python bench/ops.py [--conversations 2000] [--messages 25]"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=25)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="winni-opsbench-", dir="/tmp"))
    os.environ.update(WINNI_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="winni_site.settings.dev",
                      WINNI_LOG_LEVEL="WARNING")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from tqdm import tqdm

    from conversations.models import Conversation, Message
    from winni_site import backups, embedded, portable

    try:
        call_command("migrate", verbosity=0)
        words = "postgres backup vector medallion embedding celery restore agent memory cache".split()
        for start in tqdm(range(0, args.conversations, 100), desc="loading", unit=" ×100 conversations"):
            convs = [Conversation(session_id=f"bench-{n}") for n in range(start, min(args.conversations, start + 100))]
            Conversation.objects.bulk_create(convs)
            Message.objects.bulk_create([
                Message(conversation=c, turn_number=t + 1, role=("user", "assistant")[t % 2],
                        content=" ".join(words[(t + i) % len(words)] for i in range(40)))
                for c in convs for t in range(args.messages)])
        rows = Message.objects.count()
        size = connection.cursor()
        size.execute("SELECT pg_database_size(current_database())")
        db_bytes = size.fetchone()[0]
        timings = {}

        started = time.perf_counter()
        backup = backups.backup_create(out=data_dir / "bench.dump")
        timings["winni_backup"] = time.perf_counter() - started
        scratch = {**connection.settings_dict, "NAME": "bench_restore"}
        started = time.perf_counter()
        backups.backup_restore(path=backup.path, database=scratch)
        timings["winni_restore (into a new database, then swap)"] = time.perf_counter() - started
        started = time.perf_counter()
        manifest = portable.export_all(out=data_dir / "export")
        timings["winni_export"] = time.perf_counter() - started
        Conversation.objects.all().delete()
        started = time.perf_counter()
        portable.import_all(folder=data_dir / "export")
        timings["winni_import (into an empty database)"] = time.perf_counter() - started
        started = time.perf_counter()
        portable.import_all(folder=data_dir / "export")
        timings["winni_import again (adds nothing)"] = time.perf_counter() - started
        started = time.perf_counter()
        call_command("winni_vacuum", stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"))
        timings["winni_vacuum"] = time.perf_counter() - started

        export_bytes = sum(p.stat().st_size for p in (data_dir / "export").iterdir())
        print(f"\n{args.conversations} conversations, {rows} messages; database {db_bytes / 1048576:.1f} MiB, "
              f"dump {backup.manifest['size_bytes'] / 1048576:.1f} MiB, export {export_bytes / 1048576:.1f} MiB")
        for name, seconds in timings.items():
            print(f"{name:50} {seconds:7.2f} s  ({rows / seconds:,.0f} messages/s)")
        assert manifest["stores"]["conversations"]["rows"]["conversations.message"] == rows
    finally:
        connection.close()
        embedded.stop_all(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
