"""The kernel's background work: anchoring written rows (core.anchors) in the worker. Reading a
row's named files, the project's file records and hashing the files took 25–45 ms a captured event
on a loaded host, inside the hook's request (its on-commit receiver); the worker does it now."""
from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from core import anchors

log = logging.getLogger("winni.anchors")


@shared_task(name="core.tasks.anchors_sync", ignore_result=True)
def anchors_sync(kind: str, ids: list[str]) -> None:
    anchors.on_changed(kind=kind, ids=ids)


def anchors_enqueue(*, kind: str, ids: list[Any], **_: Any) -> None:
    """searchable_changed's receiver: the rows' anchoring queued for the worker; done here when the
    broker cannot take it (marks must not be lost with a broker that is down)."""
    if not anchors.anchored(kind) or not ids:
        return
    keys = [str(pk) for pk in ids]
    try:
        anchors_sync.delay(kind, keys)
    except Exception as exc:  # noqa: BLE001 - the broker is down: anchor in the caller
        log.warning("could not queue anchoring", extra={"fields": {"kind": kind, "error": str(exc)[:200]}})
        anchors.on_changed(kind=kind, ids=keys)
