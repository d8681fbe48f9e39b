"""The audit log's IP: X-Forwarded-For is trusted only behind proxies the operator declares."""

from hangar.audit.models import AuditEvent


def _create_project(api, persona, **headers):
    return api(persona).post("/api/orgs/acme/projects/", {"name": "ip-probe"}, format="json", **headers)


def test_a_forged_forwarded_header_does_not_reach_the_audit_log(api, alice, settings):
    settings.HANGAR_TRUSTED_PROXY_HOPS = 0
    assert (
        _create_project(api, alice, HTTP_X_FORWARDED_FOR="6.6.6.6", REMOTE_ADDR="10.0.0.7").status_code == 201
    )
    assert AuditEvent.objects.get(action="project.create").ip == "10.0.0.7"


def test_behind_one_trusted_proxy_the_address_it_saw_is_recorded(api, alice, settings):
    settings.HANGAR_TRUSTED_PROXY_HOPS = 1
    response = _create_project(
        api, alice, HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9", REMOTE_ADDR="10.0.0.7"
    )
    assert response.status_code == 201
    assert AuditEvent.objects.get(action="project.create").ip == "203.0.113.9"
