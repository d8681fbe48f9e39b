"""Settings writes from an OpenCode client: `PATCH /config` (the project's settings, for the org's admins
and owners) and `GET/PATCH /global/config` (the member's own, hangar.accounts.member_config_services). `GET /config`
is the member's own settings under the project's, as OpenCode lays a project's config over the global one.

What `PATCH /config` may change is what a Hangar project holds that OpenCode's config names: `model` (the
project's default model, one the org offers), `default_agent`, and `permission` (the project's rules, in
OpenCode's shape: an action for everything, or per tool an action or `{pattern: action}`). Any other key
is a 400 saying where it is set; a member (not an admin) is a 403 saying who may."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from hangar.accounts.member_config_services import member_config_update
from hangar.accounts.models import Role
from hangar.opencode import meta
from hangar.opencode.base import OpenCodeView
from hangar.projects.services import project_update
from hangar.usage.selectors import offered_models

OC = ["opencode"]
ACTIONS = ("allow", "ask", "deny")
MAX_RULES = 200
PROJECT_KEYS = {"model": "default_model", "default_agent": "default_agent", "permission": "permission_rules"}


def permission_rules(config: Any) -> list[dict[str, str]]:
    """OpenCode's PermissionConfig as Hangar's rule list ({permission, pattern, action}, last match wins)."""
    if config in ACTIONS:
        return [{"permission": "*", "pattern": "*", "action": config}]
    if not isinstance(config, dict):
        raise ValidationError({"permission": ['An action ("allow", "ask", "deny") or an object per tool.']})
    rules = []
    for tool, rule in config.items():
        if rule in ACTIONS:
            rules.append({"permission": tool, "pattern": "*", "action": rule})
        elif isinstance(rule, dict) and all(a in ACTIONS for a in rule.values()):
            rules += [{"permission": tool, "pattern": p, "action": a} for p, a in rule.items()]
        else:
            raise ValidationError({"permission": [f"{str(tool)[:64]}: an action or {{pattern: action}}."]})
    if len(rules) > MAX_RULES:
        raise ValidationError({"permission": [f"At most {MAX_RULES} rules."]})
    return rules


class Config(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_config", responses={200: dict})
    def get(self, request, project_id):
        return Response(self._config(self.scope.project))

    @extend_schema(tags=OC, operation_id="oc_config_update", request=dict, responses={200: dict})
    def patch(self, request, project_id):
        if not self.scope.membership.has_role(Role.ADMIN):
            raise PermissionDenied(
                "Only the org's admins and owners change the project's config; "
                "your own settings are PATCH /global/config."
            )
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError({"config": ["Must be a JSON object."]})
        unknown = sorted(set(body) - set(PROJECT_KEYS) - {"$schema"})
        if unknown:
            raise ValidationError(
                {key[:64]: ["Not a project setting Hangar takes from OpenCode's config."] for key in unknown}
            )
        fields: dict[str, Any] = {}
        if "model" in body:
            fields["default_model"] = self._offered_model(body["model"])
        if "default_agent" in body:
            fields["default_agent"] = body["default_agent"]
        if "permission" in body:
            fields["permission_rules"] = permission_rules(body["permission"])
        project = self.scope.project
        if fields:
            org = project.org
            project = project_update(actor=self.scope.actor, project=project, **fields)
            project.org = org  # the same org, already loaded with the token
        return Response(self._config(project))

    def _offered_model(self, model: Any) -> str:
        scope = self.scope
        offered = offered_models(org=scope.project.org, membership=scope.membership, default="")
        if not isinstance(model, str) or model not in offered:
            raise ValidationError({"model": ["One of the org's models: " + ", ".join(offered[:50])]})
        return model

    def _config(self, project) -> dict:
        return meta.config(project, self.scope.actor.user.email, self.scope.membership.opencode_config)


class GlobalConfig(OpenCodeView):
    # Every member (a viewer too) keeps settings of their own.
    min_role = {"GET": Role.VIEWER, "PATCH": Role.VIEWER}

    @extend_schema(tags=OC, operation_id="oc_global_config", responses={200: dict})
    def get(self, request, project_id):
        return Response(_global(self.scope.membership.opencode_config))

    @extend_schema(tags=OC, operation_id="oc_global_config_update", request=dict, responses={200: dict})
    def patch(self, request, project_id):
        merged = member_config_update(
            actor=self.scope.actor, membership=self.scope.membership, changes=request.data
        )
        return Response(_global(merged))


def _global(values: dict) -> dict:
    return {"$schema": "https://opencode.ai/config.json", **(values or {})}
