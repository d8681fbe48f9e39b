"""A project's headless ask policy over the API: admins set it per trigger, a bad item is a 400 naming it,
approvers must be members who may answer, defaults fill in the expiry, nothing is half-written, and
another org's project is a 404."""

from hangar.projects.models import Project

URL = "/api/orgs/{org}/projects/{id}/"


def patch(api, persona, project, policy, org="acme"):
    return api(persona).patch(URL.format(org=org, id=project.pk), {"headless_policy": policy}, format="json")


def test_alice_sets_a_policy_per_trigger_and_reads_it_back(alice, bob, api):
    policy = {
        "webhook": {"mode": "route", "approvers": [bob.user.pk]},
        "slack": {
            "mode": "allow_listed",
            "rules": [{"permission": "bash", "pattern": "git *", "action": "allow"}],
        },
        "schedule": {"mode": "reject", "reason": "No commands at night."},
    }
    response = patch(api, alice, alice.project, policy)
    assert response.status_code == 200, response.content
    stored = response.json()["headless_policy"]
    assert stored["webhook"] == {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 3600}
    assert stored["slack"]["rules"][0]["pattern"] == "git *"
    assert stored["schedule"] == {"mode": "reject", "reason": "No commands at night."}
    assert Project.objects.get(pk=alice.project.pk).headless_policy == stored


def test_bad_items_are_a_400_naming_them_and_nothing_is_written(alice, bob, charlie, dave, api):
    cases = [
        ({"fax": {"mode": "reject"}}, "headless_policy"),
        ({"webhook": {"mode": "wait"}}, "headless_policy.webhook.mode"),
        ({"webhook": {"mode": "route"}}, "headless_policy.webhook.approvers"),
        (
            {"webhook": {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 0}},
            "headless_policy.webhook.expire_after_s",
        ),
        ({"webhook": {"mode": "route", "approvers": [charlie.user.pk]}}, "headless_policy.webhook.approvers"),
        ({"webhook": {"mode": "route", "approvers": [dave.user.pk]}}, "headless_policy.webhook.approvers"),
        (
            {"slack": {"mode": "allow_listed", "rules": [{"permission": "bash"}]}},
            "headless_policy.slack.rules[0].pattern",
        ),
        ({"api": {"mode": "reject", "reason": "x" * 1001}}, "headless_policy.api.reason"),
        ({"api": {"mode": "reject", "extra": 1}}, "headless_policy.api"),
        (["reject"], "headless_policy"),
    ]
    for policy, field in cases:
        response = patch(api, alice, alice.project, policy)
        assert response.status_code == 400, (policy, response.content)
        assert field in response.json()["error"]["fields"], (policy, response.json())
    assert Project.objects.get(pk=alice.project.pk).headless_policy == {}


def test_only_admins_set_it_and_other_orgs_are_not_found(alice, bob, charlie, api):
    assert patch(api, bob, alice.project, {"webhook": {"mode": "reject"}}).status_code == 403
    assert patch(api, charlie, alice.project, {"webhook": {"mode": "reject"}}).status_code == 404
    assert (
        patch(api, charlie, alice.project, {"webhook": {"mode": "reject"}}, org="globex").status_code == 404
    )
