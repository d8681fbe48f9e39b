"""Revert, unrevert, fork and the diff, end to end: a real Celery worker, the scripted model over HTTP,
the files in the real Docker sandbox, through OpenCode's routes (checked against its OpenAPI shapes) and
/api's. Two prompts: the first writes a.txt, the second edits it and adds b.txt."""

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Message, Part, Session
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import manager
from tests.engine.conftest import text_prompt, wait_idle
from tests.opencode.conftest import assert_matches, assert_response, base_url, schema_of

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


TWO_PROMPTS = [
    [call("write", "c1", filePath="/workspace/a.txt", content="one\n")],
    [{"text": "wrote a.txt"}],
    [
        call("edit", "c2", filePath="/workspace/a.txt", oldString="one", newString="two"),
        call("write", "c3", filePath="/workspace/b.txt", content="bee\nbee\n"),
    ],
    [{"text": "edited a.txt, wrote b.txt"}],
    [{"text": "after the revert"}],
]


def read(session, path):
    box = manager().connect(session.pk)
    return box.read(path).content.strip() if box.stat(path) is not None else None


def users(session) -> list[str]:
    return list(
        Message.objects.filter(session=session, role="user").order_by("id").values_list("pk", flat=True)
    )


@pytest.fixture
def two_prompts(alice, script, make_session, worker):
    session = make_session(alice, script.load(TWO_PROMPTS))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write a.txt"))
    wait_idle(session)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("edit it, add b.txt"))
    return wait_idle(session)


def url(persona, session, route: str) -> str:
    return f"{base_url(persona)}/session/{session.pk}/{route}"


def test_a_run_that_changes_files_leaves_the_session_and_prompt_diffs(oc, alice, two_prompts):
    session = Session.objects.get(pk=two_prompts.pk)
    # The session: a.txt and b.txt added since its first snapshot (a.txt holds one line now, b.txt two).
    assert session.summary == {"additions": 3, "deletions": 0, "files": 2}
    response = oc(alice).get(url(alice, session, "diff"))
    assert_response(response, "/session/{sessionID}/diff")
    diffs = {d["file"]: d for d in response.json()}
    assert set(diffs) == {"a.txt", "b.txt"}
    assert diffs["b.txt"]["status"] == "added" and "+bee" in diffs["b.txt"]["patch"]
    # The second prompt: a.txt modified (one line for one), b.txt added.
    second = users(session)[1]
    response = oc(alice).get(url(alice, session, "diff"), {"messageID": second})
    assert_response(response, "/session/{sessionID}/diff")
    counts = {d["file"]: (d["additions"], d["deletions"], d["status"]) for d in response.json()}
    assert counts == {"a.txt": (1, 1, "modified"), "b.txt": (2, 0, "added")}
    assert_matches(Message.objects.get(pk=second).data, schema_of("UserMessage"))
    # Told as OpenCode's session.diff, once per run that changed files.
    told = [e.payload for e in Event.objects.filter(session=session, type="session.diff").order_by("seq")]
    assert len(told) == 2 and {d["file"] for d in told[-1]["diff"]} == {"a.txt", "b.txt"}
    response = oc(alice).get(f"{base_url(alice)}/session/{session.pk}")
    assert_response(response, "/session/{sessionID}")
    assert response.json()["summary"] == session.summary


def test_revert_restores_files_unrevert_brings_them_back_and_the_next_prompt_drops_the_rest(
    oc, alice, two_prompts
):
    session = two_prompts
    first, second = users(session)
    response = oc(alice).post(url(alice, session, "revert"), {"messageID": second}, format="json")
    assert_response(response, "/session/{sessionID}/revert", "post")
    revert = response.json()["revert"]
    assert revert["messageID"] == second and revert["snapshot"] and "-two\n+one" in revert["diff"]
    assert read(session, "/workspace/a.txt") == "one" and read(session, "/workspace/b.txt") is None
    # The messages stay until the next prompt.
    assert len(users(session)) == 2
    assert AuditEvent.objects.filter(action="session.revert", target_id=session.pk).count() == 1

    response = oc(alice).post(url(alice, session, "unrevert"))
    assert_response(response, "/session/{sessionID}/unrevert", "post")
    assert "revert" not in response.json()
    assert read(session, "/workspace/a.txt") == "two" and read(session, "/workspace/b.txt") == "bee\nbee"
    assert AuditEvent.objects.filter(action="session.unrevert", target_id=session.pk).count() == 1

    # Revert again (through /api this time), then prompt: the second prompt and its answer go for good.
    api_url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session.pk}/revert/"
    response = oc(alice, bearer=True).post(api_url, {"messageID": second}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["revert"]["messageID"] == second
    removed = list(Message.objects.filter(session=session, pk__gte=second).values_list("pk", flat=True))
    session_prompt(actor=alice.actor, session=Session.objects.get(pk=session.pk), parts=text_prompt("go on"))
    session = wait_idle(session)
    assert session.revert is None
    assert not Message.objects.filter(pk__in=removed).exists()
    assert not Part.objects.filter(message_id__in=removed).exists()
    gone = {e.payload["messageID"] for e in Event.objects.filter(session=session, type="message.removed")}
    assert gone == set(removed)
    assert len(users(session)) == 2 and users(session)[0] == first
    assert read(session, "/workspace/a.txt") == "one" and read(session, "/workspace/b.txt") is None


def test_fork_copies_the_history_and_the_files_up_to_the_point(oc, alice, two_prompts, sessions_made):
    source = two_prompts
    _, second = users(source)
    response = oc(alice).post(url(alice, source, "fork"), {"messageID": second}, format="json")
    assert_response(response, "/session/{sessionID}/fork", "post")
    forked = Session.objects.get(pk=response.json()["id"])
    sessions_made.append(forked.pk)
    assert forked.title == f"{source.title} (fork #1)" and forked.parent_id is None
    # The history before the second prompt, every id new, the answers pointing at their copied prompt.
    copied = list(Message.objects.filter(session=forked).order_by("id"))
    originals = list(Message.objects.filter(session=source, pk__lt=second).order_by("id"))
    assert [m.role for m in copied] == [m.role for m in originals] and len(copied) >= 3
    assert not {m.pk for m in copied} & {m.pk for m in originals}
    [copied_user] = [m for m in copied if m.role == "user"]
    assert all(m.data["parentID"] == copied_user.pk for m in copied if m.role == "assistant")
    assert all(m.data["sessionID"] == forked.pk for m in copied)
    parts = list(Part.objects.filter(session=forked))
    assert parts and all(p.data["messageID"] in {m.pk for m in copied} for p in parts)
    assert len(parts) == Part.objects.filter(message_id__in=[m.pk for m in originals]).count()
    # Its own sandbox, with the files as they were before the second prompt.
    assert read(forked, "/workspace/a.txt") == "one" and read(forked, "/workspace/b.txt") is None
    assert read(source, "/workspace/a.txt") == "two"
    audit = AuditEvent.objects.get(action="session.fork", target_id=forked.pk)
    assert audit.data["source"] == source.pk and audit.data["messageID"] == second
    response = oc(alice).get(f"{base_url(alice)}/session/{forked.pk}/message")
    assert response.status_code == 200 and len(response.json()) == len(copied)


def test_a_fork_of_a_prepared_workspace_holds_the_tree_not_what_its_own_setup_made(
    oc, alice, script, make_session, worker, sessions_made
):
    # The setup script makes setup.txt in every session's workspace; the first prompt deletes it and writes
    # a.txt, the second writes b.txt. A fork before the second prompt runs its own setup, then is brought to
    # the tree: a.txt, and neither setup.txt nor b.txt.
    alice.project.setup_script = "printf 'set up\\n' > setup.txt"
    alice.project.save()
    source = make_session(
        alice,
        script.load(
            [
                [
                    call("bash", "c1", command="rm setup.txt", description="remove it"),
                    call("write", "c2", filePath="/workspace/a.txt", content="a\n"),
                ],
                [{"text": "done"}],
                [call("write", "c3", filePath="/workspace/b.txt", content="b\n")],
                [{"text": "done"}],
            ]
        ),
    )
    session_prompt(actor=alice.actor, session=source, parts=text_prompt("tidy up"))
    wait_idle(source)
    session_prompt(actor=alice.actor, session=source, parts=text_prompt("add b"))
    wait_idle(source)
    assert read(source, "/workspace/setup.txt") is None and read(source, "/workspace/b.txt") == "b"
    _, second = users(source)
    response = oc(alice).post(url(alice, source, "fork"), {"messageID": second}, format="json")
    assert response.status_code == 200, response.content
    forked = Session.objects.get(pk=response.json()["id"])
    sessions_made.append(forked.pk)
    assert read(forked, "/workspace/a.txt") == "a"
    assert read(forked, "/workspace/setup.txt") is None and read(forked, "/workspace/b.txt") is None
