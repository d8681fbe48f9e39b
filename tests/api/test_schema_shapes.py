"""Every /api answer has a declared shape, and the web app's types are that shape: no operation answers a
free-form object (a new endpoint without an output serializer fails here), the conformance check
(tests.api.schema_check) refuses what a serializer does not declare, and the committed
frontend/src/api/schema.d.ts is exactly what openapi-typescript makes of the schema today."""

import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.api.schema_check import free_form, openapi_schema, response_schema, to_json_schema

ROOT = Path(__file__).resolve().parents[2]
TYPES = ROOT / "frontend" / "src" / "api" / "schema.d.ts"
OPENAPI_TS = ROOT / "frontend" / "node_modules" / ".bin" / "openapi-typescript"


def test_no_api_operation_answers_a_free_form_object():
    """Downloads and streams declare their own content type (CSV, gzip, zip) and are not JSON; every JSON
    success answer under /api/ names its fields."""
    loose = []
    for path, methods in openapi_schema()["paths"].items():
        if not path.startswith("/api/"):
            continue  # /oc/ is OpenCode's own protocol, typed by its reference, not by Hangar's serializers
        for method, operation in methods.items():
            for status, answer in operation["responses"].items():
                json_body = answer.get("content", {}).get("application/json")
                if status.startswith("2") and json_body and free_form(json_body["schema"]):
                    loose.append(f"{method.upper()} {path} ({operation['operationId']}, {status})")
    assert not loose, "declare an output serializer in extend_schema(responses=...) for: " + ", ".join(loose)


def test_free_form_spots_a_bare_dict_and_a_list_of_them_but_not_a_declared_shape():
    assert free_form({"type": "object", "additionalProperties": {}})
    assert free_form({"type": "array", "items": {"type": "object"}})
    assert not free_form({"type": "array", "items": {"type": "string"}})
    assert not free_form({"$ref": "#/components/schemas/BudgetOut"})
    assert not free_form(
        {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/BudgetOut"}}
    )
    assert free_form({"type": "object", "additionalProperties": {"type": "object"}})


def _valid(schema, body) -> bool:
    return jsonschema.Draft7Validator(schema).is_valid(body)


def test_the_conformance_check_refuses_an_undeclared_key_a_missing_one_and_an_undeclared_null():
    schema = response_schema("budgets_get", 200)
    budget = {
        "id": 1,
        "scope": "org",
        "project": None,
        "member": None,
        "period": "month",
        "hard_limit": 10.0,
        "soft_limit": None,
        "override": None,
        "updated_at": "2026-01-01T00:00:00Z",
    }
    assert _valid(schema, budget)
    assert _valid(schema, budget | {"override": {"amount": 5.0, "period_start": "2026-01-01"}})
    assert not _valid(schema, budget | {"alerted_for": None})  # a key the serializer does not declare
    assert not _valid(schema, {k: v for k, v in budget.items() if k != "override"})  # a missing one
    assert not _valid(schema, budget | {"id": None})  # null where the serializer does not allow it
    assert not _valid(schema, budget | {"scope": "galaxy"})  # outside the declared choices
    assert not _valid(schema, budget | {"override": {"amount": 5.0}})  # a nested shape, checked too


def test_nullable_becomes_a_union_with_null_and_refs_are_inlined():
    translated = to_json_schema(
        {"nullable": True, "allOf": [{"$ref": "#/components/schemas/BudgetOverrideOut"}]}
    )
    assert translated["anyOf"][1] == {"type": "null"}
    assert translated["anyOf"][0]["allOf"][0]["properties"]["amount"]["type"] == "number"
    assert translated["anyOf"][0]["allOf"][0]["additionalProperties"] is False


@pytest.mark.timeout(120)
def test_the_web_apps_api_types_are_generated_from_the_current_schema(tmp_path):
    """What `make schema` writes is what is committed: an endpoint changed without regenerating the types
    fails here (the web app would otherwise type-check against a stale API)."""
    assert OPENAPI_TS.exists(), "frontend/node_modules is missing: run deploy/setup.sh (or frontend/build.sh)"
    spec, types = tmp_path / "openapi.yaml", tmp_path / "schema.d.ts"
    # The same commands as `make schema`, into a temporary directory.
    subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--file", str(spec)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=90,
    )
    subprocess.run(
        [str(OPENAPI_TS), str(spec), "-o", str(types)],
        cwd=ROOT / "frontend",
        check=True,
        capture_output=True,
        timeout=90,
    )
    committed = TYPES.read_text() if TYPES.exists() else ""
    assert types.read_text() == committed, (
        "frontend/src/api/schema.d.ts is not what the API's schema generates: run `make schema` and commit it"
    )
