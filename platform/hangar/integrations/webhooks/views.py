"""The webhook API (org-scoped, under /api/orgs/<org>/webhooks/) and the inbound receiver
(/hooks/in/<key>, unauthenticated: the Standard Webhooks signature is the authentication)."""

from typing import Any

from django.http import JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.actors import client_ip
from hangar.accounts.models import Role
from hangar.accounts.scoping import scope_for
from hangar.conversations.models import Session
from hangar.integrations.webhooks import inbound, selectors, services
from hangar.integrations.webhooks.models import DeliveryStatus, EventType
from hangar.integrations.webhooks.template import TemplateError
from hangar.projects.selectors import project_get

TAGS = ["webhooks"]


class TriggerOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    project = serializers.IntegerField(source="project_id")
    session = serializers.CharField(source="session_id", allow_null=True)
    url = serializers.SerializerMethodField()
    prompt_template = serializers.CharField()
    agent = serializers.CharField()
    model = serializers.CharField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    def get_url(self, trigger) -> str:
        from django.conf import settings

        return f"{settings.PUBLIC_URL}/hooks/in/{trigger.key}"


class TriggerCreatedOut(TriggerOut):
    secret = serializers.CharField(help_text="whsec_…: shown once, store it now")


class TriggerIn(serializers.Serializer):
    name = serializers.CharField(max_length=150)
    project = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    session = serializers.CharField(max_length=40, required=False)
    prompt_template = serializers.CharField(max_length=8000, trim_whitespace=False)
    agent = serializers.CharField(max_length=64, required=False, default="")
    model = serializers.CharField(max_length=200, required=False, default="")


class EndpointOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    project = serializers.IntegerField(source="project_id", allow_null=True)
    event_types = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    disabled_reason = serializers.CharField()
    failed_in_row = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class EndpointCreatedOut(EndpointOut):
    secret = serializers.CharField(help_text="whsec_…: shown once, store it now")


class EndpointIn(serializers.Serializer):
    url = serializers.CharField(max_length=2000)
    project = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**63 - 1)
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EventType.values), max_length=len(EventType.values)
    )


class EndpointUpdateIn(serializers.Serializer):
    url = serializers.CharField(max_length=2000, required=False)
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=EventType.values),
        max_length=len(EventType.values),
        required=False,
    )
    enabled = serializers.BooleanField(required=False)


class AttemptOut(serializers.Serializer):
    number = serializers.IntegerField()
    manual = serializers.BooleanField()
    request_headers = serializers.DictField()
    response_status = serializers.IntegerField(allow_null=True)
    response_body = serializers.CharField()
    error = serializers.CharField()
    duration_ms = serializers.FloatField()
    created_at = serializers.DateTimeField()


class DeliveryOut(serializers.Serializer):
    id = serializers.IntegerField()
    endpoint = serializers.IntegerField(source="endpoint_id")
    message_id = serializers.CharField()
    event_type = serializers.CharField()
    session = serializers.CharField(source="session_id")
    body = serializers.CharField()
    status = serializers.CharField()
    attempts = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    attempt_log = AttemptOut(many=True)


class TriggerListCreateView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_triggers_list", responses=TriggerOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org, Role.MEMBER)
        return Response(TriggerOut(selectors.trigger_list(org=scope.org), many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="webhook_triggers_create",
        request=TriggerIn,
        responses={201: TriggerCreatedOut},
    )
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = TriggerIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        project = project_get(org=scope.org, project_id=data["project"])
        session = None
        if data.get("session"):
            session = Session.objects.filter(pk=data["session"], project=project).first()
            if session is None:
                raise serializers.ValidationError({"session": ["Unknown session in this project."]})
        trigger, secret = services.trigger_create(
            actor=scope.actor,
            project=project,
            name=data["name"],
            prompt_template=data["prompt_template"],
            session=session,
            agent=data["agent"],
            model=data["model"],
        )
        return Response({**TriggerOut(trigger).data, "secret": secret}, status=status.HTTP_201_CREATED)


class TriggerDetailView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_triggers_get", responses=TriggerOut)
    def get(self, request, org, trigger_id):
        scope = scope_for(request, org, Role.MEMBER)
        return Response(TriggerOut(selectors.trigger_get(org=scope.org, trigger_id=trigger_id)).data)

    @extend_schema(tags=TAGS, operation_id="webhook_triggers_delete", responses={204: None})
    def delete(self, request, org, trigger_id):
        scope = scope_for(request, org, Role.ADMIN)
        services.trigger_delete(
            actor=scope.actor, trigger=selectors.trigger_get(org=scope.org, trigger_id=trigger_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointListCreateView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_endpoints_list", responses=EndpointOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org, Role.MEMBER)
        return Response(EndpointOut(selectors.endpoint_list(org=scope.org), many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="webhook_endpoints_create",
        request=EndpointIn,
        responses={201: EndpointCreatedOut},
    )
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = EndpointIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        project = project_get(org=scope.org, project_id=data["project"]) if data.get("project") else None
        endpoint, secret = services.endpoint_create(
            actor=scope.actor,
            org=scope.org,
            url=data["url"],
            event_types=data["event_types"],
            project=project,
        )
        return Response({**EndpointOut(endpoint).data, "secret": secret}, status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_endpoints_get", responses=EndpointOut)
    def get(self, request, org, endpoint_id):
        scope = scope_for(request, org, Role.MEMBER)
        return Response(EndpointOut(selectors.endpoint_get(org=scope.org, endpoint_id=endpoint_id)).data)

    @extend_schema(
        tags=TAGS, operation_id="webhook_endpoints_update", request=EndpointUpdateIn, responses=EndpointOut
    )
    def patch(self, request, org, endpoint_id):
        scope = scope_for(request, org, Role.ADMIN)
        endpoint = selectors.endpoint_get(org=scope.org, endpoint_id=endpoint_id)
        body = EndpointUpdateIn(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint = services.endpoint_update(actor=scope.actor, endpoint=endpoint, **body.validated_data)
        return Response(EndpointOut(endpoint).data)

    @extend_schema(tags=TAGS, operation_id="webhook_endpoints_delete", responses={204: None})
    def delete(self, request, org, endpoint_id):
        scope = scope_for(request, org, Role.ADMIN)
        services.endpoint_delete(
            actor=scope.actor, endpoint=selectors.endpoint_get(org=scope.org, endpoint_id=endpoint_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_deliveries_list", responses=DeliveryOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org, Role.MEMBER)
        endpoint = None
        if request.query_params.get("endpoint"):
            endpoint = selectors.endpoint_get(org=scope.org, endpoint_id=request.query_params["endpoint"])
        wanted = request.query_params.get("status", "")
        if wanted and wanted not in DeliveryStatus.values:
            raise serializers.ValidationError({"status": [f"One of {', '.join(DeliveryStatus.values)}."]})
        rows = selectors.delivery_list(org=scope.org, endpoint=endpoint, status=wanted)
        return Response(DeliveryOut(rows[: selectors.MAX_DELIVERIES], many=True).data)


class DeliveryDetailView(APIView):
    @extend_schema(tags=TAGS, operation_id="webhook_deliveries_get", responses=DeliveryOut)
    def get(self, request, org, delivery_id):
        scope = scope_for(request, org, Role.MEMBER)
        return Response(DeliveryOut(selectors.delivery_get(org=scope.org, delivery_id=delivery_id)).data)


class DeliveryReplayView(APIView):
    @extend_schema(
        tags=TAGS, operation_id="webhook_deliveries_replay", request=None, responses={202: DeliveryOut}
    )
    def post(self, request, org, delivery_id):
        scope = scope_for(request, org, Role.ADMIN)
        delivery = services.delivery_replay(
            actor=scope.actor, delivery=selectors.delivery_get(org=scope.org, delivery_id=delivery_id)
        )
        return Response(DeliveryOut(delivery).data, status=status.HTTP_202_ACCEPTED)


def _error(code: int, kind: str, message: str, fields: dict | None = None) -> JsonResponse:
    error: dict[str, Any] = {"code": kind, "message": message}

    if fields:
        error["fields"] = fields
    return JsonResponse({"error": error}, status=code)


@method_decorator(csrf_exempt, name="dispatch")
class InboundView(View):
    """POST /hooks/in/<key>: 202 with the session, 401 unverified, 400 when the body does not fit."""

    http_method_names = ["post"]

    def post(self, request, key):
        from hangar.engine.services import PromptRejected

        trigger = selectors.trigger_by_key(key)
        if trigger is None:
            return _error(404, "not_found", "Not found.")
        if int(request.META.get("CONTENT_LENGTH") or 0) > inbound.MAX_BODY:
            return _error(413, "too_large", f"The body is larger than {inbound.MAX_BODY} bytes.")
        actor = inbound.trigger_actor(trigger, client_ip(request), getattr(request, "request_id", ""))
        try:
            accepted = inbound.trigger_receive(
                trigger=trigger, body=request.body, headers=dict(request.headers), actor=actor
            )
        except inbound.Refused:
            return _error(401, "unauthorized", "The signature could not be verified.")
        except TemplateError as exc:
            return _error(400, "invalid", f"{exc.field} {exc.message}", {exc.field: [exc.message]})
        except (PromptRejected, ValueError) as exc:
            return _error(400, "invalid", str(exc))
        return JsonResponse(
            {"session": accepted.session.pk, "created": accepted.created}, status=status.HTTP_202_ACCEPTED
        )
