"""The inputs the startup contexts' tools share with their endpoints, declared once (core.inputs)."""
from contexts import services
from core.inputs import FORCE, Input, Inputs
from core.rest import NonBlankField, ProjectField

LIST = Inputs(
    include_content=Input(bool, default=False, help="also return each text"),
    project=Input(str, default=None, field=ProjectField, help="only this project's contexts (default: all)"),
)

# A context's name: unique within its project (or among the global contexts). REST has it in the
# detail URL's path (NAME.path_parameter), the tools as an argument.
NAME = Input(str, field=NonBlankField, max_length=services.NAME_MAX,
             help="unique within its project (or among the global contexts)")

# The context a tool or a detail URL addresses: one named (REST: in the path) or the active one, of
# a project or global.
SCOPE_PROJECT = Input(str, default=None, field=ProjectField,
                      help="the project's slug or name; omitted: the global contexts (404 if no such project)")
GET = Inputs(name=NAME.but(default=None), project=SCOPE_PROJECT)
DELETE = Inputs(name=NAME, force=FORCE, project=SCOPE_PROJECT)

# dewey_set_startup_context; REST creates (all four) or updates (content and set_active; the name
# and project in the URL).
SET = Inputs(
    name=NAME,
    content=Input(str, field=NonBlankField, help="the text loaded at the start of a session (Markdown)"),
    # MCP's agent sets the context for its next session: active unless it says otherwise. REST
    # leaves a context's state as it is unless told.
    set_active=Input(bool, default=True, rest={"default": None, "allow_null": True},
                     help="true: make it the active one of its scope; false: inactive; null or omitted: leave it "
                          "(a new context: inactive)"),
    project=Input(str, default=None, field=ProjectField, rest={"allow_blank": True, "default": None},
                  help="an existing project's slug or name (404 if none); omitted: global"),
)
