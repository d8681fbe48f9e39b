"""The org's instructions to the agent: members read them, admins and owners replace them (audited),
other orgs see 404, and what is too long or not text is a 400 that names the field."""

from hangar.audit.models import AuditEvent

URL = "/api/orgs/{org}/instructions"


def test_alice_sets_the_instructions_and_it_is_audited(alice, api):
    response = api(alice).put(URL.format(org="acme"), {"text": "  Write tests first.\n"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"text": "Write tests first."}
    alice.org.refresh_from_db()
    assert alice.org.instructions == "Write tests first."
    event = AuditEvent.objects.get(action="org.instructions.set")
    assert event.org_id == alice.org.pk and event.data == {"from": "", "to": "Write tests first."}


def test_bob_reads_them_but_cannot_change_them(alice, bob, api):
    api(alice).put(URL.format(org="acme"), {"text": "Be brief."}, format="json")
    assert api(bob).get(URL.format(org="acme")).json() == {"text": "Be brief."}
    assert api(bob).put(URL.format(org="acme"), {"text": ""}, format="json").status_code == 403


def test_another_org_and_no_credentials_see_nothing(alice, charlie, api):
    assert api(charlie).get(URL.format(org="acme")).status_code == 404
    assert api(charlie).put(URL.format(org="acme"), {"text": "x"}, format="json").status_code == 404
    assert api().get(URL.format(org="acme")).status_code == 401


def test_too_long_or_not_text_is_refused_and_nothing_changes(alice, api):
    for body in ({"text": "x" * 20_001}, {"text": ["x"]}, {"text": "nul\x00"}, {}):
        response = api(alice).put(URL.format(org="acme"), body, format="json")
        assert response.status_code == 400, body
        assert "text" in response.json()["error"]["fields"]
    alice.org.refresh_from_db()
    assert alice.org.instructions == ""
