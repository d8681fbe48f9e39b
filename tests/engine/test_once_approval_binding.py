"""A "once" approval answers the one request it was given for: a later call that reuses the call id
(`call_0` when a provider sends none) in another step asks again."""

import pytest

from hangar.conversations.models import PermissionRequest
from hangar.engine.reply_services import permission_reply
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.test_permissions_flow import ask_for_bash, bash

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_once_approval_is_not_reused_by_a_later_call_with_the_same_call_id(
    alice, script, make_session, worker
):
    ask_for_bash(alice.project)
    script_id = script.load(
        [[bash("call_0", "echo same")], [bash("call_0", "echo same")], [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run it twice"))

    first = wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(),
        what="the first request",
    )
    permission_reply(actor=alice.actor, request=first, reply="once")
    second = wait_for(
        lambda: (
            PermissionRequest.objects.filter(session=session, status="pending").exclude(pk=first.pk).first()
        ),
        timeout=60,
        what="a second request for the second call",
    )
    assert second.call_id == "call_0" and second.message_id != first.message_id
    assert [p["state"]["status"] for p in tool_parts(session)] == ["completed", "running"]
    permission_reply(actor=alice.actor, request=second, reply="reject")
    wait_idle(session)
