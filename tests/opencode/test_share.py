"""`/share` and `/unshare` (OpenCode's POST and DELETE /session/{id}/share) and the link's read-only view
(GET /api/shares/<token>): the session comes back with `share.url`, a link into Hangar's own web app; the
view opens for the org's members only, or for anyone where the org's policy is `link`; an org whose policy
is `off` refuses to share and its old links stop opening; a link expires and /unshare revokes it; both are
audited without the token; the view masks secret values and credential-shaped strings and keeps no step
bookkeeping or file contents; another org's member gets a 404 everywhere."""

from datetime import timedelta

import pytest
from django.utils import timezone

from hangar.accounts.models import Role
from hangar.audit.models import AuditEvent
from hangar.conversations import services as store
from hangar.conversations.models import Session, SessionShare
from hangar.conversations.services import session_create
from hangar.projects.crypto import encrypt
from hangar.projects.models import ProjectEnvVar
from tests.conftest import make_persona
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db

MODEL = {"providerID": "scripted", "modelID": "m"}
PATH = "/session/{sessionID}/share"


@pytest.fixture
def shared(alice):
    """alice's session with one exchange: a prompt, and an answer that ran a tool and printed secrets."""
    session = session_create(actor=alice.actor, project=alice.project, title="Fix the parser", model=MODEL)
    ProjectEnvVar.objects.create(
        project=alice.project, name="DEPLOY_KEY", value_encrypted=encrypt("hunter2-deploy"), secret=True
    )
    user = store.message_create(
        session=session,
        data={"role": "user", "time": {"created": 1}, "agent": "build", "model": MODEL},
        parts=[
            {"type": "text", "text": "fix it"},
            {
                "type": "file",
                "mime": "text/plain",
                "url": "data:text/plain;base64,c2VjcmV0",
                "filename": "a.txt",
            },
        ],
    )
    store.message_create(
        session=session,
        data={
            "role": "assistant",
            "time": {"created": 2, "completed": 3},
            "parentID": user.pk,
            "modelID": "m",
            "providerID": "scripted",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/workspace", "root": "/workspace"},
            "cost": 0.5,
            "tokens": {"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "finish": "stop",
        },
        parts=[
            {"type": "step-start"},
            {"type": "text", "text": "Fixed. The key was hunter2-deploy and sk-abcdefghijklmnopqrstuvwx."},
            {
                "type": "tool",
                "tool": "bash",
                "callID": "c1",
                "state": {
                    "status": "completed",
                    "input": {"command": "env"},
                    "output": "DEPLOY_KEY=hunter2-deploy\nTOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123",
                    "title": "env",
                    "metadata": {"output": "DEPLOY_KEY=hunter2-deploy"},
                    "time": {"start": 2, "end": 3},
                },
            },
        ],
    )
    return session


def share(oc, persona, session, method="post"):
    return getattr(oc(persona), method)(f"{base_url(persona)}/session/{session.pk}/share")


def token_of(response) -> str:
    return response.json()["share"]["url"].rsplit("/share/", 1)[1]


def test_share_gives_a_link_into_the_web_app_and_unshare_revokes_it(oc, api, alice, shared):
    response = share(oc, alice, shared)
    assert_response(response, PATH, "post")
    url = response.json()["share"]["url"]
    assert url.startswith("http://") and "/share/" in url
    token = token_of(response)
    assert share(oc, alice, shared).json()["share"]["url"] == url  # sharing again: the same live link
    assert oc(alice).get(f"{base_url(alice)}/session/{shared.pk}").json()["share"] == {"url": url}
    view = api(alice).get(f"/api/shares/{token}")
    assert view.status_code == 200 and view["Cache-Control"] == "no-store"
    assert view.json()["session"]["title"] == "Fix the parser"
    audits = AuditEvent.objects.filter(action="session.share", target_id=shared.pk)
    assert audits.count() == 1 and token not in str(audits.get().data)
    response = share(oc, alice, shared, "delete")
    assert_response(response, PATH, "delete")
    assert "share" not in response.json()
    assert api(alice).get(f"/api/shares/{token}").status_code == 404
    assert AuditEvent.objects.filter(action="session.unshare", target_id=shared.pk).count() == 1
    assert SessionShare.objects.get(token=token).revoked_at is not None


def test_the_view_shows_the_conversation_without_secrets_files_or_bookkeeping(oc, api, alice, shared):
    token = token_of(share(oc, alice, shared))
    body = api(alice).get(f"/api/shares/{token}").json()
    text = str(body)
    assert "hunter2-deploy" not in text and "sk-abcdefghij" not in text and "ghp_abcdef" not in text
    assert "[redacted]" in text
    user, assistant = body["messages"]
    assert [p["type"] for p in user["parts"]] == ["text", "file"]
    assert user["parts"][1]["url"] == "" and user["parts"][1]["filename"] == "a.txt"
    assert [p["type"] for p in assistant["parts"]] == ["text", "tool"]  # no step-start
    assert "cost" not in assistant["info"] and "tokens" not in assistant["info"]
    assert "metadata" not in assistant["parts"][1]["state"]
    assert assistant["parts"][1]["state"]["output"].startswith("DEPLOY_KEY=[redacted]")


def test_who_may_open_the_link_follows_the_orgs_policy(oc, api, alice, bob, charlie, shared):
    viewer = make_persona("vera@acme.test", alice.org, Role.VIEWER, "rocket")
    token = token_of(share(oc, alice, shared))
    assert SessionShare.objects.get(token=token).audience == "members"
    for member in (alice, bob, viewer):
        assert api(member).get(f"/api/shares/{token}").status_code == 200
    assert api(charlie).get(f"/api/shares/{token}").status_code == 404  # another org's member
    assert api().get(f"/api/shares/{token}").status_code == 404  # not signed in
    # An org that allows links: a new link opens for anyone holding it.
    share(oc, alice, shared, "delete")
    alice.org.share_policy = "link"
    alice.org.save()
    token = token_of(share(oc, alice, shared))
    assert api().get(f"/api/shares/{token}").status_code == 200
    assert api(charlie).get(f"/api/shares/{token}").status_code == 200
    # Narrowed back to members: the same link now opens for members only.
    response = api(alice).put(
        f"/api/orgs/{alice.org.slug}/share-policy", {"policy": "members"}, format="json"
    )
    assert response.status_code == 200
    assert api().get(f"/api/shares/{token}").status_code == 404
    assert api(bob).get(f"/api/shares/{token}").status_code == 200
    # Sharing off: nothing opens, nothing new is shared, and only admins set the policy.
    assert (
        api(bob)
        .put(f"/api/orgs/{alice.org.slug}/share-policy", {"policy": "link"}, format="json")
        .status_code
        == 403
    )
    api(alice).put(f"/api/orgs/{alice.org.slug}/share-policy", {"policy": "off"}, format="json")
    assert api(alice).get(f"/api/shares/{token}").status_code == 404
    response = share(oc, bob, Session.objects.get(pk=shared.pk))
    assert response.status_code == 403 and "turned off" in str(response.json())


def test_a_link_expires_and_a_viewer_cannot_share(oc, api, alice, shared):
    viewer = make_persona("vera@acme.test", alice.org, Role.VIEWER, "rocket")
    assert share(oc, viewer, shared).status_code == 403
    token = token_of(share(oc, alice, shared))
    SessionShare.objects.filter(token=token).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api(alice).get(f"/api/shares/{token}").status_code == 404
    assert token_of(share(oc, alice, shared)) != token  # sharing again makes a new link
    assert api(alice).get("/api/shares/not-a-token").status_code == 404


def test_another_orgs_member_can_neither_share_nor_unshare(oc, alice, charlie, shared):
    url = f"{base_url(alice)}/session/{shared.pk}/share"
    assert oc(charlie).post(url).status_code == 404
    token = token_of(share(oc, alice, shared))
    assert oc(charlie).delete(url).status_code == 404
    assert SessionShare.objects.get(token=token).revoked_at is None
