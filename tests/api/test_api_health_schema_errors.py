"""Health, the OpenAPI schema and docs, and malformed bodies."""

import pytest

from hangar.projects.models import Project


@pytest.mark.docker  # the detail asks the Docker engine how it is (tests/tiers.py)
def test_health_detail_needs_a_signed_in_user_and_reports_each_dependency_and_sandbox_disk(api, alice):
    response = api(alice).get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert set(body["checks"]) == {"postgres", "redis", "docker", "workers", "sandbox_disk"}
    assert body["checks"]["postgres"]["status"] == "ok" and body["checks"]["redis"]["status"] == "ok"
    assert body["checks"]["docker"]["status"] == "ok"  # dockerd runs on these machines
    assert body["checks"]["sandbox_disk"]["status"] == "ok"
    assert "MB free" in body["checks"]["sandbox_disk"]["detail"]
    assert body["status"] == ("ok" if body["checks"]["workers"]["status"] == "ok" else "degraded")
    assert "acme" not in response.content.decode()


def test_public_health_is_a_cheap_liveness_without_checks(api, db, monkeypatch):
    import hangar.health

    def forbidden():
        raise AssertionError("the public liveness must not ping Celery or Docker")

    monkeypatch.setattr(hangar.health, "check_workers", forbidden)
    monkeypatch.setattr(hangar.health, "check_docker", forbidden)
    response = api().get("/api/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}, response.content


def test_health_is_503_when_redis_is_down_and_says_no_more(api, alice, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    public = api().get("/api/health")
    assert public.status_code == 503 and public.json() == {"status": "error"}
    detail = api(alice).get("/api/health")
    assert detail.status_code == 503 and detail.json()["checks"]["redis"] == {
        "status": "error",
        "detail": "ConnectionError",
    }
    assert "127.0.0.1" not in detail.content.decode() and "refused" not in detail.content.decode()


def test_the_whole_site_generates_a_valid_schema_without_warnings():
    """Every view (REST, sessions, grants, the OpenCode protocol) documents itself cleanly."""
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, "drf-spectacular reported warnings or errors"
    validate_schema(schema)
    assert "/api/orgs/{org}/projects/{project_id}/env/{name}" in schema["paths"]
    assert "/oc/{project_id}/session/{session_id}/abort" in schema["paths"]


@pytest.mark.django_db
def test_swagger_ui_is_served_offline(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger-ui" in response.content and b"cdn.jsdelivr" not in response.content


def test_bad_json_is_a_400_with_a_parse_error(api, alice):
    response = api(alice).generic(
        "POST", "/api/orgs/acme/projects/", '{"name": ', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert "JSON parse error" in response.json()["error"]["message"]


def test_a_missing_required_field_is_named(api, alice):
    response = api(alice).post("/api/orgs/acme/projects/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Invalid input: name"
    assert Project.objects.filter(org=alice.org).count() == 1
