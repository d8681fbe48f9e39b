"""OpenCode's error bodies. The stock clients read `{"name": ..., "data": {"message": ...}}` (NotFoundError,
BadRequestError); a missing permission request is `{"_tag": "PermissionNotFoundError", ...}` as OpenCode
1.18.33 answers it. A 401 carries a Basic challenge, as `opencode serve` does. The one place OpenCode's routes
map the domain errors raised below the edges (hangar.errors) to HTTP."""

from django.core.exceptions import ObjectDoesNotExist
from django.http import JsonResponse
from rest_framework import exceptions

from hangar import errors

# The domain errors raised below the edges (hangar.errors), as the HTTP errors below answer them.
_AS_HTTP: dict[type[errors.DomainError], type[exceptions.APIException]] = {
    errors.NotFound: exceptions.NotFound,
    errors.PermissionDenied: exceptions.PermissionDenied,
    errors.NotAuthenticated: exceptions.NotAuthenticated,
    errors.AuthenticationFailed: exceptions.AuthenticationFailed,
    errors.ValidationError: exceptions.ValidationError,
}


class PermissionNotFound(exceptions.NotFound):
    def __init__(self, request_id: str):
        super().__init__(f"Permission request not found: {request_id}")
        self.request_id = request_id


class QuestionNotFound(exceptions.NotFound):
    def __init__(self, request_id: str):
        super().__init__(f"Question request not found: {request_id}")
        self.request_id = request_id


class ProjectNotFound(exceptions.NotFound):
    def __init__(self, project_id: str):
        super().__init__(f"Project not found: {project_id}")
        self.project_id = project_id


class SessionBusy(exceptions.APIException):
    status_code = 409

    def __init__(self, session_id: str):
        super().__init__(f"Session {session_id} is busy")
        self.session_id = session_id


class SandboxFailed(exceptions.APIException):
    """The session's sandbox could not do the file work (revert, fork): nothing was changed."""

    status_code = 503


def error_body(exc: Exception) -> tuple[int, dict]:
    if isinstance(exc, errors.DomainError):
        exc = _AS_HTTP.get(type(exc), exceptions.APIException)(exc.detail, code=exc.code)
    if isinstance(exc, ObjectDoesNotExist):  # any missing row is OpenCode's NotFoundError, never a 500
        exc = exceptions.NotFound(f"{type(exc).__qualname__.split('.')[0]} not found")
    if isinstance(exc, QuestionNotFound):
        return 404, {"_tag": "QuestionNotFoundError", "requestID": exc.request_id, "message": str(exc.detail)}
    if isinstance(exc, PermissionNotFound):
        return 404, {
            "_tag": "PermissionNotFoundError",
            "requestID": exc.request_id,
            "message": str(exc.detail),
        }
    if isinstance(exc, ProjectNotFound):
        return 404, {"_tag": "ProjectNotFoundError", "projectID": exc.project_id, "message": str(exc.detail)}
    if isinstance(exc, SessionBusy):
        return 409, {"_tag": "SessionBusyError", "sessionID": exc.session_id, "message": str(exc.detail)}
    if isinstance(exc, exceptions.NotFound):
        return 404, {"name": "NotFoundError", "data": {"message": str(exc.detail)}}
    if isinstance(exc, exceptions.AuthenticationFailed | exceptions.NotAuthenticated):
        return 401, {"name": "UnauthorizedError", "data": {"message": str(exc.detail)}}
    if isinstance(exc, exceptions.PermissionDenied):
        return 403, {"name": "ForbiddenError", "data": {"message": str(exc.detail)}}
    if isinstance(exc, exceptions.ValidationError):
        return 400, {"name": "BadRequestError", "data": {"message": "Invalid request", "errors": exc.detail}}
    if isinstance(exc, exceptions.APIException):
        return exc.status_code, {"name": type(exc).__name__, "data": {"message": str(exc.detail)}}
    raise exc


def error_response(exc: Exception) -> JsonResponse:
    status, body = error_body(exc)
    response = JsonResponse(body, status=status, safe=False)
    if status == 401:
        response["WWW-Authenticate"] = 'Basic realm="hangar"'
    return response
