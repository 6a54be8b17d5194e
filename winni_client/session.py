"""Seed 004's session helpers, in two calls for an agent loop (LangGraph or your own):
`load_medallions_for_scope` at session start, `checkpoint_session` at its end or a milestone.

With a Winni server, `WinniClient` runs the checkpoint in Winni's worker (with Winni's LLM
provider). Without one, the generic functions work with any MedallionStore (e.g.
SQLiteMedallionStore) and any object with the MedallionLLM methods `generate(scope, evidence)` and
`update(existing, new_evidence)` returning the medallion sections as a dict."""
from __future__ import annotations

import time
from typing import Any, Protocol

import httpx

from winni_client.schema import MedallionError
from winni_client.store import MedallionStore, RestMedallionStore, Scope, check_scope


class MedallionLLM(Protocol):
    def generate(self, scope: Scope, evidence: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, existing: dict[str, Any], new_evidence: dict[str, Any]) -> dict[str, Any]: ...


class CheckpointError(MedallionError):
    def __init__(self, *, scope: Scope, operation: str, cause: str) -> None:
        self.scope, self.operation, self.cause = scope, operation, cause
        super().__init__(f"{operation} of the medallion for scope {scope} failed: {cause}")


def load_medallions_for_scope(store: MedallionStore, scope: Scope, limit: int = 3) -> list[dict[str, Any]]:
    return store.get_latest_for_scope(scope, limit=limit)


def _same_scope(a: Scope, b: Scope) -> bool:
    return all(set(a[axis]) == set(b[axis]) for axis in ("graph_nodes", "tags"))


def checkpoint_session(store: MedallionStore, llm: MedallionLLM, scope: Scope,
                       evidence: dict[str, Any]) -> dict[str, Any]:
    """Update the active medallion for exactly this scope (llm.update), else create one
    (llm.generate). An LLM failure stores nothing and raises CheckpointError."""
    scope = check_scope(scope)
    if not (scope["graph_nodes"] or scope["tags"]):
        raise CheckpointError(scope=scope, operation="checkpoint", cause="a checkpoint needs a non-empty scope")
    candidates = store.get_latest_for_scope(scope, limit=100)
    existing = next((m for m in candidates if _same_scope(m["scope"], scope)), None)
    operation = "update" if existing else "generate"
    try:
        sections = llm.update(existing, evidence) if existing else llm.generate(scope, evidence)
    except Exception as exc:  # any provider failure: nothing was written
        raise CheckpointError(scope=scope, operation=operation, cause=str(exc)) from exc
    document = {**sections, "scope": scope}
    if existing:
        document["meta"] = {"id": existing["meta"]["id"], "status": "active"}
        return store.update(document)
    return store.create(document)


class WinniClient:
    """Winni's REST API for an agent loop: the MedallionStore (`.store`) plus the two session calls."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 150.0, http: httpx.Client | None = None) -> None:
        self.http = http or httpx.Client(base_url=base_url.rstrip("/") + "/api/v1/", timeout=timeout,
                                         headers={"Authorization": f"Bearer {token}"})
        self.store = RestMedallionStore(base_url, token, http=self.http)

    def close(self) -> None:
        self.http.close()

    def load_medallions_for_scope(self, scope: Scope, limit: int = 3) -> list[dict[str, Any]]:
        return self.store.get_latest_for_scope(scope, limit=limit)

    def load_as_text(self, scope: Scope, limit: int = 3) -> str:
        """The same medallions as compact markdown, ready for a system prompt."""
        scope = check_scope(scope)
        params = {"graph_nodes": scope["graph_nodes"], "tags": scope["tags"], "limit": limit, "as_text": "true"}
        return self.store.request("GET", "medallions/", params=params).json()["text"] or ""

    def checkpoint_session(self, scope: Scope, evidence: dict[str, Any], *, wait_seconds: int = 0) -> dict[str, Any]:
        """Queue a checkpoint job in Winni; returns the job (with `medallion` once done)."""
        body = {"scope": scope, "evidence": evidence, "wait_seconds": wait_seconds}
        return self.store.request("POST", "medallions/checkpoint", json=body).json()

    def job_status(self, job_id: str) -> dict[str, Any]:
        return self.store.request("GET", f"medallions/jobs/{job_id}").json()

    def wait_for_job(self, job_id: str, *, timeout: float = 120.0, interval: float = 0.5) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job_status(job_id)
            if job["status"] in ("done", "failed") or time.monotonic() >= deadline:
                return job
            time.sleep(interval)
