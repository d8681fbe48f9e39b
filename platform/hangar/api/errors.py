"""Uniform JSON errors: `{"error": {"code", "message", "fields"?}}`. A 400 names each bad field. The one place
the REST API maps the domain errors raised below the edges (hangar.errors) to HTTP."""

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from hangar import errors

# The domain errors raised below the edges (hangar.errors), as the HTTP errors DRF answers with.
AS_HTTP: dict[type[errors.DomainError], type[exceptions.APIException]] = {
    errors.NotFound: exceptions.NotFound,
    errors.PermissionDenied: exceptions.PermissionDenied,
    errors.NotAuthenticated: exceptions.NotAuthenticated,
    errors.AuthenticationFailed: exceptions.AuthenticationFailed,
    errors.ValidationError: exceptions.ValidationError,
}


def as_http(exc: Exception) -> Exception:
    """`exc` as DRF's exception when it is a domain error, else itself."""
    if isinstance(exc, errors.DomainError):
        return AS_HTTP.get(type(exc), exceptions.APIException)(exc.detail, code=exc.code)
    return exc


def exception_handler(exc, context):
    exc = as_http(exc)
    if isinstance(exc, ObjectDoesNotExist):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        names = ", ".join(str(name) for name in fields)
        body = {"error": {"code": "invalid", "message": f"Invalid input: {names}", "fields": fields}}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Http404 | exceptions.NotFound):
        response.data = {"error": {"code": "not_found", "message": "Not found."}}
        return response
    detail = response.data.get("detail") if isinstance(response.data, dict) else response.data
    code = getattr(getattr(exc, "detail", None), "code", None) or getattr(exc, "default_code", "error")
    response.data = {"error": {"code": str(code), "message": str(detail)}}
    return response
