"""Hold the OpenAPI schema to what the API really answers: `assert_conforms(response, operation_id)`
validates a response body against the 2xx response schema its operation declares, as the web app's
generated types (frontend/src/api/schema.d.ts) read it.

The schema is built once per test run (drf-spectacular's SchemaGenerator, as /api/schema/ serves it).
OpenAPI 3.0 is not JSON Schema: a `$ref` points into `#/components/schemas`, and `nullable: true` stands
for "or null"; both are translated before jsonschema validates. An object that declares its properties
is closed here (no `additionalProperties` means none): a key the view sends but the serializer forgets
is as much a drift as a missing one, since the generated types would not know it."""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema

COMPONENTS = "#/components/schemas/"


@functools.cache
def openapi_schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (method, path template, operation)."""
    found = {}
    for path, methods in openapi_schema()["paths"].items():
        for method, operation in methods.items():
            found[operation["operationId"]] = (method, path, operation)
    return found


def to_json_schema(node: Any, seen: tuple[str, ...] = ()) -> Any:
    """An OpenAPI 3.0 schema as plain JSON Schema: refs inlined, `nullable` as a union with null, objects
    with declared properties closed."""
    if isinstance(node, list):
        return [to_json_schema(item, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].removeprefix(COMPONENTS)
        assert name not in seen, f"a recursive schema ({' -> '.join((*seen, name))}) needs a registry"
        return to_json_schema(openapi_schema()["components"]["schemas"][name], (*seen, name))
    out = {key: to_json_schema(value, seen) for key, value in node.items() if key != "nullable"}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def response_schema(operation_id: str, status: int) -> dict[str, Any]:
    """The JSON Schema of the operation's declared `status` answer (application/json)."""
    method, path, operation = operations()[operation_id]
    declared = operation["responses"].get(str(status))
    assert declared is not None, f"{operation_id} declares no {status} answer ({method} {path})"
    content = declared.get("content", {})
    assert "application/json" in content, f"{operation_id} {status} is not JSON: {list(content)}"
    return to_json_schema(content["application/json"]["schema"])


def _path_pattern(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")


def assert_conforms(response, operation_id: str) -> Any:
    """The response's JSON body, once it is shown to be a 2xx answer of `operation_id` (its method and
    path included) that matches the declared schema exactly; AssertionError naming the first mismatch."""
    assert 200 <= response.status_code < 300, (response.status_code, response.content[:500])
    method, path, _ = operations()[operation_id]
    request = response.wsgi_request
    assert request.method.lower() == method, f"{request.method} answered, {operation_id} is {method}"
    assert _path_pattern(path).match(request.path), f"{request.path} is not {operation_id}'s {path}"
    body = response.json()
    schema = response_schema(operation_id, response.status_code)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    assert not errors, f"{operation_id}: " + "; ".join(
        f"at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:5]
    )
    return body


def free_form(schema: dict[str, Any]) -> bool:
    """A schema that says nothing of its shape: an object without declared properties or a declared value
    schema (a bare `dict`; a map of name to a declared shape is fine), or a list of such objects."""
    schema = to_json_schema(schema)
    if "anyOf" in schema:
        return any(free_form(branch) for branch in schema["anyOf"] if branch != {"type": "null"})
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return free_form(schema["allOf"][0])
    if schema.get("type") == "array":
        return free_form(schema.get("items", {}))
    if schema.get("type") in ("string", "integer", "number", "boolean"):
        return False
    values = schema.get("additionalProperties")
    if isinstance(values, dict) and values and not free_form(values):
        return False  # a map: each value has a declared shape
    return not schema.get("properties") and not schema.get("oneOf") and not schema.get("anyOf")
