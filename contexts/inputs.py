"""The inputs the startup contexts' tools share with their endpoints, declared once (core.inputs).
Setting and deleting differ by interface (MCP's set_active defaults to true and force to false;
REST's leave a context as it is and need force), so each interface declares those itself."""
from core.inputs import Input, Inputs
from core.rest import ProjectField

LIST = Inputs(
    include_content=Input(bool, default=False, help="also return each text"),
    project=Input(str, default=None, field=ProjectField, help="only this project's contexts (default: all)"),
)

# The context a tool or a detail URL addresses: one named (REST: in the path) or the active one, of
# a project or global.
GET = Inputs(
    name=Input(str, default=None),
    project=Input(str, default=None, field=ProjectField,
                  help="the project's slug or name; omitted: the global contexts (404 if no such project)"),
)
