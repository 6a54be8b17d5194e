"""Structured logging: one JSON line per storage operation, the request id on every line."""
from __future__ import annotations

import json
import logging
import time
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

request_id_var: ContextVar[str] = ContextVar("winni_request_id", default="-")
storage_log = logging.getLogger("winni.storage")


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", request_id_var.get()),
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


@contextmanager
def storage_op(operation: str, **fields: Any) -> Iterator[dict[str, Any]]:
    """Log one line for a storage operation with its duration; callers may add ids to the dict.

    A failed operation is logged too (with `error`), then the exception continues."""
    started = time.perf_counter()
    try:
        yield fields
    except Exception as exc:
        fields["error"] = type(exc).__name__
        raise
    finally:
        fields["duration_ms"] = round((time.perf_counter() - started) * 1000, 2)
        storage_log.info(operation, extra={"fields": {"op": operation, **fields}})
