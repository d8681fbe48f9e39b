"""The worker's own provider credentials never authenticate a tenant's call: a worker whose environment
holds OPENAI_API_KEY runs a session whose credential has no key, through LiteLLM, and the key never
reaches the tenant's endpoint; a named provider without a key fails with a clear error."""

import pytest

from hangar.conversations.models import Event, Session
from hangar.conversations.services import session_create
from hangar.engine.providers.ambient import ambient_names
from hangar.engine.services import session_prompt
from hangar.projects.models import ProviderCredential
from tests.engine.conftest import assistant_messages, text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

AMBIENT = "sk-ambient-worker-key-LEAK"


def _session(persona, provider, model):
    return session_create(
        actor=persona.actor, project=persona.project, model={"providerID": provider, "modelID": model}
    )


def test_a_keyless_credential_never_sends_the_workers_own_key(alice, script, scripted, start_worker):
    start_worker(env={"OPENAI_API_KEY": AMBIENT, "HANGAR_DIRECT_OPENAI_COMPAT": "0"})
    ProviderCredential.objects.create(org=alice.org, provider="selfhosted", api_base=scripted.url)
    script_id = script.load([[{"text": "hello"}]])
    session = _session(alice, "selfhosted", script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    wait_idle(session, timeout=120)
    requests = script.requests(script_id)
    assert requests, "the model was called"
    assert all(AMBIENT not in r["_authorization"] for r in requests), [r["_authorization"] for r in requests]


def test_a_named_provider_without_a_key_fails_with_a_clear_error(alice, start_worker):
    start_worker(env={"OPENAI_API_KEY": AMBIENT})
    ProviderCredential.objects.create(org=alice.org, provider="openai")
    session = _session(alice, "openai", "gpt-4o-mini")
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    session = wait_idle(session, timeout=120)
    # Said where the person sees it: the session's error event, and the one assistant message that answers
    # the prompt with that error (a turn that cannot start never leaves the prompt unanswered).
    errors = [e.payload["error"] for e in Event.objects.filter(session_id=session.pk, type="session.error")]
    assert any("has no API key" in str(error) for error in errors), errors
    answers = assistant_messages(Session.objects.get(pk=session.pk))
    assert len(answers) == 1 and "has no API key" in str(answers[0].get("error")), answers


def test_the_ambient_credentials_are_recognised_and_ours_are_kept():
    names = ambient_names(
        {
            "OPENAI_API_KEY": "x",
            "ANTHROPIC_API_KEY": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "AWS_PROFILE": "x",
            "GOOGLE_APPLICATION_CREDENTIALS": "x",
            "MY_VENDOR_API_KEY": "x",
            "HANGAR_TOKEN_PEPPERS": "x",
            "DJANGO_SECRET_KEY": "x",
            "DATABASE_URL": "x",
            "PATH": "x",
            "LITELLM_LOCAL_MODEL_COST_MAP": "x",
        }
    )
    assert sorted(names) == sorted(
        [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "MY_VENDOR_API_KEY",
        ]
    )
