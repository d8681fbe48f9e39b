"""A prompt's subtask part (OpenCode's SubtaskPartInput) is stored in OpenCode's SubtaskPart shape; an agent
that is not a subagent is a 400 naming it, and another org's session is a 404."""

import pytest

from hangar.conversations.models import Part
from hangar.conversations.services import session_create
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db

SUBTASK = {"type": "subtask", "prompt": "find the routes", "description": "Find routes", "agent": "explore"}


@pytest.fixture
def alices_session(alice):
    return session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "scripted", "modelID": "m"}
    )


def test_a_subtask_part_is_stored_in_opencodes_shape(oc, alice, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    response = oc(alice).post(url, {"parts": [{**SUBTASK, "command": "review"}]}, format="json")
    assert response.status_code == 204, response.content
    (part,) = Part.objects.filter(session=alices_session)
    assert part.data == {
        **SUBTASK,
        "command": "review",
        "id": part.pk,
        "sessionID": alices_session.pk,
        "messageID": part.message_id,
    }


@pytest.mark.docker  # the agents a subtask may name are read from the workspace, in the sandbox (tests/tiers.py)
def test_a_subtask_for_a_primary_or_unknown_agent_is_a_400(oc, alice, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    for agent in ("build", "wizard"):
        response = oc(alice).post(url, {"parts": [{**SUBTASK, "agent": agent}]}, format="json")
        assert response.status_code == 400 and f"unknown subagent '{agent}'" in str(response.json())
    assert not Part.objects.filter(session=alices_session).exists()


def test_another_orgs_session_is_a_404(oc, alice, charlie, alices_session):
    url = f"{base_url(alice)}/session/{alices_session.pk}/prompt_async"
    assert oc(charlie).post(url, {"parts": [SUBTASK]}, format="json").status_code == 404
