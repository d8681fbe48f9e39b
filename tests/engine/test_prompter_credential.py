"""A run spends the prompter's own provider key, else the org's, never the session creator's on someone
else's prompt; a removed member's personal keys are revoked with the membership."""

import pytest

from hangar.accounts.models import Membership
from hangar.accounts.services import member_remove
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.projects import crypto
from hangar.projects.models import ProviderCredential
from tests.engine.conftest import text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def _key(org, user, key, base):
    ProviderCredential.objects.create(
        org=org, user=user, provider="scripted", api_base=base, api_key_encrypted=crypto.encrypt(key)
    )


def test_the_prompter_pays_with_their_own_key_then_the_orgs(alice, bob, script, scripted, worker):
    _key(alice.org, None, "sk-org", scripted.url)
    _key(alice.org, alice.user, "sk-alice", scripted.url)
    _key(alice.org, bob.user, "sk-bob", scripted.url)
    script_id = script.load([[{"text": "one"}], [{"text": "two"}], [{"text": "three"}]])
    session = session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "scripted", "modelID": script_id}
    )

    def keys_used():
        return [r["_authorization"] for r in script.requests(script_id) if r.get("stream")]

    session_prompt(actor=bob.actor, session=session, parts=text_prompt("bob asks"))
    wait_idle(session, timeout=120)
    assert keys_used() == ["Bearer sk-bob"]

    member_remove(actor=alice.actor, membership=Membership.objects.get(org=alice.org, user=bob.user))
    assert not ProviderCredential.objects.filter(org=alice.org, user=bob.user).exists()

    session_prompt(actor=alice.actor, session=session, parts=text_prompt("alice asks"))
    wait_idle(session, timeout=120)
    assert keys_used()[-1] == "Bearer sk-alice"

    ProviderCredential.objects.filter(org=alice.org, user=alice.user).delete()
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("alice asks again"))
    wait_idle(session, timeout=120)
    assert keys_used()[-1] == "Bearer sk-org"
