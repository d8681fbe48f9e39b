"""A member's own permission rules (the member layer): each person reads and replaces only their own,
bounded and validated, audited; another org's are a 404; the preview shows them deciding."""

from hangar.accounts.models import Membership
from hangar.audit.models import AuditEvent

URL = "/api/orgs/{org}/me/permission-rules"
ASK_PUSH = [{"permission": "bash", "pattern": "git push*", "action": "ask"}]


def test_bob_keeps_his_own_rules_and_alice_does_not_see_them_as_hers(alice, bob, api):
    response = api(bob).put(URL.format(org="acme"), {"rules": ASK_PUSH}, format="json")
    assert response.status_code == 200, response.content
    assert api(bob).get(URL.format(org="acme")).json() == {"rules": ASK_PUSH}
    assert api(alice).get(URL.format(org="acme")).json() == {"rules": []}
    assert Membership.objects.get(user=bob.user, org=bob.org).permission_rules == ASK_PUSH
    event = AuditEvent.objects.get(action="member.permission_rules.set")
    assert event.org_id == bob.org.pk and event.data["to"] == ASK_PUSH


def test_the_preview_shows_the_callers_own_rule_narrowing(alice, bob, api):
    api(alice).put(
        "/api/orgs/acme/permission-policy",
        {"rules": [{"permission": "bash", "pattern": "*", "action": "allow"}]},
        format="json",
    )
    api(bob).put(URL.format(org="acme"), {"rules": ASK_PUSH}, format="json")
    body = {"tool": "bash", "pattern": "git push origin main"}
    bobs = api(bob).post("/api/orgs/acme/permission-preview", body, format="json").json()
    assert bobs["action"] == "ask" and bobs["decided_by"]["layer"] == "member"
    assert "only narrow" in bobs["why"]
    alices = api(alice).post("/api/orgs/acme/permission-preview", body, format="json").json()
    assert alices["action"] == "allow" and alices["decided_by"]["layer"] == "org"
    tried = (
        api(alice)
        .post(
            "/api/orgs/acme/permission-preview",
            {**body, "session_rules": [{"permission": "bash", "pattern": "git *", "action": "deny"}]},
            format="json",
        )
        .json()
    )
    assert tried["action"] == "deny" and tried["decided_by"]["layer"] == "session"


def test_bad_or_too_many_rules_are_a_400_naming_the_field(bob, api):
    bad = [{"permission": "bash", "pattern": "*", "action": "maybe"}]
    response = api(bob).put(URL.format(org="acme"), {"rules": bad}, format="json")
    assert response.status_code == 400 and "rules[0].action" in response.json()["error"]["fields"]
    many = [{"permission": "bash", "pattern": f"x{i}", "action": "ask"} for i in range(201)]
    response = api(bob).put(URL.format(org="acme"), {"rules": many}, format="json")
    assert response.status_code == 400 and "rules" in response.json()["error"]["fields"]
    assert Membership.objects.get(user=bob.user, org=bob.org).permission_rules == []


def test_it_rejects_other_org(alice, charlie, api):
    assert api(charlie).get(URL.format(org="acme")).status_code == 404
    assert api(charlie).put(URL.format(org="acme"), {"rules": []}, format="json").status_code == 404
    assert api().get(URL.format(org="acme")).status_code == 401
