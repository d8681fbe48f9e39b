"""The usage, budget, allow-list and project-cap answers are exactly what their output serializers declare
(tests.api.schema_check): each operation called for real, in the states whose shapes differ (no rows and
rows of each grouping, a budget with and without an override, no caps and caps some projects exceed)."""

import pytest

from hangar.projects.models import Project
from tests.api.schema_check import assert_conforms
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db

ORG = "/api/orgs/acme"


def test_the_usage_report_conforms_empty_and_in_every_grouping(api, alice, bob):
    client = api(alice)
    empty = assert_conforms(
        client.get(f"{ORG}/usage", {"from": "2020-01-01", "to": "2020-01-02"}), "usage_report"
    )
    assert empty["rows"] == [] and empty["totals"]["calls"] == 0
    record(alice, cost=0.5, input=1000, output=100)
    record(bob, cost=0.25, model="m2", estimated=True)
    for group, label in (("day", "day"), ("member", "member"), ("project", "project"), ("model", "model")):
        body = assert_conforms(client.get(f"{ORG}/usage", {"group_by": group}), "usage_report")
        assert body["group_by"] == group and body["rows"] and all(label in row for row in body["rows"])
        assert body["totals"]["cost"] == 0.75 and body["totals"]["estimated_calls"] == 1


def test_budgets_conform_with_and_without_an_override(api, alice, bob):
    client = api(alice)
    assert assert_conforms(client.get(f"{ORG}/budgets/"), "budgets_list") == []
    org_budget = assert_conforms(
        client.post(f"{ORG}/budgets/", {"scope": "org", "period": "month", "hard_limit": 10}, format="json"),
        "budgets_set",
    )
    assert (
        org_budget["override"] is None and org_budget["project"] is None and org_budget["soft_limit"] is None
    )
    member_budget = {"scope": "member", "period": "day", "soft_limit": 1.5, "member": bob.user.pk}
    assert_conforms(client.post(f"{ORG}/budgets/", member_budget, format="json"), "budgets_set")
    project_budget = {"scope": "project", "period": "day", "hard_limit": 2, "project": alice.project.pk}
    assert_conforms(client.post(f"{ORG}/budgets/", project_budget, format="json"), "budgets_set")
    url = f"{ORG}/budgets/{org_budget['id']}"
    overridden = assert_conforms(
        client.post(f"{url}/override", {"amount": 5}, format="json"), "budgets_override"
    )
    assert overridden["override"]["amount"] == 5.0
    assert assert_conforms(client.get(url), "budgets_get")["override"]["period_start"]
    listed = assert_conforms(client.get(f"{ORG}/budgets/"), "budgets_list")
    assert [b["scope"] for b in listed] == ["org", "member", "project"]
    withdrawn = assert_conforms(
        client.post(f"{url}/override", {"amount": 0}, format="json"), "budgets_override"
    )
    assert withdrawn["override"] is None
    patched = assert_conforms(
        client.patch(url, {"hard_limit": None, "soft_limit": 3}, format="json"), "budgets_update"
    )
    assert patched["hard_limit"] is None


def test_the_model_allow_list_conforms_empty_and_set(api, alice):
    client = api(alice)
    assert assert_conforms(client.get(f"{ORG}/model-allowlist"), "model_allowlist_get") == {"models": []}
    models = {"models": ["scripted/m1", "gpt-4o"]}
    assert_conforms(client.put(f"{ORG}/model-allowlist", models, format="json"), "model_allowlist_set")
    assert set(assert_conforms(client.get(f"{ORG}/model-allowlist"), "model_allowlist_get")["models"]) == {
        "scripted/m1",
        "gpt-4o",
    }


def test_project_caps_conform_without_caps_and_with_projects_over_them(api, alice, bob):
    """`projects_over` names numeric fields (a number) and the network policy (a string)."""
    none = assert_conforms(api(bob).get(f"{ORG}/project-caps"), "project_caps_get")
    assert none == {"caps": {}, "projects_over": []}
    Project.objects.filter(pk=alice.project.pk).update(sandbox_cpus=2, network_policy="allowlist")
    caps = {"caps": {"sandbox_cpus": 1, "sandbox_memory_mb": 4096, "network_policies": ["none"]}}
    answer = assert_conforms(api(alice).put(f"{ORG}/project-caps", caps, format="json"), "project_caps_set")
    over = {(row["field"], row["value"]) for row in answer["projects_over"]}
    assert ("sandbox_cpus", 2) in over and ("network_policy", "allowlist") in over
    assert assert_conforms(api(bob).get(f"{ORG}/project-caps"), "project_caps_get") == answer
