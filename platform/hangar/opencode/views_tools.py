"""OpenCode's `/experimental/tool/ids` (every tool the engine has, built-in and internal) and
`/experimental/tool?provider=&model=` (what the build agent is offered on that model, with each tool's
JSON schema, as OpenCode's ToolList). The workspace's skills are not read for this: `skill` is listed
with the others, as OpenCode lists it."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from hangar.engine.tools.registry import ALL, get_tools, tool_schemas
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]
MAX_NAME = 200


def _required(request, name: str) -> str:
    value = request.query_params.get(name, "")
    if not value or len(value) > MAX_NAME:
        raise ValidationError({name: [f"Required: text of at most {MAX_NAME} characters."]})
    return value


class ToolIds(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_tool_ids", responses={200: dict})
    def get(self, request, project_id):
        return Response(list(ALL))


class ToolList(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_tool_list", responses={200: dict})
    def get(self, request, project_id):
        _required(request, "provider")
        model = _required(request, "model")
        schemas = tool_schemas(get_tools("build", model))
        return Response(
            [
                {
                    "id": s["function"]["name"],
                    "description": s["function"]["description"],
                    "parameters": s["function"]["parameters"],
                }
                for s in schemas
            ]
        )
