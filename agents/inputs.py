"""The inputs of automatic recall's tool and endpoint (winni_context, `POST /api/v1/recall/context`),
declared once (core.inputs)."""
from agents.autorecall import MAX_CHARS_MAX, MAX_CHARS_MIN
from core.inputs import AS_OF, PROJECT_ONLY, Input, Inputs
from core.rest import ProjectField

CONTEXT = Inputs(
    # REST takes a blank or null prompt (a hook's empty one): nothing to add.
    prompt=Input(str, rest={"allow_blank": True, "allow_null": True},
                 help="the user's prompt (blank or null: nothing to add)"),
    project=Input(str, default=None, field=ProjectField, rest={"allow_blank": True},
                  help="the session's project (slug or name)"),
    session_id=Input(str, default=None, rest={"allow_blank": True},
                     help="what was given earlier in this session is not given again"),
    max_chars=Input(int, default=None, rest={"min_value": MAX_CHARS_MIN, "max_value": MAX_CHARS_MAX},
                    help="budget of the text"),
    as_of=AS_OF,
    project_only=PROJECT_ONLY,
)
