"""The inputs of the answer cache's tools and their endpoints (librarian_*, `/api/v1/cache/...`),
declared once (core.inputs)."""
from core.inputs import Input, Inputs
from core.rest import NonBlankField, ProjectField, SearchQueryField

QUERY = Input(str, field=SearchQueryField, help="the question (compared lower-cased, trimmed, spaces collapsed)")
PROJECT = Input(str, default=None, field=ProjectField, rest={"allow_blank": True, "default": None},
                help="an existing project's slug or name (404 if none); omitted: global")

ASK = Inputs(query=QUERY, project=PROJECT)
FORGET = Inputs(query=QUERY, project=PROJECT)
REMEMBER = Inputs(
    query=QUERY,
    answer=Input(str, field=NonBlankField, help="the answer to cache (at most WINNI_MAX_CONTENT_BYTES)"),
    pin=Input(bool, default=False, help="never evicted, never expires"),
    project=PROJECT,
)
FEEDBACK = Inputs(
    query=QUERY,
    helpful=Input(bool, help="true raises the confidence by 0.1, false lowers it by 0.2"),
    project=PROJECT,
)
