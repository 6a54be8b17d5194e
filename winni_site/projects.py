"""Projects' interfaces: the MCP tool `winni_projects` and REST `/api/v1/projects/` (list, one
project, merge). The service is core.projects; a project's counts span every store, so its
interfaces belong to the assembly (like recall's)."""
from __future__ import annotations

from typing import Any, TypedDict

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import projects
from core.errors import NotFound
from core.inputs import Input, Inputs
from core.mcp import McpRegistry, read_tool
from core.models import Project
from core.rest import NON_BLANK, ProjectField, StrictSerializer, answer


class KeyDict(TypedDict):
    kind: str
    value: str


class ProjectDict(TypedDict):
    slug: str
    name: str
    created_at: str
    last_activity_at: str
    keys: list[KeyDict]
    counts: dict[str, int]


class ProjectListDict(TypedDict):
    projects: list[ProjectDict]
    count: int


def project_dict(project: Project, counts: dict[str, int]) -> ProjectDict:
    return {
        "slug": project.slug,
        "name": project.name,
        "created_at": project.created_at.isoformat(),
        "last_activity_at": project.last_activity_at.isoformat(),
        "keys": [{"kind": key.kind, "value": key.value} for key in project.keys.all()],
        "counts": counts,
    }


def project_list_dict(project: Any = None) -> ProjectListDict:
    rows = [project_dict(found, counts) for found, counts in projects.project_list(project=project)]
    return {"projects": rows, "count": len(rows)}


# The inputs of winni_projects and `GET /api/v1/projects/` (core.inputs).
LIST = Inputs(project=Input(str, default=None, field=ProjectField, help="only this one (slug, name or alias)"))


@read_tool
@LIST.tool
def winni_projects(**given: Any) -> ProjectListDict:
    """The projects (one per repository), most recently active first: the slug every project
    argument takes, keys, last activity, rows per store."""
    return project_list_dict(given["project"])


MCP = McpRegistry(tools=[winni_projects])


PROJECTS = ["projects"]
PROJECT_EXAMPLE = {"slug": "winni", "name": "winni", "created_at": "2026-11-20T08:00:00+00:00",
                   "last_activity_at": "2026-11-24T09:40:00+00:00",
                   "keys": [{"kind": "remote", "value": "github.com/example/winni"}],
                   "counts": {"conversations": 12, "memories": 30, "medallions": 2, "contexts": 1}}
SLUG_PATH = OpenApiParameter("slug", {"type": "string", "pattern": NON_BLANK, "maxLength": projects.NAME_MAX},
                             OpenApiParameter.PATH, description="the project's slug, name or an alias")


class MergedDict(TypedDict):
    merged: str
    into: ProjectDict
    moved: dict[str, int]


class ProjectListApi(APIView):
    InputSerializer = LIST.serializer(nullable=False)

    @extend_schema(
        operation_id="projects_list", tags=PROJECTS, summary="List projects",
        description="The projects Winni knows (one per repository, found by its git remote, root commit or path "
                    "when a session starts in it), most recently active first, each with its slug (what every "
                    "`project` argument takes), identity keys, last activity and rows per store "
                    "(`winni_projects`).",
        parameters=[InputSerializer],
        responses={200: answer(ProjectListDict, "the projects", {"projects": [PROJECT_EXAMPLE], "count": 1})},
    )
    def get(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        return Response(project_list_dict(data.validated_data.get("project")))


class ProjectDetailApi(APIView):
    @extend_schema(
        operation_id="projects_retrieve", tags=PROJECTS, summary="Get a project",
        description="One project by slug, name or alias, with its keys and rows per store.",
        parameters=[SLUG_PATH],
        responses={200: answer(ProjectDict, "the project", PROJECT_EXAMPLE)},
    )
    def get(self, request: Request, slug: str) -> Response:
        project = projects.project_get(name=slug)
        found = projects.project_list(project=project)
        if not found:  # outside the token's projects
            raise NotFound(f"project {slug!r} not found", field="slug")
        return Response(project_dict(*found[0]))


class ProjectMergeApi(APIView):
    """Merge this project into another (`into`): every row moves there, this one's keys and name
    become the target's aliases, and this project is deleted."""

    @extend_schema_serializer(component_name="ProjectMerge")
    class InputSerializer(StrictSerializer):
        into = ProjectField(help_text="the project that keeps everything (slug, name or alias)")

    @extend_schema(
        operation_id="projects_merge", tags=PROJECTS, summary="Merge a project into another",
        description="Moves every row of this project to `into`; this project's keys and name become the target's "
                    "aliases and this project is deleted. Merging a project into itself is a 400.",
        parameters=[SLUG_PATH], request=InputSerializer,
        examples=[OpenApiExample("a renamed clone", request_only=True, value={"into": "winni"})],
        responses={200: answer(MergedDict, "what moved", {"merged": "winni-old", "into": PROJECT_EXAMPLE,
                                                          "moved": {"conversations": 3, "memories": 5}})},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        moved = projects.project_merge(source=slug, target=data.validated_data["into"])
        target = projects.project_get(name=data.validated_data["into"])
        return Response({"merged": slug, "into": project_dict(*projects.project_list(project=target)[0]),
                         "moved": moved})
