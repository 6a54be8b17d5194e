"""Time expressions in a search query: "what did we decide last week" → the range
[Monday of last week, Monday of this week), relative to `as_of` (the question's "now").

dateparser (`search_dates`, with the period of each date it finds) does the reading. The glue here
does only what a search filter needs and dateparser does not give:

- a range from a point and its period (day, week, month, quarter, year; a time of day counts as
  its day), half-open [start, end);
- direction words around the phrase: since/after → open end, before/until/prior to → open start;
  two phrases joined as "between A and B" / "from A to B" → one range;
- rolling windows ("in the past two weeks", "the last 3 days", "the past week"), weekends, and a
  day of the month alone ("since the 3rd"), which dateparser reads as March;
- a gate against dateparser's false positives on ordinary words ("we" is read as Wednesday,
  "May I", "march through", "version 2024.1", "step 3/4", "7 days" as a duration): a phrase
  counts only when it holds a time word, and ambiguous ones (May, March, a bare year, 3/4,
  the 4th) only after a preposition or next to another date part;
- whether the query asks for an order or for elapsed time ("which did I do first", "how many
  days between"): then hits should come back in chronological order, with their dates.

Calendar days are those of as_of's time zone (a naive as_of is UTC); start and end come back in
UTC. dateparser was chosen after comparing it with parsedatetime, timefhuman, ctparse and
Microsoft Recognizers-Text on the same phrases: it gives each date's period, which is what makes a
range, and is maintained."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from dateparser import parse as dateparser_parse
from dateparser.search import search_dates

__all__ = ["TimeFilter", "asks_for_order", "parse_time_filter"]

DAY = timedelta(days=1)
SETTINGS_BASE = {"PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}


@dataclass(frozen=True)
class TimeFilter:
    """What the query says about time.

    kind "range": start ≤ t < end, in UTC, None = open on that side; from_text is the phrase as
    written ("last week"). kind "order": no range, but the query asks for an order or for the time
    between events ("which did I do first", "how many days between"); from_text holds those words.
    kind "unread": the query holds a time word the parser could not turn into a range ("in Q3");
    from_text is that word, to be reported as ignored. order: the hits belong in chronological
    order with their dates (always True for kind "order", possible with a range)."""

    start: datetime | None
    end: datetime | None
    from_text: str
    kind: Literal["range", "order", "unread"]
    order: bool = False

    def contains(self, moment: datetime) -> bool:
        """moment (naive = UTC) falls in the range; always True unless kind is "range"."""
        moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


# --- query wording -------------------------------------------------------------------------------

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME_WORDS = ("yesterday|today|tonight|tomorrow|ago|morning|afternoon|evening|night|noon|midnight|"
               "week|weeks|month|months|year|years|quarter|fortnight")
# Words that make an ambiguous token (May, a bare year, 3/4, the 4th) a date.
_DATE_CONTEXT = {"in", "on", "since", "before", "after", "until", "till", "during", "by", "from", "of", "between",
                 "and", "to", "through", "early", "late", "mid", "last", "this", "next", "prior", "around", "at"}
_TOKEN = re.compile(
    rf"(?P<word>\b(?:{_TIME_WORDS}|{_WEEKDAYS})\b(?![.\-]\w))"
    rf"|(?P<month>\b(?:{_MONTHS})\b)"
    r"|(?P<abbr>\b(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?(?=\s*\d))"
    r"|(?P<iso>\b\d{4}-\d{1,2}-\d{1,2}\b)"
    r"|(?P<clock>\b\d{1,2}(?::\d\d)?\s*(?:am|pm)\b)"
    r"|(?P<quarter>\bq[1-4]\b)"
    r"|(?P<numeric>\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b)"
    r"|(?P<ordinal>\b\d{1,2}(?:st|nd|rd|th)\b)"
    r"|(?P<year>\b(?:19|20)\d\d\b(?![.\-/]\d))",
    re.IGNORECASE,
)
_AMBIGUOUS = {"numeric", "ordinal", "year"}
# _TOKEN's words, for a first look at a query: _TOKEN itself takes ≈ 0.4 ms to find nothing in a
# plain question (its many alternatives tried at every position), a set of its words a few µs.
_TOKEN_WORDS = frozenset(f"{_TIME_WORDS}|{_WEEKDAYS}|{_MONTHS}".split("|"))
_ANY_WORD = re.compile(r"\w+")
_ANY_DIGIT = re.compile(r"\d")
_NUMBER = r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_UNIT = r"(?:second|minute|hour|day|week|month|year)s?"
_DURATION = re.compile(rf"(?:{_NUMBER})\s+{_UNIT}", re.IGNORECASE)
_FILLER = r"the|from|in|on|at|for|over|of|about|after|before|since|until|within|we|and|during"
_TRAILING = _FILLER + r"|an?"  # "September 2022 a good month": the "a" is not the 1st
# Rewrites into words dateparser reads. Offsets are mapped back, so from_text is the user's words.
_REWRITES = [
    (re.compile(r"(?<=\w)['’]s\b"), ""),
    (re.compile(r"\bthe day before yesterday\b", re.IGNORECASE), "2 days ago"),
    (re.compile(r"\bthe week before last\b", re.IGNORECASE), "2 weeks ago"),
    (re.compile(r"\ba couple of\b|\ba couple\b", re.IGNORECASE), "2"),
    (re.compile(r"\ba few\b|\bseveral\b", re.IGNORECASE), "3"),
    (re.compile(rf"\b(?:early|mid|late)[\s-]+(?=(?:{_MONTHS})\b)", re.IGNORECASE), ""),  # the whole month
]
_ROLLING = re.compile(
    rf"\b(?:(?:in|over|during|for|within)\s+)?(?:the\s+)?(?P<which>past|last|previous)\s+"
    rf"(?:(?P<count>{_NUMBER})\s+)?(?P<unit>day|week|month|year)s?\b", re.IGNORECASE)
_WEEKEND = re.compile(r"\b(?:(?:over|during|on)\s+)?(?:(?:this\s+)?past\s+|last\s+|the\s+|this\s+)?weekend\b",
                      re.IGNORECASE)
_ORDINAL_ONLY = re.compile(r"^(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)$", re.IGNORECASE)
_JOINERS = {"and", "to", "until", "till", "through", "-", "and the", "to the"}

# Time words that say the query meant a time even when no range could be read from it.
_UNREAD = re.compile(r"\b(?:yesterday|today|tonight|ago|fortnight|quarter|q[1-4]|summer|winter|christmas|easter)\b",
                     re.IGNORECASE)
# A question about order or elapsed time (the answer needs the hits' dates, in order).
_ORDER = re.compile(
    r"\b(?:in\s+(?:what|which)\s+order|the\s+order\s+of|order\s+(?:of|in\s+which)|chronolog\w*"
    r"|(?:earliest|latest)\s+to\s+(?:earliest|latest)|starting\s+(?:from|with)\s+the\s+(?:earliest|latest)"
    r"|how\s+(?:many|much)\s+(?:days|weeks|months|years|hours|time)\b[^?]*\b(?:between|since|before|after|passed|ago|elapsed|until|when)"
    r"|how\s+long\s+(?:ago|had|have|since|before|after)\b"
    r"|\b(?:first|last|earlier|later|most\s+recently)(?=\s*(?:[,?]|$|or\b)))",
    re.IGNORECASE,
)


def asks_for_order(query: str) -> str | None:
    """The words that ask for an order or for time between events, or None."""
    match = _ORDER.search(query)
    return match.group(0) if match else None


def parse_time_filter(query: str, as_of: datetime) -> TimeFilter | None:
    """What the query's time expression names, relative to as_of (see TimeFilter); None when it
    names no time and asks for no order. Never raises on the query's wording."""
    local_tz = as_of.tzinfo or timezone.utc
    base = as_of.replace(tzinfo=None)
    order_words = asks_for_order(query)
    found = _find_range(query, base)
    if found is not None:
        start, end, text = found

        def utc(value: datetime | None) -> datetime | None:
            return None if value is None else value.replace(tzinfo=local_tz).astimezone(timezone.utc)

        return TimeFilter(utc(start), utc(end), text, "range", order_words is not None)
    if order_words:
        return TimeFilter(None, None, order_words, "order", True)
    unread = _UNREAD.search(query)
    return TimeFilter(None, None, unread.group(0), "unread") if unread else None


# --- the glue ------------------------------------------------------------------------------------


@dataclass
class _Span:
    start: int  # offsets in the original query
    end: int
    lo: datetime | None
    hi: datetime | None
    period: str = "day"


def _names_a_date(query: str) -> bool:
    """Whether the query holds one of _TOKEN's time words or date shapes, without which no phrase
    dateparser finds counts (_holds_date). Every date shape _TOKEN reads holds a digit, every other
    token is a whole word of _TOKEN_WORDS; a query that is not ASCII (case folding beyond
    str.lower) goes to _TOKEN itself."""
    if not query.isascii() or _ANY_DIGIT.search(query):
        return _TOKEN.search(query) is not None
    return not _TOKEN_WORDS.isdisjoint(_ANY_WORD.findall(query.lower())) and _TOKEN.search(query) is not None


def _find_range(query: str, base: datetime) -> tuple[datetime | None, datetime | None, str] | None:
    own = _own_spans(query, base)
    spans = []
    # A phrase dateparser finds counts only when it holds one of _TOKEN's time words or date shapes
    # (_holds_date), so a query without any is not given to it: most queries name no time, and
    # dateparser's search costs ≈ 1 ms on a plain question (15-20 ms with "last week").
    if _names_a_date(query):
        text, origin = _rewrite(query)
        spans = [span for span in _dateparser_spans(query, text, origin, base)
                 if not any(span.start < other.end and other.start < span.end for other in own)]
    spans = sorted(own + spans, key=lambda span: span.start)
    if not spans:
        return None
    for first, second in zip(spans, spans[1:]):
        joined = _pair(query, first, second)
        if joined:
            return joined
    # One phrase, or the union of several ("yesterday or the day before"): a range that keeps what
    # any of them names.
    directions = [_direction(query, span) for span in spans]
    ranges = [_directed(span, direction) for span, direction in zip(spans, directions)]
    lows, highs = [lo for lo, _ in ranges], [hi for _, hi in ranges]
    # Open on a side when any phrase is open there.
    known_lows, known_highs = [lo for lo in lows if lo is not None], [hi for hi in highs if hi is not None]
    lo = min(known_lows) if len(known_lows) == len(lows) else None
    hi = max(known_highs) if len(known_highs) == len(highs) else None
    start = _lead(query, spans[0].start) if directions[0] else spans[0].start
    return lo, hi, _phrase(query, start, spans[-1].end)


def _own_spans(query: str, base: datetime) -> list[_Span]:
    """Rolling windows and weekends, which dateparser does not read as ranges."""
    spans = []
    for match in _ROLLING.finditer(query):
        count, which = match.group("count"), match.group("which").lower()
        if count is None and which == "last":
            continue  # "last week" is the calendar week: dateparser's
        point = _parse(f"{count or 1} {match.group('unit')} ago", base)
        if point is not None:
            spans.append(_Span(match.start(), match.end(), _day(point), None, "rolling"))
    for match in _WEEKEND.finditer(query):
        today = _day(base)
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        words = match.group(0).lower()
        if "last" in words and today.weekday() >= 5:
            saturday -= timedelta(days=7)
        if "this" in words and "past" not in words and today.weekday() < 5:
            saturday += timedelta(days=7)  # the coming one
        spans.append(_Span(match.start(), match.end(), saturday, saturday + 2 * DAY, "weekend"))
    return spans


def _rewrite(query: str) -> tuple[str, list[tuple[int, int]]]:
    """The query with _REWRITES applied, and for each of its characters the original span."""
    text, origin = query, [(i, i + 1) for i in range(len(query))]
    for pattern, replacement in _REWRITES:
        pieces, mapped, last = [], [], 0
        for match in pattern.finditer(text):
            pieces.append(text[last:match.start()])
            mapped += origin[last:match.start()]
            source = (origin[match.start()][0], origin[match.end() - 1][1])
            pieces.append(replacement)
            mapped += [source] * len(replacement)
            last = match.end()
        pieces.append(text[last:])
        mapped += origin[last:]
        text, origin = "".join(pieces), mapped
    return text, origin


def _search(text: str, base: datetime) -> list[tuple[str, datetime, str | None]]:
    try:
        return search_dates(text, languages=["en"], add_period=True,
                            settings={**SETTINGS_BASE, "RELATIVE_BASE": base}) or []
    except (ValueError, OverflowError, TypeError):
        return []


def _dateparser_spans(query: str, text: str, origin: list[tuple[int, int]], base: datetime) -> list[_Span]:
    found = _search(text, base)
    spans, cursor = [], 0
    for matched, point, period in found:
        where = re.compile(r"\s+".join(map(re.escape, matched.split())), re.IGNORECASE).search(text, cursor)
        if where is None:
            continue
        cursor = where.end()
        start, end = origin[where.start()][0], origin[where.end() - 1][1]
        core = re.sub(rf"^(?:(?:{_FILLER})\s+)+|(?:\s+(?:{_TRAILING}))+$", "",
                      matched.strip(" ,.?!"), flags=re.IGNORECASE)
        if _DURATION.fullmatch(core) or not _holds_date(query, start, end):
            continue  # "7 days" is a length, not a time; "we" is not Wednesday
        if core != matched.strip(" ,.?!"):
            # Words around the date can change its reading ("September 2022 a good month": "a" = the 1st).
            again = _search(core, base)
            if len(again) == 1:
                point, period = again[0][1], again[0][2]
        ordinal = _ORDINAL_ONLY.match(core)
        if ordinal:
            lo = _day_of_month(int(ordinal.group(1)), base)
            if lo is None:
                continue
            spans.append(_Span(start, end, lo, lo + DAY))
            continue
        period = {"time": "day", "part_of_day": "day"}.get(period or "day", period or "day")
        lo, hi = _unit(point, period)
        spans.append(_Span(start, end, lo, hi, period))
    return spans


def _holds_date(query: str, start: int, end: int) -> bool:
    for match in _TOKEN.finditer(query):
        if match.start() < start or match.end() > end:
            continue
        kind, token = match.lastgroup, match.group(0).lower()
        if kind == "word" and re.search(r"\b(?:a|every|each)\s+$", query[:match.start()], re.IGNORECASE):
            continue  # "on a Sunday", "every Monday": no particular day
        if kind in ("word", "abbr", "iso", "clock", "quarter") or (kind == "month" and token not in ("may", "march")):
            return True
        if kind in _AMBIGUOUS or kind == "month":  # (May and March are the ambiguous months)
            words = re.findall(r"[\w']+", query[:match.start()].lower())
            while words and words[-1] in ("the", "a"):
                words.pop()
            if words and words[-1] in _DATE_CONTEXT and (
                    words[-1] not in _JOINERS or re.search(r"\b(?:between|from)\b", query[:match.start()], re.I)):
                return True  # "and 2023", "to 1970" only as the second half of between/from
            if re.match(rf"\s*(?:\d|of\s+(?:{_MONTHS}))", query[match.end():match.end() + 14], re.IGNORECASE):
                return True
    return False


def _pair(query: str, first: _Span, second: _Span) -> tuple[datetime | None, datetime | None, str] | None:
    """between A and B / from A to B → [A's start, B's end)."""
    joiner = query[first.end:second.start].strip().lower()
    lead = query[max(0, first.start - 9):first.start + 8].lower()
    if joiner not in _JOINERS or not re.search(r"\b(?:between|from)\b", lead) or first.lo is None:
        return None
    hi = second.hi
    # "between May and July" with dates from the past: July came out a year before May.
    step = 7 * DAY if second.period == "day" else timedelta(days=365)
    for _ in range(2):
        if hi is not None and hi <= first.lo:
            hi = _unit(hi - DAY + step, second.period)[1] if second.period != "day" else hi + step
    return first.lo, hi, _phrase(query, _lead(query, first.start), second.end)


_DIRECTION_WORDS = {"since": "since", "after": "after", "before": "before", "prior": "before", "until": "until",
                    "till": "until", "up": "until"}
_DIRECTION = re.compile(r"\b(since|after|before|until|till|prior\s+to|up\s+to)\s+(?:\w+\s+)?\x00"
                        r"|\x00\s*(since|after|before|until|till|prior\s+to)\b", re.IGNORECASE)


def _direction(query: str, span: _Span) -> str | None:
    """since/after/before/until, written just before the phrase (one word may sit between) or as
    its first word (dateparser keeps "after" in "after May 1")."""
    around = query[max(0, span.start - 16):span.start] + "\x00" + query[span.start:span.end]
    match = _DIRECTION.search(around)
    return _DIRECTION_WORDS[(match.group(1) or match.group(2)).split()[0].lower()] if match else None


def _lead(query: str, start: int) -> int:
    """Where the phrase starts once the direction word before it is counted ("since the 3rd")."""
    match = re.search(r"\b(?:since|after|before|until|till|prior\s+to|up\s+to|between|from)\s+$",
                      query[:start], re.IGNORECASE)
    return match.start() if match else start


def _directed(span: _Span, direction: str | None) -> tuple[datetime | None, datetime | None]:
    if direction == "since":
        return span.lo, None
    if direction == "after":
        return span.hi, None
    if direction == "before":
        return None, span.lo
    if direction == "until":
        return None, span.hi
    return span.lo, span.hi


def _phrase(query: str, start: int, end: int) -> str:
    text = query[start:end]
    text = re.sub(rf"(?:\s+(?:{_TRAILING}))+$", "", text.strip(" ,.?!"), flags=re.IGNORECASE)
    return text.strip()


def _parse(text: str, base: datetime) -> datetime | None:
    try:
        parsed: datetime | None = dateparser_parse(text, languages=["en"],
                                                   settings={**SETTINGS_BASE, "RELATIVE_BASE": base})
        return parsed
    except (ValueError, OverflowError, TypeError):
        return None


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _day_of_month(number: int, base: datetime) -> datetime | None:
    """"the 3rd": that day of this month, or of the last month that has it, if still to come."""
    year, month = base.year, base.month
    for _ in range(3):
        try:
            candidate = datetime(year, month, number)
        except ValueError:
            candidate = None
        if candidate is not None and candidate <= base:
            return candidate
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    return None


def _unit(point: datetime, period: str) -> tuple[datetime, datetime]:
    """The period (dateparser's: day, week, month, quarter, year) holding point."""
    day = _day(point)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + 7 * DAY
    if period in ("month", "quarter"):
        start = day.replace(day=1, month=day.month if period == "month" else (day.month - 1) // 3 * 3 + 1)
        end = start
        for _ in range(1 if period == "month" else 3):
            end = (end + 32 * DAY).replace(day=1)
        return start, end
    if period == "year":
        return day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    return day, day + DAY
