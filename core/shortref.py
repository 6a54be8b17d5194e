"""Rows named in fewer characters, as git abbreviates a commit: by the first REF_HEX hex digits of
their UUID, or the whole id when another row of the same table starts the same.

Automatic recall's block names each item's source (a turn's conversation, a memory, a medallion)
so the agent can read it whole; the whole id took 28 characters more an item, room the evidence
needs (docs/benchmarks.md, "Short conversation names"). The reads that take an id
(dewey_get_conversation, winni_get) take the short name too (`resolve`)."""
from __future__ import annotations

import re
import uuid
from typing import Any, Sequence

from django.db import connection
from django.db.models import Model, QuerySet

from core.errors import InvalidInput, NotFound
from core.validation import parse_uuid

REF_HEX = 8
_REF = re.compile(r"^[0-9a-f]{8}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _range(ref: str) -> tuple[uuid.UUID, uuid.UUID]:
    return uuid.UUID(ref + "-0000-0000-0000-000000000000"), uuid.UUID(ref + "-ffff-ffff-ffff-ffffffffffff")


def refs(model: type[Model], ids: Sequence[Any]) -> dict[str, str]:
    """Each id of a `model` row → its short name: its first REF_HEX hex digits, or the whole id
    when another row's id starts with them (one query for all); what is not a UUID, as it is."""
    given = {str(pk) for pk in ids if pk}
    wanted = sorted(pk for pk in given if _UUID.match(pk))
    if not wanted:
        return {pk: pk for pk in given}
    lows, highs = zip(*(_range(pk[:REF_HEX]) for pk in wanted))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT x.id::text FROM unnest(%s::uuid[], %s::uuid[], %s::uuid[]) AS x(id, low, high) "
            f"WHERE EXISTS (SELECT 1 FROM {model._meta.db_table} r WHERE r.id BETWEEN x.low AND x.high "
            f"AND r.id <> x.id)", [wanted, list(lows), list(highs)])
        shared = {row[0] for row in cursor.fetchall()}
    return {pk: pk if pk in shared or pk not in wanted else pk[:REF_HEX] for pk in given}


def resolve(rows: QuerySet[Any], value: Any, *, field: str, noun: str) -> uuid.UUID:
    """The id of the row of `rows` that `value` names: its id, or its short name (`refs`). A short
    name no row has is not found; one that more than one row's id starts with is an error asking
    for the whole id (nothing is guessed)."""
    ref = value.strip().lower() if isinstance(value, str) else ""
    if not _REF.match(ref):
        return parse_uuid(value, field=field)
    low, high = _range(ref)
    found = list(rows.filter(pk__gte=low, pk__lte=high).values_list("pk", flat=True)[:2])
    if not found:
        raise NotFound(f"{noun} {ref} not found", field=field)
    if len(found) > 1:
        raise InvalidInput(f"{field} {ref!r} is the start of more than one {noun}'s id: give the whole id",
                           field=field)
    return uuid.UUID(str(found[0]))
