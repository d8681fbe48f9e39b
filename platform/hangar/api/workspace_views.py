"""A session's workspace from /api: its repository state, commit-and-push, pull (fetch and merge a branch
that moved), tar.gz download and file upload. Push and pull answer 202 with an operation a worker runs:
follow it on the session's stream (`workspace.operation`) or at workspace/operations/<id>/; a push
rejected because the remote branch moved ends `failed` with error kind `rejected` (status 409). Thin: the org-scoped session (404 when foreign), then one
engine call (hangar.engine.repo_ops). Viewers read the state; the rest needs a member."""

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.api.sessions_views import ProjectScopedView
from hangar.repos.selectors import operation_get, operations_list, pushes_list, workspace_get
from hangar.repos.services import operation_info, workspace_info

TAG = ["workspace"]


def ops():
    from hangar.engine import repo_ops  # late: reading sessions should not import the engine

    return repo_ops


def transfer():
    from hangar.engine import workspace_transfer  # late, as ops()

    return workspace_transfer


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


class OperationOut(serializers.Serializer):
    """What the views answer (repos.services.operation_info); for the schema and the web app's types."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["push", "pull"])
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])
    result = serializers.DictField(
        allow_null=True, help_text="{commit, branch, compare_url, push_id} or {commit, merged}"
    )
    error = serializers.DictField(
        allow_null=True, help_text="{kind, message, status}; kind `rejected`: pull, then push"
    )
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class OperationAnswer(serializers.Serializer):
    operation = OperationOut()


class PushOut(serializers.Serializer):
    id = serializers.IntegerField()
    branch = serializers.CharField()
    commit = serializers.CharField()
    status = serializers.CharField()
    message = serializers.CharField()
    error = serializers.CharField(allow_null=True)
    compare_url = serializers.CharField()
    created_at = serializers.DateTimeField()


class WorkspaceOut(serializers.Serializer):
    """`state` none: the project has no repository (only the lists follow)."""

    state = serializers.CharField()
    repo_url = serializers.CharField(required=False)
    ref = serializers.CharField(required=False)
    branch = serializers.CharField(required=False)
    base_commit = serializers.CharField(required=False)
    error = serializers.CharField(required=False, allow_null=True)
    setup_exit_code = serializers.IntegerField(required=False, allow_null=True)
    prepare_ms = serializers.IntegerField(required=False, allow_null=True)
    setup_log = serializers.CharField(required=False)
    operations = OperationOut(many=True)
    pushes = PushOut(many=True)


class PushInput(serializers.Serializer):
    message = serializers.CharField(max_length=10_000, trim_whitespace=False)
    author_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    author_email = serializers.EmailField(max_length=200, required=False, allow_blank=True, default="")


class PullInput(serializers.Serializer):
    author_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    author_email = serializers.EmailField(max_length=200, required=False, allow_blank=True, default="")


class WorkspaceView(ProjectScopedView):
    @extend_schema(
        tags=TAG, operation_id="workspace_get", responses=WorkspaceOut, summary="The session's workspace"
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        row = workspace_get(session)
        if row is None:
            return Response({"state": "none", "pushes": [], "operations": []})
        body = workspace_info(row) | {"setup_log": row.setup_log}
        body["operations"] = [operation_info(op) for op in operations_list(session)]
        return Response(body | {"pushes": [_push_json(p) for p in pushes_list(session)]})


def _accepted(request, op) -> Response:
    response = Response({"operation": operation_info(op)}, status=202)
    workspace = request.path.rstrip("/").rsplit("/", 1)[0]  # .../workspace/push/ -> .../workspace
    response["Location"] = request.build_absolute_uri(f"{workspace}/operations/{op.pk}/")
    return response


class WorkspaceOperationView(ProjectScopedView):
    @extend_schema(tags=TAG, operation_id="workspace_operation_get", responses=OperationAnswer)
    def get(self, request, org, project_id, session_id, operation_id):
        _, session = self.session(request)
        op = operation_get(session, operation_id)
        if op is None:
            return Response({"error": {"code": "not_found", "message": "No such operation."}}, status=404)
        return Response({"operation": operation_info(op)})


class WorkspacePushView(ProjectScopedView):
    @extend_schema(
        tags=TAG, operation_id="workspace_push", request=PushInput, responses={202: OperationAnswer}
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PushInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            op = ops().operation_request(
                actor=scope.actor, session=session, kind="push", **body.validated_data
            )
        except ops().RepoOpError as exc:
            return _error(exc)
        return _accepted(request, op)


class WorkspacePullView(ProjectScopedView):
    @extend_schema(
        tags=TAG, operation_id="workspace_pull", request=PullInput, responses={202: OperationAnswer}
    )
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        body = PullInput(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            op = ops().operation_request(
                actor=scope.actor, session=session, kind="pull", **body.validated_data
            )
        except ops().RepoOpError as exc:
            return _error(exc)
        return _accepted(request, op)


class DiffFileOut(serializers.Serializer):
    path = serializers.CharField()
    status = serializers.ChoiceField(choices=["added", "deleted", "modified"])
    additions = serializers.IntegerField(help_text="0 for a binary file")
    deletions = serializers.IntegerField(help_text="0 for a binary file")
    binary = serializers.BooleanField()


class WorkspaceDiffOut(serializers.Serializer):
    base_commit = serializers.CharField()
    branch = serializers.CharField()
    files = DiffFileOut(many=True)
    patch = serializers.CharField(allow_blank=True, help_text="unified diff, cut at the cap")
    truncated = serializers.BooleanField()


class WorkspaceDiffView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="workspace_diff",
        responses=WorkspaceDiffOut,
        summary="The repository changes against the base commit",
        description="Per-file additions/deletions and the unified patch (cut at a cap: `truncated`), of "
        "the workspace as it is now against the commit the session was cloned at.",
    )
    def get(self, request, org, project_id, session_id):
        _, session = self.session(request)
        try:
            return Response(ops().workspace_diff(session=session))
        except ops().RepoOpError as exc:
            return _error(exc)


def files():
    from hangar.engine.workspace import workspace_files  # late, as ops()

    return workspace_files


class FileEntryOut(serializers.Serializer):
    name = serializers.CharField()
    path = serializers.CharField(help_text="relative to the workspace")
    type = serializers.ChoiceField(choices=["file", "directory"])


class FileListOut(serializers.Serializer):
    path = serializers.CharField()
    entries = FileEntryOut(many=True)
    truncated = serializers.BooleanField()


class FileContentOut(serializers.Serializer):
    path = serializers.CharField()
    type = serializers.ChoiceField(choices=["text", "binary"])
    size = serializers.IntegerField()
    content = serializers.CharField(allow_blank=True, help_text="text files only; empty when tooLarge")
    tooLarge = serializers.BooleanField()


class PathQuery(serializers.Serializer):
    path = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=4096, trim_whitespace=False
    )


def _path(request) -> str:
    query = PathQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data["path"]


def _file_error(exc) -> Response:
    return Response({"error": {"code": "file", "message": str(exc)}}, status=exc.status)


class WorkspaceFilesView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="workspace_files",
        parameters=[PathQuery],
        responses=FileListOut,
        summary="One directory of the session's workspace (directories first)",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        path = _path(request)
        try:
            entries, truncated = files().list_dir(session, path, actor=scope.actor)
        except files().FileError as exc:
            return _file_error(exc)
        body = {"path": files().workspace_relative(path), "entries": entries, "truncated": truncated}
        return Response(FileListOut(body).data)


class FindQuery(serializers.Serializer):
    query = serializers.CharField(max_length=200, allow_blank=True, trim_whitespace=False)
    type = serializers.ChoiceField(choices=["file", "directory"], required=False)
    limit = serializers.IntegerField(min_value=1, max_value=200, default=20)


class WorkspaceFindView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="workspace_find",
        parameters=[FindQuery],
        responses={200: {"type": "array", "items": {"type": "string"}}},
        summary="Workspace paths holding the query (folders end in /): what `@` in a prompt offers",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        query = FindQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        found = query.validated_data
        try:
            return Response(
                files().find_paths(
                    session, found["query"], found.get("type"), found["limit"], actor=scope.actor
                )
            )
        except files().FileError as exc:
            return _file_error(exc)


class WorkspaceFileView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="workspace_file",
        parameters=[PathQuery],
        responses=FileContentOut,
        summary="One file of the session's workspace (text up to 1 MiB; binary files are named, not sent)",
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request)
        try:
            content = files().read_file(session, _path(request), actor=scope.actor)
            return Response(FileContentOut(content).data)
        except files().FileError as exc:
            return _file_error(exc)


class WorkspaceArchiveView(ProjectScopedView):
    @extend_schema(
        tags=TAG,
        operation_id="workspace_archive",
        description="?type=tar.gz (default) or zip; streamed, size-capped.",
        responses={(200, "application/gzip"): bytes, (200, "application/zip"): bytes},
    )
    def get(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        fmt = request.query_params.get("type", "tar.gz")
        try:
            stream = transfer().workspace_archive(actor=scope.actor, session=session, fmt=fmt)
        except ops().RepoOpError as exc:
            return _error(exc)
        content_type = "application/zip" if fmt == "zip" else "application/gzip"
        response = StreamingHttpResponse(stream, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{session.pk}.{fmt}"'
        return response


class UploadOut(serializers.Serializer):
    written = serializers.ListField(
        child=serializers.CharField(), help_text="paths, relative to the workspace"
    )


class WorkspaceUploadView(ProjectScopedView):
    parser_classes = [MultiPartParser]

    @extend_schema(tags=TAG, operation_id="workspace_upload", request=None, responses=UploadOut)
    def post(self, request, org, project_id, session_id):
        scope, session = self.session(request, Role.MEMBER)
        cap = settings.HANGAR_WORKSPACE_UPLOAD_MAX_BYTES
        too_large = Response({"error": {"code": "too_large", "message": f"At most {cap} bytes."}}, status=413)
        # Before the body is parsed: a declared length over the cap is refused unread (under ASGI the
        # stream is also cut at the cap before Django spools it, hangar.body_limit).
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > cap + 2**20:
            return too_large
        uploads = request.FILES.getlist("file")
        if not uploads:
            return Response(
                {"error": {"code": "invalid", "message": "Send one or more 'file' parts."}}, status=400
            )
        if sum(f.size for f in uploads) > cap:
            return too_large
        files = [(f.name, f.read()) for f in uploads]
        try:
            written = transfer().workspace_upload(
                actor=scope.actor, session=session, files=files, directory=request.data.get("path", "")
            )
        except ops().RepoOpError as exc:
            return _error(exc)
        return Response({"written": written})
