"""Seed 004's MedallionStore interface and two implementations: over Winni's REST API, and a
standalone SQLite file for an agent without a server. Documents are plain dicts in the medallion
JSON Schema (meta, scope, summary, decisions, open_questions, affordances).

Scope matching everywhere: requested graph nodes ⊆ stored nodes and requested tags ⊆ stored tags;
an empty requested list matches everything on that axis. Newest `updated_at` first."""
from __future__ import annotations

import abc
import contextlib
import datetime as dt
import json
import sqlite3
import threading
import uuid
from typing import Any, Iterator

import httpx

from winni_client.schema import (
    SCHEMA_VERSION,
    MedallionError,
    MedallionNotFoundError,
    MedallionValidationError,
    validate,
)

Scope = dict[str, list[str]]
STATUSES = ("active", "superseded", "archived")


class MedallionStore(abc.ABC):
    @abc.abstractmethod
    def create(self, medallion: dict[str, Any]) -> dict[str, Any]:
        """Persist a new medallion (meta may be left out: id, timestamps and version are assigned)."""

    @abc.abstractmethod
    def update(self, medallion: dict[str, Any]) -> dict[str, Any]:
        """Replace the medallion `meta.id` names; created_at is kept, updated_at is now."""

    @abc.abstractmethod
    def get_by_id(self, medallion_id: str) -> dict[str, Any] | None:
        """The medallion, or None when there is none with that id."""

    @abc.abstractmethod
    def get_latest_for_scope(self, scope: Scope, limit: int = 3, status: str | None = "active") -> list[dict[str, Any]]:
        """Newest matching medallions first (status None: any status)."""


def check_scope(scope: Any) -> Scope:
    if not isinstance(scope, dict):
        raise MedallionValidationError("scope", "must be an object with graph_nodes and tags")
    out: Scope = {}
    for axis in ("graph_nodes", "tags"):
        items = scope.get(axis) or []
        if not isinstance(items, list):
            raise MedallionValidationError(f"scope.{axis}", "must be a list of strings")
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                raise MedallionValidationError(f"scope.{axis}[{index}]", "must be a non-empty string")
        out[axis] = list(dict.fromkeys(item.strip() for item in items))
    return out


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


class SQLiteMedallionStore(MedallionStore):
    """One SQLite file (or ":memory:"): each medallion's JSON document, its scope items in an indexed
    table for subset queries, and every previous version in `revisions`."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.executescript("""
            CREATE TABLE IF NOT EXISTS medallions (
                id TEXT PRIMARY KEY, schema_version TEXT NOT NULL, status TEXT NOT NULL,
                created_at TEXT NOT NULL, updated_at TEXT NOT NULL, document TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS medallions_status_updated ON medallions (status, updated_at DESC);
            CREATE TABLE IF NOT EXISTS medallion_scope (
                medallion_id TEXT NOT NULL REFERENCES medallions(id) ON DELETE CASCADE,
                axis TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (medallion_id, axis, value));
            CREATE INDEX IF NOT EXISTS medallion_scope_lookup ON medallion_scope (axis, value);
            CREATE TABLE IF NOT EXISTS revisions (
                medallion_id TEXT NOT NULL, number INTEGER NOT NULL, document TEXT NOT NULL,
                created_at TEXT NOT NULL, PRIMARY KEY (medallion_id, number));
        """)

    def close(self) -> None:
        self._db.close()

    def _prepare(self, medallion: Any, existing: dict[str, Any] | None) -> dict[str, Any]:
        if not isinstance(medallion, dict):
            raise MedallionValidationError("medallion", "must be a JSON object")
        meta = medallion.get("meta") or {}
        if not isinstance(meta, dict):
            raise MedallionValidationError("meta", "must be an object")
        now = _now()
        full = {**medallion, "meta": {
            "id": existing["meta"]["id"] if existing else str(meta.get("id") or uuid.uuid4()),
            "schema_version": SCHEMA_VERSION,
            "created_at": existing["meta"]["created_at"] if existing else now,
            "updated_at": now,
            "status": meta.get("status", existing["meta"]["status"] if existing else "active"),
            "model_info": meta.get("model_info", existing["meta"].get("model_info") if existing else {}) or {},
        }}
        document = validate(full)
        document["scope"] = check_scope(document["scope"])
        return document

    def _write(self, document: dict[str, Any], *, insert: bool) -> None:
        meta = document["meta"]
        row = (meta["schema_version"], meta["status"], meta["created_at"], meta["updated_at"],
               json.dumps(document, ensure_ascii=False), meta["id"])
        if insert:
            self._db.execute("INSERT INTO medallions (schema_version, status, created_at, updated_at, document, id)"
                             " VALUES (?, ?, ?, ?, ?, ?)", row)
        else:
            self._db.execute("UPDATE medallions SET schema_version=?, status=?, created_at=?, updated_at=?, "
                             "document=? WHERE id=?", row)
            self._db.execute("DELETE FROM medallion_scope WHERE medallion_id=?", (meta["id"],))
        self._db.executemany(
            "INSERT INTO medallion_scope (medallion_id, axis, value) VALUES (?, ?, ?)",
            [(meta["id"], axis, value) for axis in ("graph_nodes", "tags") for value in document["scope"][axis]],
        )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One writer at a time (the lock, across threads) in one SQLite transaction."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def create(self, medallion: dict[str, Any]) -> dict[str, Any]:
        document = self._prepare(medallion, None)
        with self._transaction():
            if self._db.execute("SELECT 1 FROM medallions WHERE id=?", (document["meta"]["id"],)).fetchone():
                raise MedallionValidationError("meta.id", f"{document['meta']['id']} already exists")
            self._write(document, insert=True)
        return document

    def update(self, medallion: dict[str, Any]) -> dict[str, Any]:
        medallion_id = str(((medallion or {}).get("meta") or {}).get("id") or "")
        with self._transaction():
            existing = self._get(medallion_id)
            if existing is None:
                raise MedallionNotFoundError(f"medallion {medallion_id!r} not found")
            document = self._prepare(medallion, existing)
            number = self._db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM revisions WHERE medallion_id=?",
                                      (medallion_id,)).fetchone()[0]
            self._db.execute("INSERT INTO revisions VALUES (?, ?, ?, ?)",
                             (medallion_id, number, json.dumps(existing), _now()))
            self._write(document, insert=False)
        return document

    def _get(self, medallion_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT document FROM medallions WHERE id=?", (str(medallion_id),)).fetchone()
        return json.loads(row[0]) if row else None

    def get_by_id(self, medallion_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._get(medallion_id)

    def history(self, medallion_id: str) -> list[dict[str, Any]]:
        """Previous versions, newest first."""
        with self._lock:
            rows = self._db.execute("SELECT document FROM revisions WHERE medallion_id=? ORDER BY number DESC",
                                    (str(medallion_id),)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def get_latest_for_scope(self, scope: Scope, limit: int = 3, status: str | None = "active") -> list[dict[str, Any]]:
        scope = check_scope(scope)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise MedallionValidationError("limit", "must be a positive integer")
        sql = "SELECT document FROM medallions m WHERE 1=1"
        args: list[Any] = []
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        for axis in ("graph_nodes", "tags"):
            wanted = scope[axis]
            if wanted:
                sql += (" AND (SELECT COUNT(*) FROM medallion_scope s WHERE s.medallion_id = m.id AND s.axis = ?"
                        f" AND s.value IN ({', '.join('?' * len(wanted))})) = ?")
                args += [axis, *wanted, len(wanted)]
        sql += " ORDER BY updated_at DESC, created_at DESC LIMIT ?"
        args.append(limit)
        with self._lock:
            return [json.loads(row[0]) for row in self._db.execute(sql, args).fetchall()]


class RestMedallionStore(MedallionStore):
    """The same interface over Winni's REST API (`/api/v1/medallions/`)."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0,
                 http: httpx.Client | None = None) -> None:
        self.http = http or httpx.Client(base_url=base_url.rstrip("/") + "/api/v1/", timeout=timeout,
                                         headers={"Authorization": f"Bearer {token}"})

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)
        if response.status_code < 400:
            return response
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            raise MedallionError(f"Winni answered HTTP {response.status_code}: {response.text[:300]}") from None
        if response.status_code == 404:
            raise MedallionNotFoundError(error["message"])
        if response.status_code in (400, 413):
            path_name = next(iter(error.get("fields") or {}), "medallion")
            raise MedallionValidationError(path_name, error["message"])
        raise MedallionError(f"Winni answered HTTP {response.status_code}: {error['message']}")

    def create(self, medallion: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", "medallions/", json=medallion).json()

    def update(self, medallion: dict[str, Any]) -> dict[str, Any]:
        medallion_id = str(((medallion or {}).get("meta") or {}).get("id") or "")
        if not medallion_id:
            raise MedallionNotFoundError("meta.id is missing: which medallion should be updated?")
        return self.request("PUT", f"medallions/{medallion_id}", json=medallion).json()

    def get_by_id(self, medallion_id: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", f"medallions/{medallion_id}").json()
        except MedallionNotFoundError:
            return None

    def get_latest_for_scope(self, scope: Scope, limit: int = 3, status: str | None = "active") -> list[dict[str, Any]]:
        scope = check_scope(scope)
        params = {"graph_nodes": scope["graph_nodes"], "tags": scope["tags"], "limit": limit,
                  "status": status or "any"}
        return self.request("GET", "medallions/", params=params).json()["medallions"]

    def history(self, medallion_id: str) -> list[dict[str, Any]]:
        revisions = self.request("GET", f"medallions/{medallion_id}/history").json()["revisions"]
        return [revision["document"] for revision in revisions]
