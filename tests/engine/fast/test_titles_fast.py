"""A session's title before the title agent names it: its first prompt's words, never a timestamp; a
name a person gave it is kept by both."""

from __future__ import annotations

import pytest

from hangar.conversations.models import Event
from hangar.conversations.session_services import session_update
from tests.engine.fast.scripted_model import ScriptedModel

pytestmark = [pytest.mark.fast, pytest.mark.django_db]


def test_the_first_prompt_titles_the_session_until_the_title_agent_names_it(rig):
    assert rig.state().title.startswith("New session - ")
    rig.prompt("\n  Fix the   login bug\nwhere users are sent back to the start page")

    assert rig.state().title == "Fix the login bug"
    told = Event.objects.filter(session_id=rig.session.pk, type="session.updated").order_by("seq").last()
    assert told.payload["info"]["title"] == "Fix the login bug"
    rig.run(ScriptedModel([[{"text": "done"}]], title="Login redirect fix"))
    assert rig.state().title == "Login redirect fix"

    rig.prompt("another thing entirely")  # not the first prompt: the title stays
    assert rig.state().title == "Login redirect fix"


def test_a_long_first_prompt_is_cut_at_a_word(rig):
    rig.prompt("Please refactor the payment module so that every provider goes through one adapter class")
    title = rig.state().title
    assert title == "Please refactor the payment module so that every provider…"
    assert len(title) <= 61


def test_a_name_a_person_gave_is_kept_by_the_prompt_and_the_title_agent(rig, alice):
    rig.prompt("first words")
    session_update(actor=alice.actor, session=rig.state(), title="Mine")
    rig.run(ScriptedModel([[{"text": "done"}]], title="Generated"))
    assert rig.state().title == "Mine"
