"""A pending question (the `question` tool's request) in alice's project, for the /api and OpenCode route
tests, with the run's enqueueing stubbed: these tests drive the routes, the worker tests drive the run."""

from unittest import mock

import pytest

from hangar.conversations.question_services import question_request_create
from hangar.conversations.services import session_create

QUESTIONS = [
    {"question": "Ship it?", "header": "Ship", "options": [{"label": "Yes", "description": "now"}]},
    {
        "question": "Which checks?",
        "header": "Checks",
        "options": [{"label": "lint", "description": ""}, {"label": "tests", "description": ""}],
        "multiple": True,
    },
]


@pytest.fixture
def no_enqueue():
    with mock.patch("hangar.engine.services.enqueue_run") as enqueue:
        yield enqueue


@pytest.fixture
def asked(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    return question_request_create(session=session, questions=QUESTIONS, message_id="msg_1", call_id="call_1")
