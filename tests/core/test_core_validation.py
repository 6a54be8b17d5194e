"""core.validation: one parser per shape, shared by every app."""
import datetime as dt
import uuid

import pytest

from core.errors import InvalidInput
from core.validation import parse_date_range, parse_uuid, validate_metadata, validate_query

UTC = dt.timezone.utc


def test_parse_uuid_names_the_field_and_optional_ids_may_be_absent():
    value = uuid.uuid4()
    assert parse_uuid(str(value), field="memory_id") == value
    assert parse_uuid(None, field="memory_id", optional=True) is None
    assert parse_uuid("", field="memory_id", optional=True) is None
    with pytest.raises(InvalidInput, match="memory_id must be a UUID") as error:
        parse_uuid("nope", field="memory_id")
    assert error.value.field == "memory_id"
    with pytest.raises(InvalidInput):
        parse_uuid(None, field="conversation_id")


def test_one_date_rule_a_date_alone_is_the_whole_day_and_start_after_end_is_empty():
    assert parse_date_range("2024-03-01", "2024-03-02") == (
        dt.datetime(2024, 3, 1, tzinfo=UTC), dt.datetime(2024, 3, 3, tzinfo=UTC))
    assert parse_date_range("2024-03-02", "2024-03-02") == (
        dt.datetime(2024, 3, 2, tzinfo=UTC), dt.datetime(2024, 3, 3, tzinfo=UTC))
    # A date-time end is inclusive (the bound returned is exclusive); a naive one is UTC.
    assert parse_date_range(None, "2024-03-01T08:00:00")[1] == dt.datetime(2024, 3, 1, 8, 0, 0, 1, tzinfo=UTC)
    assert parse_date_range("2024-03-01T08:00:00Z", "2024-03-01T08:00:00Z")[0] == dt.datetime(
        2024, 3, 1, 8, tzinfo=UTC)
    # A start after the end is an empty range (issue #24: no schema can say "after").
    for start, end in (("2024-03-05", "2024-03-01"), ("2024-03-02T00:00:01Z", "2024-03-02T00:00:00Z"),
                       ("2024-03-03", "2024-03-02T23:59:59Z")):
        found_start, found_end = parse_date_range(start, end)
        assert found_start >= found_end
    # The last day there is has no exclusive end after it: no upper bound rather than an overflow.
    assert parse_date_range(None, "9999-12-31") == (None, None)
    # Offsets PostgreSQL refuses (beyond ±15:59) are taken to UTC first.
    assert parse_date_range("2024-03-01T10:00:00-22:30", None)[0] == dt.datetime(2024, 3, 2, 8, 30, tzinfo=UTC)
    for bad in ("soon", "2024-13-45", "2024-02-30"):
        with pytest.raises(InvalidInput) as error:
            parse_date_range(None, bad)
        assert error.value.field == "end_date" and "ISO 8601" in error.value.message


def test_metadata_is_an_object_or_null():
    assert validate_metadata(None) is None and validate_metadata({"a": 1}) == {"a": 1}
    with pytest.raises(InvalidInput, match="^metadata: must be a JSON object or null$"):
        validate_metadata(["a"])
    # PostgreSQL's jsonb keeps no NUL: refused anywhere inside, naming the field.
    for bad in ({"a": "x\x00"}, {"a\x00": 1}, {"a": [{"b": ["\x00"]}]}):
        with pytest.raises(InvalidInput, match="metadata must not contain NUL"):
            validate_metadata(bad)


@pytest.mark.django_db
def test_queries_are_trimmed_and_full_text_ones_are_short():
    assert validate_query("  deploy  ") == "deploy"
    with pytest.raises(InvalidInput, match="query: must not be empty or whitespace"):
        validate_query("   ")
    assert validate_query(" deploy ", words=True) == "deploy"
    # Stop words only: valid (the search finds nothing), not an error.
    assert validate_query(" the and of ", words=True) == "the and of"
    for query in ("", " ", "x" * 1001):
        with pytest.raises(InvalidInput) as error:
            validate_query(query, words=True)
        assert error.value.field == "query"
    with pytest.raises(InvalidInput, match="NUL"):
        validate_query("dep\x00loy", words=True)
