"""Winni's framework-agnostic medallion client: standard library + httpx, no Django.

    from winni_client import WinniClient
    winni = WinniClient("http://127.0.0.1:9020", token)
    context = winni.load_as_text({"graph_nodes": ["repo:muse"], "tags": []})
    ...
    winni.checkpoint_session({"graph_nodes": ["repo:muse"], "tags": []}, {"session_summary": "..."})
"""
from winni_client.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    MedallionError,
    MedallionNotFoundError,
    MedallionValidationError,
    validate,
)
from winni_client.session import CheckpointError, WinniClient, checkpoint_session, load_medallions_for_scope
from winni_client.store import MedallionStore, RestMedallionStore, SQLiteMedallionStore

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "CheckpointError", "MedallionError", "MedallionNotFoundError", "MedallionStore",
    "MedallionValidationError", "RestMedallionStore", "SQLiteMedallionStore", "WinniClient", "checkpoint_session",
    "load_medallions_for_scope", "validate",
]
