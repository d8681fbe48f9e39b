"""Domain errors: what a service, a selector or the engine refuses, said without HTTP. Below the edges code
raises these (never `rest_framework.exceptions`: a contract in .importlinter keeps DRF at the edges); each
edge maps them to its HTTP answer in one place: `hangar.api.errors` (the REST API's JSON errors) and
`hangar.opencode.errors` (OpenCode's error bodies). NotFound is a 404 (a foreign object too: it never leaks
existence), PermissionDenied a 403, NotAuthenticated a 401, ValidationError a 400 that names each bad field
(`detail` a dict of field → messages, or a message or list of messages)."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    default_detail = "The request was refused."

    def __init__(self, detail: Any = None, code: str | None = None) -> None:
        self.detail = self.default_detail if detail is None else detail
        self.code = code
        super().__init__(self.detail)


class NotFound(DomainError):
    default_detail = "Not found."


class PermissionDenied(DomainError):
    default_detail = "You do not have permission to perform this action."


class NotAuthenticated(DomainError):
    default_detail = "Authentication credentials were not provided."


class AuthenticationFailed(NotAuthenticated):
    """Credentials were given and are not usable (a wrong, expired or revoked token): a 401 saying why."""

    default_detail = "Incorrect authentication credentials."


class ValidationError(DomainError):
    default_detail = "Invalid input."
