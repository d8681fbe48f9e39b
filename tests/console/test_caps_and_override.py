"""Org caps on project settings (a project write past a cap is a 400 naming the field) and an admin's
budget override (audited; lets the gate pass for the rest of the period); auditors 403 on both writes,
other orgs 404."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.projects.models import Project
from hangar.usage.gate import usage_gate
from hangar.usage.models import Budget
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db

CAPS = "/api/orgs/{org}/project-caps"
CAPPED = {"sandbox_cpus": 2, "sandbox_memory_mb": 2048, "sandbox_disk_mb": 4096, "network_policies": ["none"]}


def set_caps(api, persona, caps, org="acme"):
    return api(persona).put(CAPS.format(org=org), {"caps": caps}, format="json")


def test_a_project_write_past_a_cap_is_a_400_naming_the_field(api, alice):
    assert set_caps(api, alice, CAPPED).status_code == 200
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for field, value in (
        ("sandbox_cpus", 4),
        ("sandbox_memory_mb", 4096),
        ("sandbox_disk_mb", 8192),
        ("network_policy", "allowlist"),
    ):
        response = api(alice).patch(url, {field: value}, format="json")
        assert response.status_code == 400, (field, response.json())
        assert list(response.json()["error"]["fields"]) == [field]
    within = api(alice).patch(url, {"sandbox_cpus": 2, "sandbox_memory_mb": 1024}, format="json")
    assert within.status_code == 200
    created = api(alice).post("/api/orgs/acme/projects/", {"name": "big", "sandbox_cpus": 3}, format="json")
    assert created.status_code == 400 and "sandbox_cpus" in created.json()["error"]["fields"]
    assert not Project.objects.filter(slug="big").exists()


def test_a_new_projects_defaults_start_within_the_caps(api, alice):
    set_caps(api, alice, {"sandbox_cpus": 0.5, "sandbox_memory_mb": 512})
    created = api(alice).post("/api/orgs/acme/projects/", {"name": "small"}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["sandbox_cpus"] == 0.5 and created.json()["sandbox_memory_mb"] == 512


def test_caps_are_audited_validated_and_report_projects_already_over(api, alice):
    Project.objects.filter(pk=alice.project.pk).update(sandbox_cpus=4)
    response = set_caps(api, alice, CAPPED)
    assert response.json()["projects_over"] == [
        {"project": alice.project.pk, "field": "sandbox_cpus", "value": 4.0}
    ]
    row = AuditEvent.objects.get(action="org.project_caps.set")
    assert row.data == {"from": {}, "to": CAPPED}
    bad = set_caps(api, alice, {"sandbox_cpus": 100})
    assert bad.status_code == 400 and "sandbox_cpus" in bad.json()["error"]["fields"]
    bad = set_caps(api, alice, {"network_policies": ["none", "open"]})
    assert bad.status_code == 400 and "network_policies[1]" in bad.json()["error"]["fields"]
    assert AuditEvent.objects.filter(action="org.project_caps.set").count() == 1


def test_caps_writes_are_admins_and_other_orgs_see_nothing(api, alice, bob, erin, charlie):
    for persona in (bob, erin):
        assert set_caps(api, persona, CAPPED).status_code == 403
    assert api(bob).get(CAPS.format(org="acme")).status_code == 200
    assert api(charlie).get(CAPS.format(org="acme")).status_code == 404
    assert set_caps(api, charlie, CAPPED).status_code == 404
    alice.org.refresh_from_db()
    assert alice.org.project_caps == {}


def gate(persona):
    return usage_gate(
        org_id=persona.org.pk,
        project_id=persona.project.pk,
        user_id=persona.user.pk,
        provider="scripted",
        model="m1",
    )


def test_an_admin_override_lets_a_blocked_org_spend_more_this_period_and_is_audited(
    api, alice, bob, erin, charlie
):
    made = api(alice).post(
        "/api/orgs/acme/budgets/", {"scope": "org", "period": "month", "hard_limit": 0.05}, format="json"
    )
    budget_id = made.json()["id"]
    record(bob, cost=0.06)
    assert gate(bob).blocked is not None
    url = f"/api/orgs/acme/budgets/{budget_id}/override"
    for persona in (bob, erin):
        assert api(persona).post(url, {"amount": 1}, format="json").status_code == 403
    assert api(charlie).post(url, {"amount": 1}, format="json").status_code == 404
    assert (
        api(charlie)
        .post(f"/api/orgs/globex/budgets/{budget_id}/override", {"amount": 1}, format="json")
        .status_code
        == 404
    )
    bad = api(alice).post(url, {"amount": -1}, format="json")
    assert bad.status_code == 400 and "amount" in bad.json()["error"]["fields"]
    overridden = api(alice).post(url, {"amount": 0.10}, format="json")
    assert overridden.status_code == 200 and overridden.json()["override"]["amount"] == 0.10
    assert gate(bob).blocked is None
    record(bob, cost=0.10)
    assert gate(bob).blocked is not None  # 0.16 spent, 0.15 allowed
    row = AuditEvent.objects.get(action="budget.override")
    assert row.data["before"]["override"] is None and row.data["after"]["override"]["amount"] == 0.10
    api(alice).post(url, {"amount": 0}, format="json")
    assert Budget.objects.get(pk=budget_id).override_for is None
