"""The server's own MedallionStore (winni_client's interface over medallions.services), so one
contract test suite runs against it, the REST store and the SQLite store alike."""
from __future__ import annotations

from typing import Any

from core.errors import InvalidInput, NotFound, PayloadTooLarge
from medallions import services
from winni_client.schema import MedallionNotFoundError, MedallionValidationError
from winni_client.store import MedallionStore, Scope


def _validation_error(exc: InvalidInput | PayloadTooLarge) -> MedallionValidationError:
    return MedallionValidationError(exc.field or "medallion", exc.message)


class DjangoMedallionStore(MedallionStore):
    def __init__(self, *, actor: str = "") -> None:
        self.actor = actor

    def create(self, medallion: dict[str, Any]) -> dict[str, Any]:
        try:
            return services.medallion_create(document=medallion, actor=self.actor).document()
        except (InvalidInput, PayloadTooLarge) as exc:
            raise _validation_error(exc) from None

    def update(self, medallion: dict[str, Any]) -> dict[str, Any]:
        medallion_id = ((medallion or {}).get("meta") or {}).get("id")
        try:
            return services.medallion_update(medallion_id=medallion_id, document=medallion,
                                             actor=self.actor).document()
        except NotFound as exc:
            raise MedallionNotFoundError(exc.message) from None
        except (InvalidInput, PayloadTooLarge) as exc:
            raise _validation_error(exc) from None

    def get_by_id(self, medallion_id: str) -> dict[str, Any] | None:
        try:
            return services.medallion_get(medallion_id=medallion_id).document()
        except NotFound:
            return None

    def get_latest_for_scope(self, scope: Scope, limit: int = 3, status: str | None = "active") -> list[dict[str, Any]]:
        try:
            found = services.medallions_latest_for_scope(scope=scope, limit=limit, status=status)
        except InvalidInput as exc:
            raise _validation_error(exc) from None
        return [medallion.document() for medallion in found]

    def history(self, medallion_id: str) -> list[dict[str, Any]]:
        return [revision.document for revision in services.medallion_history(medallion_id=medallion_id)]
