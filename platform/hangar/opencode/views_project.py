"""OpenCode's `GET /global/health`, `GET /project` and `PATCH /project/{projectID}` over the project of
the base URL. A base URL is one Hangar project, so the list holds that one. A rename (`name`) and the
workspace start script (`commands.start`, Hangar's setup script) are project settings: they take a
project admin (a member gets OpenCode's 403), go through projects' own service (validated, audited), and
the script is never echoed back (it may hold anything). Hangar projects have no icon: `icon` is a 400."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.opencode import meta
from hangar.opencode.base import OpenCodeView
from hangar.opencode.errors import ProjectNotFound
from hangar.opencode.serializers import StrictSerializer
from hangar.projects.models import Project
from hangar.projects.services import project_update

OC = ["opencode"]
# The OpenCode protocol this edge speaks (docs/reference/opencode-1.18.33-openapi.json): what a client
# compares its own version with.
PROTOCOL_VERSION = "1.18.33"


class ProjectCommandsIn(StrictSerializer):
    start = serializers.CharField(max_length=20_000, allow_blank=True, trim_whitespace=False)


class ProjectPatchIn(StrictSerializer):
    name = serializers.CharField(max_length=200)
    icon = serializers.DictField(required=False)
    commands = ProjectCommandsIn(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False

    def validate_icon(self, value):
        raise serializers.ValidationError("Hangar projects have no icon.")


def _info(project: Project) -> dict:
    return {**meta.project_info(project), **({"vcs": "git"} if project.repo_url else {})}


class Health(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_global_health", responses={200: dict})
    def get(self, request, project_id):
        return Response({"healthy": True, "version": PROTOCOL_VERSION})


class Projects(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_project_list", responses={200: dict})
    def get(self, request, project_id):
        return Response([_info(self.scope.project)])


class ProjectUpdate(OpenCodeView):
    min_role = {"PATCH": Role.ADMIN}

    @extend_schema(tags=OC, operation_id="oc_project_update", request=ProjectPatchIn, responses={200: dict})
    def patch(self, request, project_id, opencode_project_id):
        if opencode_project_id != str(self.scope.project.pk):
            raise ProjectNotFound(opencode_project_id)
        body = ProjectPatchIn(data=request.data)
        body.is_valid(raise_exception=True)
        fields = {}
        if "name" in body.validated_data:
            fields["name"] = body.validated_data["name"]
        if "commands" in body.validated_data:
            fields["setup_script"] = body.validated_data["commands"].get("start", "")
        project = self.scope.project
        if fields:
            project = project_update(actor=self.scope.actor, project=project, **fields)
        return Response(_info(project))
