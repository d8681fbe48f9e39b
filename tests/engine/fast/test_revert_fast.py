"""Revert's rules without Docker: OpenCode's walk to the revert point, and a prompt that raced a revert
(stored after the mark, so its own cleanup missed it) is kept while the run it starts removes the reverted
turns before its first step."""

from __future__ import annotations

import json

import pytest

from hangar.conversations.models import Message, Session
from hangar.conversations.revert_services import session_revert_mark
from hangar.engine.revert import revert_point
from tests.engine.fast.scripted_model import ScriptedModel

pytestmark = [pytest.mark.fast, pytest.mark.django_db]


def message(id_, role, *parts):
    return {"info": {"id": id_, "role": role}, "parts": [{"id": p[0], "type": p[1]} for p in parts]}


HISTORY = [
    message("msg_1", "user", ("prt_1", "text")),
    message(
        "msg_2",
        "assistant",
        ("prt_2", "step-start"),
        ("prt_3", "tool"),
        ("prt_4", "patch"),
        ("prt_5", "text"),
    ),
    message("msg_3", "user", ("prt_6", "text")),
    message("msg_4", "assistant", ("prt_7", "step-start"), ("prt_8", "patch")),
]


def test_the_revert_point_follows_opencodes_walk():
    # A prompt: itself, and every patch after it.
    revert, patches = revert_point(HISTORY, "msg_3", None)
    assert revert == {"messageID": "msg_3"} and [p["id"] for p in patches] == ["prt_8"]
    # An answer stands for the prompt it answers; the patches are its own on.
    revert, patches = revert_point(HISTORY, "msg_2", None)
    assert revert == {"messageID": "msg_1"} and [p["id"] for p in patches] == ["prt_4", "prt_8"]
    # A part after something said keeps its message up to it.
    revert, patches = revert_point(HISTORY, "msg_2", "prt_4")
    assert revert == {"messageID": "msg_2", "partID": "prt_4"} and [p["id"] for p in patches] == ["prt_8"]
    # A part with nothing said before it is its whole message (so, its prompt).
    revert, _ = revert_point(HISTORY, "msg_2", "prt_3")
    assert revert == {"messageID": "msg_1"}
    assert revert_point(HISTORY, "msg_9", None) == (None, [])


def test_a_prompt_that_raced_a_revert_is_kept_and_its_run_drops_the_reverted_turn(rig, alice):
    rig.prompt("first")
    rig.run(ScriptedModel([[{"text": "one"}]]))
    rig.prompt("second")
    rig.run(ScriptedModel([[{"text": "two"}]]))
    _, second = Message.objects.filter(session=rig.session, role="user").order_by("id")
    stale = rig.session  # read before the revert, as the racing prompt's request did
    session_revert_mark(actor=alice.actor, session=rig.state(), revert={"messageID": second.pk}, diffs=[])
    assert stale.revert is None
    rig.prompt("third")  # its cleanup sees no revert on the instance it was handed
    model = ScriptedModel([[{"text": "three"}]])
    rig.run(model)
    assert Session.objects.get(pk=rig.session.pk).revert is None
    roles = [m.data.get("role") for m in Message.objects.filter(session=rig.session).order_by("id")]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert not Message.objects.filter(pk=second.pk).exists()
    sent = json.dumps(model.requests[0]["messages"])
    assert "first" in sent and "third" in sent and "second" not in sent and "two" not in sent


def test_a_stored_diff_keeps_patches_within_its_bound_and_counts_for_every_file():
    from hangar.conversations.revert_services import MAX_DIFF_FILES, MAX_PATCHES_CHARS, bounded

    big = {"file": "big.txt", "patch": "+" * (MAX_PATCHES_CHARS - 10), "additions": 1, "deletions": 0}
    small = {"file": "small.txt", "patch": "+" * 20, "additions": 1, "deletions": 0}
    kept = bounded([big, small, {**small, "file": "tiny.txt", "patch": "+x"}])
    assert [("patch" in d, d["additions"]) for d in kept] == [(True, 1), (False, 1), (True, 1)]
    assert len(bounded([small] * (MAX_DIFF_FILES + 5))) == MAX_DIFF_FILES
