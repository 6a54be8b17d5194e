"""A medallion's part in anchors and stale marks (core.anchors): its decisions and invariants are
items ("decision:<medallion id>:<decision id>", "invariant:<medallion id>:inv-<hash>", the keys
automatic recall gives them) anchored to the files they name; a decision is superseded by its
status (with the replacement, when given, as a new active decision), a revision keeping the old
version."""
from __future__ import annotations

from typing import Any

from core import anchors
from core.errors import NotFound
from medallions import services
from medallions.models import Medallion


def medallions_load(ids: list[Any]) -> list[Medallion]:
    return list(Medallion.objects.filter(pk__in=ids).defer("search_vector"))


def medallion_items(medallions: list[Medallion]) -> list[anchors.Item]:
    found = []
    for medallion in medallions:
        for decision in medallion.decisions or []:
            text = f"{decision.get('statement', '')}\n{decision.get('rationale', '')}"
            found.append(anchors.Item(key=f"decision:{medallion.pk}:{decision.get('id', '')}",
                                      project_id=medallion.project_id, text=text, at=medallion.updated_at))
        for invariant in (medallion.affordances or {}).get("invariants", []):
            found.append(anchors.Item(key=f"invariant:{services.invariant_id(medallion.pk, invariant)}",
                                      project_id=medallion.project_id, text=str(invariant), at=medallion.updated_at))
    return found


def decision_supersede(*, item_id: str, replacement: str | None, actor: str) -> dict[str, Any]:
    """Mark a decision superseded in its medallion (a revision keeps the previous version); the
    replacement, when given, becomes a new active decision beside it."""
    medallion_id, _, decision_id = item_id.partition(":")
    medallion = services.medallion_get(medallion_id=medallion_id)
    document = medallion.document()
    decisions = document.get("decisions") or []
    target = next((d for d in decisions if str(d.get("id")) == decision_id), None)
    if target is None:
        raise NotFound(f"item: medallion {medallion.pk} has no decision {decision_id!r}", field="item")
    target["status"] = "superseded"
    added = None
    if replacement:
        taken = {str(d.get("id")) for d in decisions}
        added = next(f"{decision_id}-r{n}" for n in range(2, 1000) if f"{decision_id}-r{n}" not in taken)
        decisions.append({"id": added, "statement": replacement.strip(),
                          "rationale": f"supersedes {decision_id}", "confidence": target.get("confidence", 0.8),
                          "status": "active"})
    services.medallion_update(medallion_id=medallion.pk, document=document, actor=actor, operation="supersede")
    return {"superseded": True, "medallion_id": str(medallion.pk),
            "replacement": f"decision:{medallion.pk}:{added}" if added else None}
