"""Time in a search (issue #22): what a query's time words say (core.timeexpr, read relative to
`as_of`, the question's "now"), and an optional recency half-life, applied the same way by every
search that ranks (winni_recall, dewey_search, search_memory).

- A range the query names ("last week", "in March", "before 2024") is a **boost**, not a filter:
  hits dated inside it weigh RANGE_BOOST more, hits near it a part of that (halving with each
  half-range of distance). Measured on LongMemEval, a hard filter from the
  question's words lost answers (the evidence is often dated outside the words' literal range:
  "last month" said weeks later); a boost keeps them reachable.
- A question that asks for an order or for the time between events ("which did I do first, A or
  B", "how many days between A and B") gets, in `time_filter.timeline`, its best ORDER_WINDOW hits
  oldest first with their dates; the results keep their rank order. Measured on LongMemEval
  (2026-11-24): sorting the results themselves by date, or searching each event on its own and
  interleaving the hits, lost evidence from the top of the list.
- `recency` (a half-life in days, off by default): a hit that old counts half, twice that a
  quarter, measured back from as_of.
- A time word the parser cannot read ("in Q3") is ignored and the result says so; never an error.

The result of every such search carries `time_filter` (see TimePlan.report)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

from core.timeexpr import TimeFilter, parse_time_filter
from core.validation import parse_as_of, validate_recency

T = TypeVar("T")
RANGE_BOOST = 0.5
PROXIMITY_MIN_DAYS = 2.0
PROXIMITY_OPEN_DAYS = 7.0
# When time reorders the hits, each search asks for this many times the page, so a hit just past
# the page can move up.
DEPTH_FACTOR = 3
# An order question's best hits, listed oldest first in time_filter.timeline.
ORDER_WINDOW = 10
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]{2,}")


@dataclass(frozen=True)
class TimePlan:
    as_of: datetime
    found: TimeFilter | None
    recency: float | None
    as_of_given: bool = False

    @property
    def boosts(self) -> bool:
        """A range or a recency half-life reweighs the hits."""
        return (self.found is not None and self.found.kind == "range") or self.recency is not None

    @property
    def order(self) -> bool:
        return self.found is not None and self.found.order

    def weight(self, created: datetime | None) -> float:
        if created is None:
            return 1.0
        weight = 1.0
        if self.found is not None and self.found.kind == "range":
            weight *= 1 + RANGE_BOOST * self._closeness(created)
        if self.recency is not None:
            age_days = max(0.0, (self.as_of - created).total_seconds() / 86400)
            weight *= 0.5 ** (age_days / self.recency)
        return weight

    def _closeness(self, created: datetime) -> float:
        """1 inside the named range; outside, halving every `h` days of distance, where h is half
        the range's length (at least PROXIMITY_MIN_DAYS; open ranges: PROXIMITY_OPEN_DAYS): people
        say "a week ago" of something eight days back."""
        found = self.found
        assert found is not None
        moment = created if created.tzinfo else created.replace(tzinfo=timezone.utc)
        if found.contains(moment):
            return 1.0
        if found.start is not None and moment < found.start:
            distance = (found.start - moment).total_seconds() / 86400
        else:
            distance = (moment - found.end).total_seconds() / 86400 if found.end is not None else 0.0
        if found.start is not None and found.end is not None:
            half_life = max(PROXIMITY_MIN_DAYS, (found.end - found.start).total_seconds() / 86400 / 2)
        else:
            half_life = PROXIMITY_OPEN_DAYS
        return float(0.5 ** (distance / half_life))  # float ** float is typed Any (a negative base gives complex)

    def report(self, timeline: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """What the search did with time: None when the query named none and no recency was asked.
        `timeline` (an order question's best hits oldest first, see timeline()) is included."""
        if self.found is None and self.recency is None:
            return None
        found = self.found
        used: list[str] = []
        if found is not None and found.kind == "range":
            used.append("boost")
        if self.order:
            used.append("order")
        if self.recency is not None:
            used.append("recency")
        message = {
            "range": "hits dated in or near this range rank higher (a boost, not a filter)",
            "order": "asked for an order: the best hits oldest first are in timeline",
            "unread": f"could not read a date from {found.from_text!r}: ignored, searched without it"
                      if found is not None else "",
        }.get(found.kind if found is not None else "", "")
        if found is not None and found.kind == "range" and found.order:
            message += "; asked for an order: the best hits oldest first are in timeline"
        return {
            "start": found.start.isoformat() if found is not None and found.start else None,
            "end": found.end.isoformat() if found is not None and found.end else None,
            "from_text": found.from_text if found is not None else None,
            "kind": found.kind if found is not None else None,
            "as_of": self.as_of.isoformat(),
            "recency_half_life_days": self.recency,
            "used": used or ["ignored"],
            "message": message or "newer hits rank higher",
            "timeline": timeline if self.order else None,
        }


def plan(query: str, *, as_of: Any = None, recency: Any = None) -> TimePlan:
    """Validate as_of (ISO 8601, else an error naming as_of) and recency (> 0 days, else an error
    naming recency), and read the query's time words relative to as_of (never an error)."""
    moment = parse_as_of(as_of)
    half_life = validate_recency(recency)
    try:
        found = parse_time_filter(query, moment)
    except Exception:  # the parser is third-party: a query must never fail on its wording
        found = None
    return TimePlan(as_of=moment, found=found, recency=half_life, as_of_given=as_of not in (None, ""))


def without_time_words(query: str, time: TimePlan) -> str:
    """The query without the phrase that named its range ("decisions last week" → "decisions"), for
    searches that need every word to match (dewey_search's full text); the query itself when
    nothing else would be left."""
    found = time.found
    if found is None or found.kind != "range" or not found.from_text or found.from_text not in query:
        return query
    rest = " ".join(query.replace(found.from_text, " ").split())
    return rest if len(_WORD.findall(rest)) >= 1 else query


def reweigh(items: list[T], time: TimePlan, *, score: Callable[[T], float],
            created: Callable[[T], datetime | None]) -> list[T]:
    """`items` best first by score × the plan's weight (stable for equal values)."""
    if not time.boosts:
        return items
    return sorted(items, key=lambda item: -score(item) * time.weight(created(item)))


def timeline(items: list[T], created: Callable[[T], datetime | None], ident: Callable[[T], str]
             ) -> list[dict[str, Any]]:
    """The best ORDER_WINDOW items oldest first, as {id, created_at} (undated ones last)."""
    head = items[:ORDER_WINDOW]
    pairs = [(when, item) for item in head if (when := created(item)) is not None]
    dated = [item for _, item in sorted(pairs, key=lambda pair: pair[0])]
    undated = [item for item in head if created(item) is None]
    return [{"id": ident(item), "created_at": when.isoformat() if (when := created(item)) else None}
            for item in [*dated, *undated]]
