"""A prompt's agent part (the TUI's `@explore`, OpenCode's AgentPartInput) is stored as OpenCode stores it:
the AgentPart, then a synthetic text telling the model to call the task tool with that subagent. A primary or
unknown agent, or a subagent the rules deny, is a 400 and nothing is stored; another org's session is a 404."""

import pytest

from hangar.conversations.models import Part
from hangar.conversations.services import session_create
from hangar.engine.services import AGENT_MENTION
from tests.opencode.conftest import assert_matches, base_url, schema_of

pytestmark = pytest.mark.django_db

TEXT = {"type": "text", "text": "@explore where are the routes?"}
MENTION = {"type": "agent", "name": "explore", "source": {"value": "@explore", "start": 0, "end": 8}}


@pytest.fixture
def alices_session(alice):
    return session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "scripted", "modelID": "m"}
    )


def test_an_agent_mention_becomes_the_agent_part_and_opencodes_task_instruction(oc, alice, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    response = oc(alice).post(url, {"parts": [TEXT, MENTION]}, format="json")
    assert response.status_code == 204, response.content
    text, agent, instruction = Part.objects.filter(session=alices_session).order_by("pk")
    assert text.data["text"] == TEXT["text"]
    assert {k: agent.data[k] for k in ("type", "name", "source")} == MENTION
    assert instruction.data["synthetic"] is True
    assert instruction.data["text"] == (
        " Use the above message and context to generate a prompt and call the task tool with subagent: explore"
    )
    assert instruction.data["text"] == AGENT_MENTION + "explore"
    for part in (agent, instruction):
        assert_matches(part.data, schema_of("Part"))
    messages = oc(alice).get(f"{base_url(alice)}/session/{alices_session.pk}/message").json()
    assert [p["type"] for p in messages[0]["parts"]] == ["text", "agent", "text"]


@pytest.mark.docker  # the agents a mention may name are read from the workspace, in the sandbox (tests/tiers.py)
def test_a_primary_unknown_or_denied_agent_is_a_400(oc, alice, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    for name, words in (("build", "unknown subagent 'build'"), ("wizard", "unknown subagent 'wizard'")):
        response = oc(alice).post(url, {"parts": [TEXT, {**MENTION, "name": name}]}, format="json")
        assert response.status_code == 400 and words in str(response.json()), response.content
    alice.project.permission_rules = [{"permission": "task", "pattern": "explore", "action": "deny"}]
    alice.project.save(update_fields=["permission_rules"])
    response = oc(alice).post(url, {"parts": [TEXT, MENTION]}, format="json")
    assert response.status_code == 400 and "deny starting the subagent 'explore'" in str(response.json())
    assert not Part.objects.filter(session=alices_session).exists()


def test_another_orgs_session_is_a_404(oc, alice, charlie, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    assert oc(charlie).post(url, {"parts": [TEXT, MENTION]}, format="json").status_code == 404
    assert not Part.objects.filter(session=alices_session).exists()
