"""The usage API reads the daily rollup: spend and tokens by day, member, project and model, as JSON and
CSV; owners, admins and auditors read it, members get a 403, another org a 404. Budgets and the model
allow-list are set by admins, audited with before and after; bad input is a 400 naming the field."""

import csv
import io

import pytest

from hangar.audit.models import AuditEvent
from hangar.usage.models import Budget, UsageRecord, UsageRollup
from hangar.usage.selectors import ledger_totals
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db

USAGE = "/api/orgs/{org}/usage"


def test_the_rollup_sums_the_ledger_row_for_row(alice, bob, charlie):
    record(alice, cost=0.5, input=1000, output=100)
    record(alice, cost=0.25, input=10, output=1)
    record(bob, cost=1.0, model="m2")
    record(alice, cost=0.0, outcome="error", input=0, output=0)
    record(charlie, cost=7.0)
    ledger = ledger_totals(org_id=alice.org.pk)
    calls = UsageRecord.objects.filter(org_id=alice.org.pk).count()
    for dim in ("o", "p", "u", "m"):  # each dimension's rows add up to the whole ledger
        rows = UsageRollup.objects.filter(org_id=alice.org.pk, dim=dim)
        assert sum(r.cost for r in rows) == pytest.approx(ledger["cost"]) == 1.75
        assert sum(r.calls for r in rows) == calls == 4
    alices = UsageRollup.objects.get(org_id=alice.org.pk, dim="u", key=str(alice.user.pk))
    assert (alices.calls, alices.errors, alices.input_tokens, alices.output_tokens) == (3, 1, 1010, 101)
    assert UsageRollup.objects.get(org_id=alice.org.pk, dim="m", key="scripted/m2").cost == 1.0


def test_usage_groups_by_day_member_project_and_model(api, alice, bob, charlie):
    record(alice, cost=0.5)
    record(bob, cost=1.0, model="m2")
    record(charlie, cost=9.0)  # another org: never counted
    client = api(alice)
    by_day = client.get(USAGE.format(org="acme")).json()
    assert by_day["totals"]["cost"] == 1.5 and by_day["totals"]["calls"] == 2
    assert len(by_day["rows"]) == 1 and by_day["rows"][0]["cost"] == 1.5
    members = client.get(USAGE.format(org="acme"), {"group_by": "member"}).json()["rows"]
    assert {(r["member"], r["cost"]) for r in members} == {("alice@acme.test", 0.5), ("bob@acme.test", 1.0)}
    projects = client.get(USAGE.format(org="acme"), {"group_by": "project"}).json()["rows"]
    assert [(r["project"], r["cost"]) for r in projects] == [("rocket", 1.5)]
    models = client.get(USAGE.format(org="acme"), {"group_by": "model"}).json()["rows"]
    assert [(r["model"], r["calls"]) for r in models] == [("m1", 1), ("m2", 1)]


def test_usage_exports_csv(api, alice, bob):
    record(alice, cost=0.5)
    record(bob, cost=1.0)
    response = api(alice).get(USAGE.format(org="acme") + "/export.csv", {"group_by": "member"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {(r["member"], float(r["cost"])) for r in rows} == {
        ("alice@acme.test", 0.5),
        ("bob@acme.test", 1.0),
    }


def test_calls_whose_tokens_hangar_estimated_are_counted_apart_in_the_report_and_csv(api, alice, bob):
    """A server that reports no usage (the bundled model): its calls' tokens are Hangar's count, and
    every reading of usage says how many calls of a row are such estimates."""
    record(alice, input=400, output=40, estimated=True)
    record(alice, input=100, output=10)
    record(bob, input=100, output=10)
    assert list(UsageRecord.objects.order_by("pk").values_list("tokens_estimated", flat=True)) == [
        True,
        False,
        False,
    ]
    report = api(alice).get(USAGE.format(org="acme"), {"group_by": "member"}).json()
    assert report["totals"]["estimated_calls"] == 1 and report["totals"]["calls"] == 3
    assert {r["member"]: r["estimated_calls"] for r in report["rows"]} == {
        "alice@acme.test": 1,
        "bob@acme.test": 0,
    }
    response = api(alice).get(USAGE.format(org="acme") + "/export.csv", {"group_by": "member"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {r["member"]: r["estimated_calls"] for r in rows} == {"alice@acme.test": "1", "bob@acme.test": "0"}


def test_the_usage_csv_escapes_model_ids_a_spreadsheet_would_read_as_formulas(api, alice):
    record(alice, cost=0.5, model='=cmd|" /C calc"!A0')
    record(alice, cost=0.25, model="@SUM(1+1)")
    record(alice, cost=0.125, model="\r=1+1")
    response = api(alice).get(USAGE.format(org="acme") + "/export.csv", {"group_by": "model"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))
    assert {(r["model"], float(r["cost"])) for r in rows} == {
        ('\'=cmd|" /C calc"!A0', 0.5),
        ("'@SUM(1+1)", 0.25),
        ("'\r=1+1", 0.125),
    }


def test_a_range_outside_the_spend_is_empty_and_bad_input_names_the_field(api, alice):
    record(alice, cost=0.5)
    client = api(alice)
    empty = client.get(USAGE.format(org="acme"), {"from": "2020-01-01", "to": "2020-01-31"}).json()
    assert empty["rows"] == [] and empty["totals"]["cost"] == 0
    for params, field in (
        ({"from": "yesterday"}, "from"),
        ({"to": "2020-13-01"}, "to"),
        ({"from": "2021-01-02", "to": "2021-01-01"}, "from"),
        ({"group_by": "colour"}, "group_by"),
    ):
        response = client.get(USAGE.format(org="acme"), params)
        assert response.status_code == 400 and field in response.json()["error"]["fields"]


def test_auditors_and_admins_read_usage_members_do_not_other_orgs_get_404(api, alice, bob, erin, charlie):
    record(alice)
    assert api(alice).get(USAGE.format(org="acme")).status_code == 200
    assert api(erin).get(USAGE.format(org="acme")).status_code == 200
    assert api(erin).get(USAGE.format(org="acme") + "/export.csv").status_code == 200
    assert api(bob).get(USAGE.format(org="acme")).status_code == 403
    assert api(charlie).get(USAGE.format(org="acme")).status_code == 404
    assert api(charlie).get(USAGE.format(org="acme") + "/export.csv").status_code == 404
    assert api(erin).get(USAGE.format(org="globex")).status_code == 404


BUDGETS = "/api/orgs/acme/budgets/"


def test_an_admin_sets_a_budget_audited_with_before_and_after(api, alice, bob):
    client = api(alice)
    created = client.post(
        BUDGETS,
        {"scope": "project", "project": alice.project.pk, "period": "day", "hard_limit": 5},
        format="json",
    )
    assert created.status_code == 200, created.content
    row = AuditEvent.objects.filter(action="budget.set").latest("id")
    assert row.data["before"] is None and row.data["after"]["hard_limit"] == 5.0
    assert row.actor_label == "alice@acme.test" or row.actor_type == "token"
    changed = client.post(
        BUDGETS,
        {"scope": "project", "project": alice.project.pk, "period": "day", "hard_limit": 8, "soft_limit": 6},
        format="json",
    )
    assert changed.json()["id"] == created.json()["id"]  # one budget per scope, target and period
    row = AuditEvent.objects.filter(action="budget.set").latest("id")
    assert (row.data["before"]["hard_limit"], row.data["after"]["hard_limit"]) == (5.0, 8.0)
    member = client.post(
        BUDGETS, {"scope": "member", "member": bob.user.pk, "period": "month", "soft_limit": 1}, format="json"
    )
    assert member.status_code == 200
    assert [b["scope"] for b in client.get(BUDGETS).json()] == ["project", "member"]
    assert client.delete(BUDGETS + str(member.json()["id"])).status_code == 204
    assert (
        AuditEvent.objects.filter(action="budget.delete").latest("id").data["before"]["member"] == bob.user.pk
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope": "galaxy", "period": "day", "hard_limit": 1}, "scope"),
        ({"scope": "org", "period": "week", "hard_limit": 1}, "period"),
        ({"scope": "org", "period": "day", "hard_limit": -1}, "hard_limit"),
        ({"scope": "org", "period": "day"}, "hard_limit"),
        ({"scope": "org", "period": "day", "hard_limit": 1, "soft_limit": 2}, "soft_limit"),
        ({"scope": "project", "period": "day", "hard_limit": 1}, "project"),
        ({"scope": "member", "period": "day", "hard_limit": 1, "member": 999999}, "member"),
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field_and_writes_nothing(api, alice, body, field):
    response = api(alice).post(BUDGETS, body, format="json")
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    assert not Budget.objects.exists() and not AuditEvent.objects.filter(action="budget.set").exists()


def test_a_budget_cannot_name_another_orgs_project_or_member(api, alice, charlie):
    client = api(alice)
    foreign_project = {"scope": "project", "project": charlie.project.pk, "period": "day", "hard_limit": 1}
    foreign_member = {"scope": "member", "member": charlie.user.pk, "period": "day", "hard_limit": 1}
    assert client.post(BUDGETS, foreign_project, format="json").status_code == 400
    assert client.post(BUDGETS, foreign_member, format="json").status_code == 400


def test_members_and_auditors_cannot_set_budgets_and_other_orgs_get_404(api, alice, bob, erin, charlie):
    body = {"scope": "org", "period": "month", "hard_limit": 100}
    budget_id = api(alice).post(BUDGETS, body, format="json").json()["id"]
    assert api(bob).post(BUDGETS, body, format="json").status_code == 403
    assert api(erin).post(BUDGETS, body, format="json").status_code == 403
    assert api(erin).delete(f"{BUDGETS}{budget_id}").status_code == 403
    assert api(erin).get(BUDGETS).status_code == 200  # auditors read spend limits
    assert api(bob).get(BUDGETS).status_code == 403
    assert api(charlie).get(BUDGETS).status_code == 404
    assert api(charlie).post(BUDGETS, body, format="json").status_code == 404
    assert api(charlie).get(f"{BUDGETS}{budget_id}").status_code == 404
    assert api(charlie).delete("/api/orgs/globex/budgets/" + str(budget_id)).status_code == 404
    assert Budget.objects.filter(pk=budget_id).exists()


def test_an_admin_edits_a_budgets_limits_in_place_audited(api, alice):
    client = api(alice)
    body = {
        "scope": "project",
        "project": alice.project.pk,
        "period": "month",
        "hard_limit": 50,
        "soft_limit": 40,
    }
    budget_id = client.post(BUDGETS, body, format="json").json()["id"]
    edited = client.patch(f"{BUDGETS}{budget_id}", {"hard_limit": 80, "soft_limit": None}, format="json")
    assert edited.status_code == 200, edited.content
    assert (edited.json()["id"], edited.json()["hard_limit"], edited.json()["soft_limit"]) == (
        budget_id,
        80.0,
        None,
    )
    assert (edited.json()["scope"], edited.json()["project"], edited.json()["period"]) == (
        "project",
        alice.project.pk,
        "month",
    )
    row = AuditEvent.objects.filter(action="budget.set").latest("id")
    assert (row.data["before"]["hard_limit"], row.data["after"]["hard_limit"]) == (50.0, 80.0)
    assert Budget.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hard_limit": -1}, "hard_limit"),
        ({"hard_limit": None, "soft_limit": None}, "hard_limit"),
        ({"hard_limit": 10, "soft_limit": 20}, "soft_limit"),
        ({"hard_limit": "lots"}, "hard_limit"),
    ],
)
def test_a_bad_budget_edit_is_a_400_naming_the_field_and_changes_nothing(api, alice, body, field):
    client = api(alice)
    budget_id = client.post(
        BUDGETS, {"scope": "org", "period": "day", "hard_limit": 5}, format="json"
    ).json()["id"]
    response = client.patch(f"{BUDGETS}{budget_id}", body, format="json")
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    assert Budget.objects.get(pk=budget_id).hard_limit == 5.0


def test_only_the_orgs_admins_edit_a_budget_and_another_org_gets_404(api, alice, bob, erin, charlie):
    budget_id = (
        api(alice)
        .post(BUDGETS, {"scope": "org", "period": "day", "hard_limit": 5}, format="json")
        .json()["id"]
    )
    assert api(bob).patch(f"{BUDGETS}{budget_id}", {"hard_limit": 9}, format="json").status_code == 403
    assert api(erin).patch(f"{BUDGETS}{budget_id}", {"hard_limit": 9}, format="json").status_code == 403
    assert api(charlie).patch(f"{BUDGETS}{budget_id}", {"hard_limit": 9}, format="json").status_code == 404
    foreign = f"/api/orgs/globex/budgets/{budget_id}"
    assert api(charlie).patch(foreign, {"hard_limit": 9}, format="json").status_code == 404
    assert Budget.objects.get(pk=budget_id).hard_limit == 5.0


ALLOW = "/api/orgs/acme/model-allowlist"


def test_an_admin_sets_the_model_allowlist_audited_and_others_cannot(api, alice, bob, erin, charlie):
    response = api(alice).put(ALLOW, {"models": ["scripted/ok", "gpt-4o"]}, format="json")
    assert response.status_code == 200 and response.json()["models"] == ["scripted/ok", "gpt-4o"]
    row = AuditEvent.objects.filter(action="policy.model_allowlist.set").latest("id")
    assert row.data == {"before": [], "after": ["scripted/ok", "gpt-4o"]}
    assert api(erin).get(ALLOW).json()["models"] == ["scripted/ok", "gpt-4o"]
    assert api(erin).put(ALLOW, {"models": []}, format="json").status_code == 403
    assert api(bob).put(ALLOW, {"models": []}, format="json").status_code == 403
    assert api(charlie).put(ALLOW, {"models": []}, format="json").status_code == 404
    bad = api(alice).put(ALLOW, {"models": "gpt-4o"}, format="json")
    assert bad.status_code == 400 and "models" in bad.json()["error"]["fields"]
