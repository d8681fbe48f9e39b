"""The org-wide permission policy: members read it, admins and owners replace it, other orgs see 404."""

from hangar.audit.models import AuditEvent

URL = "/api/orgs/{org}/permission-policy"
DENY_CURL = [{"permission": "bash", "pattern": "curl *", "action": "deny"}]


def test_alice_sets_the_policy_and_it_is_audited(alice, api):
    response = api(alice).put(URL.format(org="acme"), {"rules": DENY_CURL}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"rules": DENY_CURL}
    alice.org.refresh_from_db()
    assert alice.org.permission_policy == DENY_CURL
    event = AuditEvent.objects.get(action="org.permission_policy.set")
    assert event.org_id == alice.org.pk and event.data["to"] == DENY_CURL


def test_bob_reads_the_policy_but_cannot_change_it(alice, bob, api):
    api(alice).put(URL.format(org="acme"), {"rules": DENY_CURL}, format="json")
    assert api(bob).get(URL.format(org="acme")).json() == {"rules": DENY_CURL}
    assert api(bob).put(URL.format(org="acme"), {"rules": []}, format="json").status_code == 403


def test_it_rejects_other_org(alice, charlie, api):
    assert api(charlie).get(URL.format(org="acme")).status_code == 404
    assert api(charlie).put(URL.format(org="acme"), {"rules": []}, format="json").status_code == 404
    assert api().get(URL.format(org="acme")).status_code == 401


def test_a_bad_action_is_a_400_naming_the_rule(alice, api):
    bad = [{"permission": "bash", "pattern": "*", "action": "maybe"}]
    response = api(alice).put(URL.format(org="acme"), {"rules": bad}, format="json")
    assert response.status_code == 400
    assert "rules[0].action" in response.json()["error"]["fields"]
