"""A session's workspace from /api: its repository state, commit-and-push, pull (fetch and merge a branch
that moved), tar.gz download and file upload. Thin: the org-scoped session (404 when foreign), then one
engine call (hangar.engine.repo_ops). Viewers read the state; the rest needs a member."""

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.api.sessions_views import ProjectScopedView
from hangar.repos.selectors import pushes_list, workspace_get
from hangar.repos.services import workspace_info

TAG = ["workspace"]


def ops():
    from hangar.engine import repo_ops  # late: reading sessions should not import the engine

    return repo_ops


def _error(exc) -> Response:
    return Response({"error": {"code": exc.kind, "message": str(exc)}}, status=exc.status)


def _push_json(push) -> dict:
    return {
        "id": push.pk,
        "branch": push.branch,
        "commit": push.commit,
        "status": push.status,
        "message": push.message,
        "error": push.error or None,
        "compare_url": push.compare_url,
        "created_at": push.created_at.isoformat(),
    }


class PushInput(serializers.Serializer):
    message = serializers.CharField(max_length=10_000, trim_whitespace=False)
    author_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    author_email = serializers.EmailField(max_length=200, required=False, allow_blank=True, default="")


class PullInput(serializers.Serializer):
    author_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    author_email = serializers.EmailField(max_length=200, required=False, allow_blank=True, default="")


class WorkspaceView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="workspace_get", responses=dict, summary="The session's workspace")
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        row = workspace_get(session)
        if row is None:
            return Response({"state": "none", "pushes": []})
        body = workspace_info(row) | {"setup_log": row.setup_log}
        return Response(body | {"pushes": [_push_json(p) for p in pushes_list(session)]})


class WorkspacePushView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="workspace_push", request=PushInput, responses=dict)
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PushInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            push = ops().workspace_push(actor=scope.actor, session=session, **body.validated_data)
        except ops().RepoOpError as exc:
            return _error(exc)
        return Response(_push_json(push))


class WorkspacePullView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="workspace_pull", request=PullInput, responses=dict)
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PullInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = ops().workspace_pull(actor=scope.actor, session=session, **body.validated_data)
        except ops().RepoOpError as exc:
            return _error(exc)
        return Response({"commit": result.commit, "merged": result.merged})


class WorkspaceArchiveView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="workspace_archive", responses={(200, "application/gzip"): bytes})
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        try:
            stream = ops().workspace_archive(actor=scope.actor, session=session)
        except ops().RepoOpError as exc:
            return _error(exc)
        response = StreamingHttpResponse(stream, content_type="application/gzip")
        response["Content-Disposition"] = f'attachment; filename="{session.pk}.tar.gz"'
        return response


class WorkspaceUploadView(ProjectScopedView):
    parser_classes = [MultiPartParser]

    @extend_schema(tags=TAG, operation_id="workspace_upload", request=None, responses=dict)
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return Response(
                {"error": {"code": "invalid", "message": "Send one or more 'file' parts."}}, status=400
            )
        cap = ops().UPLOAD_MAX_BYTES
        if sum(f.size for f in uploads) > cap:
            return Response({"error": {"code": "too_large", "message": f"At most {cap} bytes."}}, status=413)
        files = [(f.name, f.read()) for f in uploads]
        try:
            written = ops().workspace_upload(
                actor=scope.actor, session=session, files=files, directory=request.data.get("path", "")
            )
        except ops().RepoOpError as exc:
            return _error(exc)
        return Response({"written": written})
