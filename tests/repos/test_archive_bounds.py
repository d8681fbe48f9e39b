"""Archives are compressed in the web process, so how many it compresses at once is bounded
(HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY per process): one more is a 429 naming the limit, and the slot is
given back when a download ends, finished or dropped."""

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections

from hangar.conversations.models import Session
from hangar.engine.workspace.sandboxes import sandbox_for

pytestmark = pytest.mark.timeout(240)


def test_archives_compressed_at_once_are_bounded_and_a_finished_one_frees_its_slot(
    api, alice, sessions_made, settings
):
    settings.HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY = 1
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    session = Session.objects.get(pk=api(alice).post(base, {"title": "t"}, format="json").json()["id"])
    sessions_made.append(session.pk)
    sandbox_for(session).write("/workspace/a.txt", "a\n" * 1000)
    url = base + f"{session.pk}/workspace/archive/"

    first = api(alice).get(url)  # streaming: compressing until it is read to its end or closed
    assert first.status_code == 200
    second = api(alice).get(url + "?type=zip")
    assert second.status_code == 429, second.content
    assert "at once" in second.json()["error"]["message"]
    # Read to its end (the test client then closes it, as the server does): a gzip stream.
    assert b"".join(first.streaming_content)[:2] == b"\x1f\x8b"
    third = api(alice).get(url)
    assert third.status_code == 200
    _drop(third)  # closed before its first byte (the client went away): its slot is back too
    last = api(alice).get(url)
    assert last.status_code == 200 and b"".join(last.streaming_content)


def _drop(response) -> None:
    """Close a streaming response unread, as the server does when the client goes away (without the
    request-finished signal closing this test's database connection)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)
