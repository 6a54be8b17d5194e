"""core.timeexpr: time expressions in a query → a half-open UTC range relative to as_of, an
order intent, or nothing. Pure (no database). The phrasings are the labelled set the parser was
chosen with (core/timeexpr.py); as_of is a Wednesday afternoon."""
from datetime import datetime, timedelta, timezone

import pytest

from core.timeexpr import TimeFilter, asks_for_order, parse_time_filter

AS_OF = datetime(2024, 6, 12, 15, 0, tzinfo=timezone.utc)  # a Wednesday


def day(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# (query, start, end, from_text): start ≤ t < end, None = open side.
RANGES = [
    # days
    ("what was yesterday's error", "2024-06-11", "2024-06-12", "yesterday"),
    ("what broke yesterday?", "2024-06-11", "2024-06-12", "yesterday"),
    ("what did I say today about the cache", "2024-06-12", "2024-06-13", "today"),
    ("the deploy 3 days ago", "2024-06-09", "2024-06-10", "3 days ago"),
    ("what did I tell you 10 days ago about the schema", "2024-06-02", "2024-06-03", "10 days ago"),
    ("the day before yesterday we fixed the login bug", "2024-06-10", "2024-06-11", "the day before yesterday"),
    ("this morning's build failure", "2024-06-12", "2024-06-13", "this morning"),
    ("what did we discuss last night", "2024-06-11", "2024-06-12", "last night"),
    ("the message you sent an hour ago", "2024-06-12", "2024-06-13", "an hour ago"),
    ("at 3pm yesterday the worker crashed", "2024-06-11", "2024-06-12", "at 3pm yesterday"),
    # weekdays and weekends: the latest one before today
    ("what did we decide on Monday", "2024-06-10", "2024-06-11", "on Monday"),
    ("what did we change on Friday", "2024-06-07", "2024-06-08", "on Friday"),
    ("notes from last Tuesday's meeting", "2024-06-11", "2024-06-12", "last Tuesday"),
    ("Tuesday afternoon's outage", "2024-06-11", "2024-06-12", "Tuesday afternoon"),
    ("what broke over the weekend", "2024-06-08", "2024-06-10", "over the weekend"),
    ("last weekend's migration", "2024-06-08", "2024-06-10", "last weekend"),
    ("this past weekend we moved the DNS", "2024-06-08", "2024-06-10", "this past weekend"),
    # weeks (Monday to Monday) and rolling windows
    ("what did we decide last week", "2024-06-03", "2024-06-10", "last week"),
    ("what did we decide about the schema last week?", "2024-06-03", "2024-06-10", "last week"),
    ("what changed this week", "2024-06-10", "2024-06-17", "this week"),
    ("the week before last", "2024-05-27", "2024-06-03", "the week before last"),
    ("the refactor two weeks ago", "2024-05-27", "2024-06-03", "two weeks ago"),
    ("a couple of weeks ago we talked about caching", "2024-05-27", "2024-06-03", "a couple of weeks ago"),
    ("the bugs we found in the past week", "2024-06-05", None, "in the past week"),
    ("in the last 3 days", "2024-06-09", None, "in the last 3 days"),
    ("errors over the past two weeks", "2024-05-29", None, "over the past two weeks"),
    # months, quarters, years
    ("what did we ship last month", "2024-05-01", "2024-06-01", "last month"),
    ("earlier this month we dropped Python 3.9", "2024-06-01", "2024-07-01", "this month"),
    ("six months ago", "2023-12-01", "2024-01-01", "six months ago"),
    ("in March", "2024-03-01", "2024-04-01", "in March"),
    ("what did we plan in March 2023", "2023-03-01", "2023-04-01", "in March 2023"),
    ("back in January we chose Postgres", "2024-01-01", "2024-02-01", "in January"),
    ("the incident in December", "2023-12-01", "2024-01-01", "in December"),
    ("what did we do in May", "2024-05-01", "2024-06-01", "in May"),
    ("in mid-May", "2024-05-01", "2024-06-01", "in mid-May"),
    ("Q1 2024 roadmap decisions", "2024-01-01", "2024-04-01", "Q1 2024"),
    ("earlier this year", "2024-01-01", "2025-01-01", "this year"),
    ("what went wrong last year", "2023-01-01", "2024-01-01", "last year"),
    ("decisions made in 2023", "2023-01-01", "2024-01-01", "in 2023"),
    # dates
    ("on March 5th", "2024-03-05", "2024-03-06", "on March 5th"),
    ("what happened on May 14, 2024", "2024-05-14", "2024-05-15", "on May 14, 2024"),
    ("the log from 2024-05-14", "2024-05-14", "2024-05-15", "from 2024-05-14"),
    ("what did we say on 5/14", "2024-05-14", "2024-05-15", "on 5/14"),
    ("on the 3rd", "2024-06-03", "2024-06-04", "on the 3rd"),
    # open ranges
    ("since the 3rd", "2024-06-03", None, "since the 3rd"),
    ("what changed since Monday", "2024-06-10", None, "since Monday"),
    ("everything since last week", "2024-06-03", None, "since last week"),
    ("since January", "2024-01-01", None, "since January"),
    ("commits after May 1", "2024-05-02", None, "after May 1"),
    ("before 2024", None, "2024-01-01", "before 2024"),
    ("what did we use before March", None, "2024-03-01", "before March"),
    ("until last Friday", None, "2024-06-08", "until last Friday"),
    ("prior to June 1st", None, "2024-06-01", "prior to June 1st"),
    # two ends
    ("between May and July", "2024-05-01", "2024-08-01", "between May and July"),
    ("between March and May", "2024-03-01", "2024-06-01", "between March and May"),
    ("between June 1 and June 5", "2024-06-01", "2024-06-06", "between June 1 and June 5"),
    ("from Monday to Wednesday", "2024-06-10", "2024-06-13", "from Monday to Wednesday"),
    ("from last Monday until yesterday", "2024-06-10", "2024-06-12", "from last Monday until yesterday"),
    # the future is read as written; recall decides what a range after as_of means
    ("what is planned for next week", "2024-06-17", "2024-06-24", "next week"),
]

NO_TIME = [
    "why does the request time out",
    "the second test fails on CI",
    "May I see the deployment config?",
    "march through the list of open issues",
    "can we march forward with the plan",
    "we may need to sec the headers",
    "fix date parsing in the importer",
    "upgrade to Python 3.11",
    "release notes for version 2024.1",
    "run it 3 times and compare",
    "the last test in the suite is flaky",
    "first commit of the repo",
    "set the timeout to 30 seconds",
    "increase the TTL to 7 days",
    "the cache expires after 24 hours",
    "how do we handle daylight saving time",
    "port 8000 is already in use",
    "use the now() function in SQL",
    "step 3/4 of the migration fails",
    "the 4th column is wrong",
    "PR 2023 broke the build",
    "the Monday.com integration",
    "the sun and moon icons in dark mode",
    "a 2-day workshop agenda",
    "what does the second argument mean",
    "one more time please",
    "first and last name fields",
    "the weekly report format",
    "rate limit of 60 requests per hour",
    "set epoch to 1970",
    "what is the rotation for the support team on a Sunday?",
]


@pytest.mark.parametrize(("query", "start", "end", "phrase"), RANGES, ids=[r[0] for r in RANGES])
def test_a_time_expression_becomes_a_half_open_utc_range(query, start, end, phrase):
    found = parse_time_filter(query, AS_OF)
    assert found is not None and found.kind == "range"
    assert (found.start, found.end) == (day(start), day(end))
    assert found.from_text == phrase
    assert phrase in query
    for bound in (found.start, found.end):
        assert bound is None or bound.utcoffset() == timedelta(0)


@pytest.mark.parametrize("query", NO_TIME)
def test_ordinary_words_are_not_read_as_dates(query):
    assert parse_time_filter(query, AS_OF) is None


def test_the_range_is_half_open():
    found = parse_time_filter("what broke yesterday", AS_OF)
    assert found.contains(datetime(2024, 6, 11, 0, 0, tzinfo=timezone.utc))
    assert found.contains(datetime(2024, 6, 11, 23, 59, 59, tzinfo=timezone.utc))
    assert not found.contains(datetime(2024, 6, 12, 0, 0, tzinfo=timezone.utc))
    assert not found.contains(datetime(2024, 6, 10, 23, 59, tzinfo=timezone.utc))
    assert found.contains(datetime(2024, 6, 11, 12, 0))  # naive = UTC
    since = parse_time_filter("since Monday", AS_OF)
    assert since.contains(datetime(2030, 1, 1, tzinfo=timezone.utc))


def test_days_are_those_of_as_ofs_time_zone():
    berlin_summer = timezone(timedelta(hours=2))
    just_after_midnight = datetime(2024, 6, 12, 0, 30, tzinfo=berlin_summer)
    found = parse_time_filter("yesterday", just_after_midnight)
    assert (found.start, found.end) == (datetime(2024, 6, 10, 22, tzinfo=timezone.utc),
                                        datetime(2024, 6, 11, 22, tzinfo=timezone.utc))
    naive = parse_time_filter("yesterday", datetime(2024, 6, 12, 0, 30))
    assert (naive.start, naive.end) == (day("2024-06-11"), day("2024-06-12"))


def test_relative_expressions_follow_as_of():
    a_year_later = AS_OF.replace(year=2025)
    assert parse_time_filter("last week", a_year_later).start == day("2025-06-02")
    assert parse_time_filter("in March", a_year_later).start == day("2025-03-01")
    # a month not yet reached this year is last year's
    assert parse_time_filter("in December", AS_OF).start == day("2023-12-01")


@pytest.mark.parametrize(("query", "words"), [
    ("which did I do first, the migration or the upgrade?", "first"),
    ("Which tool did we adopt most recently, ruff or black?", "most recently"),
    ("how many days passed between the outage and the fix?", "how many days passed between"),
    ("how many weeks ago did we switch to Postgres?", "how many weeks ago"),
    ("how long ago did we drop Python 3.8?", "how long ago"),
    ("in what order did we ship the three releases?", "in what order"),
    ("list the deploys from earliest to latest", "earliest to latest"),
])
def test_a_question_about_order_asks_for_chronological_hits(query, words):
    assert asks_for_order(query).lower() == words.lower()
    found = parse_time_filter(query, AS_OF)
    assert found == TimeFilter(None, None, found.from_text, "order", True)


def test_a_range_can_come_with_an_order():
    found = parse_time_filter("what is the order of the deploys we did in the past two months?", AS_OF)
    assert (found.kind, found.order, found.start, found.end) == ("range", True, day("2024-04-12"), None)
    plain = parse_time_filter("what did we deploy in the past two months?", AS_OF)
    assert (plain.kind, plain.order) == ("range", False)


@pytest.mark.parametrize(("query", "word"), [("in Q3", "Q3"), ("last quarter", "quarter"),
                                             ("last Christmas", "Christmas"), ("last summer", "summer")])
def test_a_time_word_without_a_readable_range_is_reported_unread(query, word):
    assert parse_time_filter(query, AS_OF) == TimeFilter(None, None, word, "unread")


@pytest.mark.parametrize("query", ["", "   ", "99999999999 days ago", "in the past 999999999 years",
                                   "since 0000-00-00", "before 9999", "between and", "the 31st of February",
                                   "yesterday" * 200, "😀 " * 50])
def test_odd_input_never_raises(query):
    found = parse_time_filter(query, AS_OF)
    assert found is None or found.kind in ("range", "order", "unread")
