"""OpenCode's /pty family over a session's sandbox, in OpenCode 1.18.33's shapes. The shell is the web
app's terminal (hangar.realtime.terminal): an interactive bash on the sandbox's pty, no secrets in it.

A Pty here is a record (kept in the cache, Redis, for a day): whose it is (the user, the project, the
session whose sandbox it opens, chosen as workspace_scope says), its title and size. The shell itself
starts when a client connects to `/pty/{id}/connect` (a WebSocket, pty_socket.py) and ends with that
connection, as the web app's terminal does: a shell process does not outlive its socket on a shared
server. Each Pty is its creator's: another member, or another org, gets a 404. A shell can change the
workspace, so creating one takes the member role."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.core.cache import cache
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hangar.accounts.models import ApiToken
from hangar.accounts.ws_tickets import ticket_issue
from hangar.opencode.base import OpenCodeView
from hangar.opencode.serializers import StrictSerializer
from hangar.opencode.workspace_scope import workspace_session
from sandbox.protocol import WORKSPACE

OC = ["opencode"]
TTL_S = 24 * 3600
MAX_PER_USER = 20
SHELL = "/bin/bash"
SHELLS = {SHELL, "bash", "/usr/bin/bash"}
ID_CHARS = 40


class PtyCreateIn(StrictSerializer):
    command = serializers.CharField(max_length=200, required=False)
    args = serializers.ListField(child=serializers.CharField(max_length=200), max_length=0, required=False)
    cwd = serializers.CharField(max_length=4096, required=False)
    title = serializers.CharField(max_length=200, required=False)
    env = serializers.DictField(child=serializers.CharField(max_length=4096), required=False)

    def validate_command(self, value):
        if value not in SHELLS:
            raise serializers.ValidationError("The sandbox's shell is bash: omit command, or say /bin/bash.")
        return value

    def validate_cwd(self, value):
        if value.rstrip("/") != WORKSPACE:
            raise serializers.ValidationError(f"A shell starts in {WORKSPACE}.")
        return value

    def validate_env(self, value):
        if value:
            raise serializers.ValidationError("A shell gets the sandbox's own environment; env is not taken.")
        return value


class PtySizeIn(StrictSerializer):
    rows = serializers.IntegerField(min_value=1, max_value=200)
    cols = serializers.IntegerField(min_value=1, max_value=500)


class PtyUpdateIn(StrictSerializer):
    title = serializers.CharField(max_length=200, required=False)
    size = PtySizeIn(required=False)


def _key(pty_id: str) -> str:
    return f"oc-pty:{pty_id}"


def _index(project_id: int, user_id: int | None) -> str:
    return f"oc-pty-index:{project_id}:{user_id}"


def record_get(pty_id: str, *, project_id: int | None, user_id: int | None) -> dict[str, Any] | None:
    """The Pty record if it is this user's in this project (the socket's check too), else None."""
    if project_id is None or user_id is None or not pty_id.startswith("pty") or len(pty_id) > ID_CHARS:
        return None
    record = cache.get(_key(pty_id))
    if not isinstance(record, dict) or record["project"] != project_id or record["user"] != user_id:
        return None
    return record


def info(record: dict[str, Any]) -> dict[str, Any]:
    """OpenCode's Pty. pid is 0: the process starts in the sandbox when a client connects."""
    return {
        "id": record["id"],
        "title": record["title"],
        "command": SHELL,
        "args": [],
        "cwd": WORKSPACE,
        "status": "running",
        "pid": 0,
    }


class PtyView(OpenCodeView):
    def record(self, pty_id: str) -> dict[str, Any]:
        record = record_get(pty_id, project_id=self.scope.project.pk, user_id=self.request.user.pk)
        if record is None:
            raise NotFound(f"Pty not found: {pty_id}")
        return record

    def ids(self) -> list[str]:
        return list(cache.get(_index(self.scope.project.pk, self.request.user.pk)) or [])

    def save_ids(self, ids: list[str]) -> None:
        cache.set(_index(self.scope.project.pk, self.request.user.pk), ids, timeout=TTL_S)


class PtyShells(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_pty_shells", responses={200: dict})
    def get(self, request, project_id):
        return Response([{"path": SHELL, "name": "bash", "acceptable": True}])


class PtyList(PtyView):
    @extend_schema(tags=OC, operation_id="oc_pty_list", responses={200: dict})
    def get(self, request, project_id):
        records = [cache.get(_key(pty_id)) for pty_id in self.ids()]
        return Response([info(r) for r in records if isinstance(r, dict)])

    @extend_schema(tags=OC, operation_id="oc_pty_create", request=PtyCreateIn, responses={200: dict})
    def post(self, request, project_id):
        body = PtyCreateIn(data=request.data if request.data else {})
        body.is_valid(raise_exception=True)
        session = workspace_session(self)
        if session is None:
            raise ValidationError({"session": ["No session of this project to open a shell in."]})
        live = [i for i in self.ids() if cache.get(_key(i)) is not None]
        if len(live) >= MAX_PER_USER:
            raise ValidationError({"pty": [f"At most {MAX_PER_USER} shells each: delete one first."]})
        record = {
            "id": "pty_" + secrets.token_urlsafe(18),
            "title": body.validated_data.get("title") or "Terminal",
            "project": self.scope.project.pk,
            "user": request.user.pk,
            "session": session.pk,
            "rows": 24,
            "cols": 80,
        }
        cache.set(_key(record["id"]), record, timeout=TTL_S)
        self.save_ids([*live, record["id"]])
        return Response(info(record))


class PtyDetail(PtyView):
    @extend_schema(tags=OC, operation_id="oc_pty_get", responses={200: dict})
    def get(self, request, project_id, pty_id):
        return Response(info(self.record(pty_id)))

    @extend_schema(tags=OC, operation_id="oc_pty_update", request=PtyUpdateIn, responses={200: dict})
    def put(self, request, project_id, pty_id):
        record = self.record(pty_id)
        body = PtyUpdateIn(data=request.data)
        body.is_valid(raise_exception=True)
        if "title" in body.validated_data:
            record["title"] = body.validated_data["title"]
        if "size" in body.validated_data:
            record["rows"], record["cols"] = (
                body.validated_data["size"]["rows"],
                body.validated_data["size"]["cols"],
            )
        cache.set(_key(pty_id), record, timeout=TTL_S)
        return Response(info(record))

    @extend_schema(tags=OC, operation_id="oc_pty_remove", responses={200: bool})
    def delete(self, request, project_id, pty_id):
        self.record(pty_id)
        cache.delete(_key(pty_id))
        self.save_ids([i for i in self.ids() if i != pty_id])
        return Response(True)


class PtyConnectToken(PtyView):
    """A one-use ticket for the socket (hangar.accounts.ws_tickets): a browser cannot set headers."""

    @extend_schema(tags=OC, operation_id="oc_pty_connect_token", request=None, responses={200: dict})
    def post(self, request, project_id, pty_id):
        self.record(pty_id)
        token = request.auth if isinstance(request.auth, ApiToken) else None
        ticket = ticket_issue(user=request.user, token=token)
        return Response({"ticket": ticket, "expires_in": int(settings.HANGAR_WS_TICKET_TTL_S)})
