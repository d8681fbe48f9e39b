"""Code out: commit and push the session's branch (the server has the commit), a push rejected because
the remote moved (then pull and push again), tar.gz download and upload; each endpoint 404s across orgs.
Push and pull run in a real Celery worker: the API answers 202 with an operation, followed here by id and
on the session's event stream."""

import io
import stat
import tarfile
import time
import zipfile

import pytest

from hangar.conversations.models import Event, Session
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.repos.models import RepoPush
from tests.api.schema_check import assert_conforms
from tests.repos.conftest import TOKEN

pytestmark = pytest.mark.timeout(240)


def _base(persona, session_id=""):
    base = f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/"
    return base + (f"{session_id}/" if session_id else "")


def _create(api, persona, made, **body):
    response = api(persona).post(_base(persona), {"title": "t", **body}, format="json")
    assert response.status_code == 201, response.content
    made.append(response.json()["id"])
    session = Session.objects.get(pk=response.json()["id"])
    return session, sandbox_for(session)


WORKER_ENV = {"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1", "HANGAR_SANDBOX_POOL": "0"}


def _operation(api, persona, session, kind: str, body: dict | None = None, timeout: float = 60) -> dict:
    """Ask for a push or pull (202 and an operation), then follow it by id until it has finished."""
    response = api(persona).post(_base(persona, session.pk) + f"workspace/{kind}/", body or {}, format="json")
    assert response.status_code == 202, response.content
    op = response.json()["operation"]
    assert op["kind"] == kind and op["status"] == "pending"
    assert response["Location"].endswith(f"/workspace/operations/{op['id']}/")
    deadline = time.monotonic() + timeout
    while op["status"] in ("pending", "running"):
        assert time.monotonic() < deadline, op
        time.sleep(0.1)
        followed = api(persona).get(_base(persona, session.pk) + f"workspace/operations/{op['id']}/")
        assert followed.status_code == 200, followed.content
        op = followed.json()["operation"]
    return op


def _streamed(session, op_id: int) -> list[str]:
    """The operation's statuses as the session's event stream carried them."""
    events = Event.objects.filter(session=session, type="workspace.operation").order_by("seq")
    return [e.payload["operation"]["status"] for e in events if e.payload["operation"]["id"] == op_id]


@pytest.mark.django_db(transaction=True)
def test_a_session_edits_commits_and_pushes_its_branch_and_the_server_has_it(
    api, alice, repo_project, gitserver, sessions_made, module_workers
):
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice")
    module_workers(WORKER_ENV)
    session, box = _create(api, alice, sessions_made, branch="feature/hello")
    box.write("/workspace/src/app.py", "print('hello, world')\n")
    box.write("/workspace/NEW.md", "new file\n")
    body = {"message": "Say hello to the world", "author_name": "Alice A", "author_email": "alice@acme.test"}
    op = _operation(api, alice, session, "push", body)
    assert op["status"] == "done", op
    assert _streamed(session, op["id"]) == ["pending", "running", "done"]
    pushed = op["result"]
    assert (
        pushed["branch"] == "feature/hello" and RepoPush.objects.get(pk=pushed["push_id"]).status == "pushed"
    )
    assert gitserver.head("private/app.git", "feature/hello") == pushed["commit"]
    assert gitserver.show("private/app.git", pushed["commit"], "NEW.md") == "new file\n"
    assert gitserver.show("private/app.git", pushed["commit"], "src/app.py") == "print('hello, world')\n"
    log = gitserver_log(gitserver, pushed["commit"])
    assert log == "Alice A <alice@acme.test>|Say hello to the world"
    state = api(alice).get(_base(alice, session.pk) + "workspace/").json()
    assert state["state"] == "ready" and state["pushes"][0]["commit"] == pushed["commit"]
    assert state["operations"][0]["id"] == op["id"]
    # Nothing new since: pushing again is harmless (the same commit).
    again = _operation(api, alice, session, "push", {"message": "again"})
    assert again["status"] == "done" and again["result"]["commit"] == pushed["commit"]
    # Checked in the request: an empty message is a 400 and no operation.
    empty = api(alice).post(_base(alice, session.pk) + "workspace/push/", {"message": " "}, format="json")
    assert empty.status_code == 400


def gitserver_log(server, commit: str) -> str:
    from tests.repos.gitserver import run

    out = run(
        "git", "--git-dir", str(server.root / "private/app.git"), "log", "-1", "--format=%an <%ae>|%s", commit
    )
    return out.stdout.strip()


@pytest.mark.django_db(transaction=True)
def test_a_push_rejected_because_the_remote_moved_is_a_clear_409_then_pull_and_push_again(
    api, alice, repo_project, gitserver, sessions_made, module_workers
):
    repo_project(gitserver.url("public/demo.git"))
    module_workers(WORKER_ENV)
    session, box = _create(api, alice, sessions_made, branch="shared/topic")
    box.write("/workspace/mine.txt", "mine\n")
    assert _operation(api, alice, session, "push", {"message": "first"})["status"] == "done"
    theirs = gitserver.advance("public/demo.git", "shared/topic", "theirs.txt", "theirs\n")
    box.write("/workspace/mine.txt", "mine, v2\n")
    rejected = _operation(api, alice, session, "push", {"message": "second"})
    assert rejected["status"] == "failed" and rejected["error"]["kind"] == "rejected"
    assert rejected["error"]["status"] == 409 and "has moved" in rejected["error"]["message"]
    streamed = Event.objects.filter(session=session, type="workspace.operation").order_by("-seq").first()
    assert streamed.payload["operation"]["error"]["kind"] == "rejected"  # the user sees it live
    assert gitserver.head("public/demo.git", "shared/topic") == theirs
    assert RepoPush.objects.filter(session=session, status="rejected").count() == 1
    pulled = _operation(api, alice, session, "pull")
    assert pulled["status"] == "done" and pulled["result"]["merged"] == theirs
    assert box.read("theirs.txt").content == "theirs"  # the remote's change is in the work tree
    assert box.read("mine.txt").content == "mine, v2"
    final = _operation(api, alice, session, "push", {"message": "after merge"})
    assert final["status"] == "done", final
    assert gitserver.head("public/demo.git", "shared/topic") == final["result"]["commit"]


def test_the_workspace_downloads_as_a_tar_gz_and_files_upload_into_it(
    api, alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    session, box = _create(api, alice, sessions_made)
    upload = api(alice).post(
        _base(alice, session.pk) + "workspace/upload/",
        {"path": "docs", "file": [io.BytesIO(b"uploaded\n")]},
        format="multipart",
    )
    assert assert_conforms(upload, "workspace_upload")["written"] == ["docs/file"]
    assert box.read("docs/file").content == "uploaded"
    escape = api(alice).post(
        _base(alice, session.pk) + "workspace/upload/",
        {"path": "../../etc", "file": [io.BytesIO(b"x")]},
        format="multipart",
    )
    assert escape.status_code == 400
    response = api(alice).get(_base(alice, session.pk) + "workspace/archive/")
    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    data = b"".join(response.streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = {name.lstrip("./") for name in tar.getnames()}
        assert {"README.md", "src/app.py", "docs/file"} <= names
        assert (
            tar.extractfile(tar.getmember(next(n for n in tar.getnames() if n.endswith("README.md")))).read()
            == b"# demo\n"
        )
    # The same as a zip: a symlink stays a link (its target as content, never the file it points at).
    assert box.exec("ln -s /etc/hostname host-link && echo ok").output.strip() == "ok"
    response = api(alice).get(_base(alice, session.pk) + "workspace/archive/?type=zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].endswith('.zip"')
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        assert archive.testzip() is None
        assert {"README.md", "src/app.py", "docs/file", "host-link", "src/"} <= set(archive.namelist())
        assert archive.read("README.md") == b"# demo\n" and archive.read("docs/file") == b"uploaded\n"
        link = archive.getinfo("host-link")
        assert stat.S_ISLNK(link.external_attr >> 16) and archive.read("host-link") == b"/etc/hostname"
    bad = api(alice).get(_base(alice, session.pk) + "workspace/archive/?type=rar")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"


def test_uploads_and_archives_are_size_capped(api, alice, repo_project, gitserver, sessions_made, settings):

    repo_project(gitserver.url("public/demo.git"))
    session, _ = _create(api, alice, sessions_made)
    settings.HANGAR_WORKSPACE_ARCHIVE_MAX_BYTES = 1024
    response = api(alice).get(_base(alice, session.pk) + "workspace/archive/")
    assert response.status_code == 413
    assert api(alice).get(_base(alice, session.pk) + "workspace/archive/?type=zip").status_code == 413
    big = io.BytesIO(b"x" * (settings.HANGAR_WORKSPACE_UPLOAD_MAX_BYTES + 1))
    big.name = "big.bin"
    response = api(alice).post(
        _base(alice, session.pk) + "workspace/upload/", {"file": [big]}, format="multipart"
    )
    assert response.status_code == 413


def test_every_workspace_endpoint_is_404_for_another_org(
    api, alice, charlie, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    session, _ = _create(api, alice, sessions_made)
    for org in ("acme", "globex"):
        base = f"/api/orgs/{org}/projects/{alice.project.pk}/sessions/{session.pk}/workspace/"
        client = api(charlie)
        assert client.get(base).status_code == 404
        assert client.post(base + "push/", {"message": "x"}, format="json").status_code == 404
        assert client.post(base + "pull/", {}, format="json").status_code == 404
        assert client.get(base + "operations/1/").status_code == 404
        assert client.get(base + "archive/").status_code == 404
        assert client.get(base + "archive/?type=zip").status_code == 404
        upload = client.post(base + "upload/", {"file": [io.BytesIO(b"x")]}, format="multipart")
        assert upload.status_code == 404
    assert not RepoPush.objects.filter(session=session).exists()


def test_a_bad_ref_at_session_creation_is_a_400_and_leaves_no_session(api, alice, repo_project, gitserver):
    repo_project(gitserver.url("public/demo.git"))
    response = api(alice).post(_base(alice), {"title": "t", "branch": "bad..name"}, format="json")
    assert response.status_code == 400 and "branch" in response.json()["error"]["fields"]
    assert not Session.objects.filter(project=alice.project).exists()
