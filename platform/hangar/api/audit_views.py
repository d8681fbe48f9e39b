"""The org's audit log: cursor pages with filters, and the same filters exported whole as CSV or JSON
(streamed). Admins, owners and auditors read; admins and owners set the retention."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterator

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.accounts.retention_services import MAX_DAYS, MIN_DAYS, org_audit_retention_set
from hangar.api import csv_cells
from hangar.api.scoping import scope_for
from hangar.api.usage_views import reader_scope
from hangar.audit.models import ActorType, AuditEvent
from hangar.audit.selectors import AuditFilters, BadFilter, audit_export, audit_page

COLUMNS = (
    "id",
    "created_at",
    "action",
    "actor_type",
    "actor_id",
    "actor_label",
    "target_type",
    "target_id",
    "ip",
    "request_id",
    "data",
)


def row_out(row: AuditEvent) -> dict:
    return {
        "id": row.pk,
        "created_at": row.created_at.isoformat(),
        "action": row.action,
        "actor": {"type": row.actor_type, "id": row.actor_id, "label": row.actor_label},
        "target": {"type": row.target_type, "id": row.target_id},
        "data": row.data,
        "ip": row.ip,
        "request_id": row.request_id,
    }


class AuditActorOut(serializers.Serializer):
    type = serializers.ChoiceField(choices=ActorType.choices)
    id = serializers.CharField(allow_blank=True, help_text="user id, token prefix...; empty for the system")
    # Declared fields leave the class (DRF's metaclass): no clash with Field.label or Serializer.data at
    # run time; the stubs see the class attribute.
    label = serializers.CharField(  # type: ignore[assignment]
        allow_blank=True, help_text="what a reader recognises: an email..."
    )


class AuditTargetOut(serializers.Serializer):
    type = serializers.CharField(allow_blank=True)
    id = serializers.CharField(allow_blank=True)


class AuditEventOut(serializers.Serializer):
    """One row of the log, as row_out shapes it (the JSON export writes the same)."""

    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    action = serializers.CharField()
    actor = AuditActorOut()
    target = AuditTargetOut()
    data = serializers.DictField(  # type: ignore[assignment]  # as AuditActorOut.label
        help_text="what the action recorded; its keys depend on the action"
    )
    ip = serializers.IPAddressField(allow_null=True)
    request_id = serializers.CharField(allow_blank=True)


class AuditPageOut(serializers.Serializer):
    results = AuditEventOut(many=True, help_text="newest first")
    next_cursor = serializers.CharField(allow_null=True, help_text="null: the last page")


class RetentionOut(serializers.Serializer):
    days = serializers.IntegerField(help_text="rows older than this are purged")


def _when(params, name: str) -> dt.datetime | None:
    raw = params.get(name)
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError({name: ["An ISO 8601 date or time (UTC if no offset)."]}) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def filters_from(params) -> AuditFilters:
    project = params.get("project")
    if project and not project.isdigit():
        raise ValidationError({"project": ["A project id."]})
    return AuditFilters(
        action=params.get("action", ""),
        actor=params.get("actor", ""),
        target_type=params.get("target_type", ""),
        target_id=params.get("target_id", ""),
        project=int(project) if project else None,
        session=params.get("session", ""),
        since=_when(params, "since"),
        until=_when(params, "until"),
    )


FILTER_PARAMS = [
    OpenApiParameter("action", str, description="exact, or a prefix ending in '.' (session.)"),
    OpenApiParameter("actor", str, description="actor id, email or token prefix"),
    OpenApiParameter("target_type", str),
    OpenApiParameter("target_id", str),
    OpenApiParameter("project", int),
    OpenApiParameter("session", str),
    OpenApiParameter("since", str, description="ISO 8601, included"),
    OpenApiParameter("until", str, description="ISO 8601, excluded"),
]


class AuditListView(APIView):
    @extend_schema(
        operation_id="audit_list",
        parameters=[*FILTER_PARAMS, OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        responses=AuditPageOut,
    )
    def get(self, request, org):
        scope = reader_scope(request, org)
        params = request.query_params
        limit = params.get("limit", "50")
        if not limit.isdigit():
            raise ValidationError({"limit": ["A whole number."]})
        try:
            rows, cursor = audit_page(
                org_id=scope.org.pk,
                filters=filters_from(params),
                cursor=params.get("cursor", ""),
                limit=int(limit),
            )
        except BadFilter as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response({"results": [row_out(r) for r in rows], "next_cursor": cursor})


def _csv_lines(rows: Iterator[AuditEvent]) -> Iterator[str]:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(
            csv_cells.row(
                [
                    row.pk,
                    row.created_at.isoformat(),
                    row.action,
                    row.actor_type,
                    row.actor_id,
                    row.actor_label,
                    row.target_type,
                    row.target_id,
                    row.ip or "",
                    row.request_id,
                    json.dumps(row.data, sort_keys=True),
                ]
            )
        )
        yield out.getvalue()
        out.seek(0)
        out.truncate()


def _json_lines(rows: Iterator[AuditEvent]) -> Iterator[str]:
    yield "["
    for i, row in enumerate(rows):
        yield ("," if i else "") + json.dumps(row_out(row))
    yield "]"


class AuditExportView(APIView):
    @extend_schema(operation_id="audit_export", parameters=FILTER_PARAMS, responses={(200, "text/csv"): str})
    def get(self, request, org, kind):
        if kind not in ("csv", "json"):
            raise NotFound()
        scope = reader_scope(request, org)
        rows = audit_export(org_id=scope.org.pk, filters=filters_from(request.query_params))
        lines, content_type = (_csv_lines, "text/csv") if kind == "csv" else (_json_lines, "application/json")
        response = StreamingHttpResponse(lines(rows), content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="audit-{org}.{kind}"'
        return response


class RetentionIn(serializers.Serializer):
    days = serializers.IntegerField(min_value=MIN_DAYS, max_value=MAX_DAYS)  # the service applies the floor


class AuditRetentionView(APIView):
    @extend_schema(operation_id="audit_retention_get", responses=RetentionOut)
    def get(self, request, org):
        scope = reader_scope(request, org)
        return Response({"days": scope.org.audit_retention_days})

    @extend_schema(operation_id="audit_retention_set", request=RetentionIn, responses=RetentionOut)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = RetentionIn(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_audit_retention_set(actor=scope.actor, org=scope.org, days=body.validated_data["days"])
        return Response({"days": updated.audit_retention_days})
