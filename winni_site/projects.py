"""Projects' interfaces: the MCP tool `winni_projects` and REST `/api/v1/projects/` (list, one
project, merge). The service is core.projects; a project's counts span every store, so its
interfaces belong to the assembly (like recall's)."""
from __future__ import annotations

from typing import Any, TypedDict

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import projects
from core.errors import NotFound
from core.mcp import McpRegistry, read_tool
from core.models import Project
from core.rest import StrictSerializer


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


@read_tool
def winni_projects(project: str | None = None) -> ProjectListDict:
    """The projects Winni knows (one per repository: found by its git remote, root commit or
    path when a session starts in it), most recently active first, each with its slug (what
    every `project` argument takes), identity keys, last activity and rows per store. project:
    only that one (slug, name or an alias)."""
    return project_list_dict(project)


MCP = McpRegistry(tools=[winni_projects])


class ProjectListApi(APIView):
    @extend_schema(parameters=[OpenApiParameter("project", str, required=False)], responses={200: dict},
                   operation_id="projects_list")
    def get(self, request: Request) -> Response:
        return Response(project_list_dict(request.query_params.get("project") or None))


class ProjectDetailApi(APIView):
    @extend_schema(responses={200: dict, 404: dict}, operation_id="projects_retrieve")
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
        into = serializers.CharField(max_length=projects.NAME_MAX)

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="projects_merge")
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        moved = projects.project_merge(source=slug, target=data.validated_data["into"])
        target = projects.project_get(name=data.validated_data["into"])
        return Response({"merged": slug, "into": project_dict(*projects.project_list(project=target)[0]),
                         "moved": moved})
