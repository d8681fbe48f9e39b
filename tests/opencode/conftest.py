"""Helpers for OpenCode-protocol tests: a client per persona on a project's base URL (Basic, as the stock
client sends, or Bearer) and validation against OpenCode 1.18.33's own OpenAPI schemas."""

import base64
import json
import os
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource
from rest_framework.test import APIClient

# The live rig (Daphne, the engine's Celery worker and scripted LLM server) for the end-to-end tests.
from tests.engine.conftest import (  # noqa: F401
    make_session,
    module_workers,
    script,
    scripted,
    sessions_made,
    start_worker,
    worker,
)
from tests.opencode.live import daphne, scripted_project  # noqa: F401

# OpenCode's real API (MIT), kept in the repository (docs/reference/) so that a plain clone needs nothing
# beside it; HANGAR_OPENCODE_SPEC overrides it.
SPEC_PATH = Path(
    os.environ.get("HANGAR_OPENCODE_SPEC")
    or Path(__file__).resolve().parents[2] / "docs/reference/opencode-1.18.33-openapi.json"
)


@lru_cache(maxsize=1)
def _spec() -> dict:
    return json.loads(SPEC_PATH.read_text())


@lru_cache(maxsize=1)
def _registry() -> Registry:
    return Registry().with_resource("spec", Resource.opaque(_spec()))


def schema_of(name: str) -> dict:
    return {"$ref": f"spec#/components/schemas/{name}"}


def response_schema(path: str, method: str, status: str = "200") -> dict:
    content = _spec()["paths"][path][method]["responses"][status]["content"]
    schema = content.get("application/json", content.get("text/event-stream"))["schema"]
    return _rebase(schema)


def _rebase(node):
    if isinstance(node, dict):
        return {k: ("spec" + v if k == "$ref" and v.startswith("#") else _rebase(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_rebase(v) for v in node]
    return node


def assert_matches(instance, schema: dict) -> None:
    """Raise jsonschema.ValidationError (naming the path) unless `instance` fits OpenCode's schema."""
    jsonschema.Draft202012Validator(schema, registry=_registry()).validate(instance)


def assert_response(response, path: str, method: str = "get", status: int = 200) -> None:
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    assert_matches(response.json(), response_schema(path, method, str(status)))


def base_url(persona_or_project) -> str:
    project = getattr(persona_or_project, "project", persona_or_project)
    return f"/oc/{project.pk}"


@pytest.fixture
def oc():
    """`oc(persona)` → an APIClient authenticated the way `opencode --attach -p <token>` is (Basic,
    username `opencode`); `oc(persona, bearer=True)` uses Bearer instead."""

    def client_for(persona=None, *, bearer: bool = False, token: str | None = None) -> APIClient:
        client = APIClient()
        raw = token or (persona.token if persona else None)
        if raw:
            if bearer:
                client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
            else:
                basic = base64.b64encode(f"opencode:{raw}".encode()).decode()
                client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
        return client

    return client_for


from tests.question_fixtures import asked, no_enqueue  # noqa: E402, F401  (fixtures: a pending question)
