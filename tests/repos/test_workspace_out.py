"""Code out: commit and push the session's branch (the server has the commit), a push rejected because
the remote moved (then pull and push again), tar.gz download and upload; each endpoint 404s across orgs."""

import io
import tarfile

import pytest

from hangar.conversations.models import Session
from hangar.engine.sandboxes import sandbox_for
from hangar.repos.models import RepoPush
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


def test_a_session_edits_commits_and_pushes_its_branch_and_the_server_has_it(
    api, alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice")
    session, box = _create(api, alice, sessions_made, branch="feature/hello")
    box.write("/workspace/src/app.py", "print('hello, world')\n")
    box.write("/workspace/NEW.md", "new file\n")
    url = _base(alice, session.pk) + "workspace/push/"
    body = {"message": "Say hello to the world", "author_name": "Alice A", "author_email": "alice@acme.test"}
    response = api(alice).post(url, body, format="json")
    assert response.status_code == 200, response.content
    pushed = response.json()
    assert pushed["status"] == "pushed" and pushed["branch"] == "feature/hello"
    assert gitserver.head("private/app.git", "feature/hello") == pushed["commit"]
    assert gitserver.show("private/app.git", pushed["commit"], "NEW.md") == "new file\n"
    assert gitserver.show("private/app.git", pushed["commit"], "src/app.py") == "print('hello, world')\n"
    log = gitserver_log(gitserver, pushed["commit"])
    assert log == "Alice A <alice@acme.test>|Say hello to the world"
    state = api(alice).get(_base(alice, session.pk) + "workspace/").json()
    assert state["state"] == "ready" and state["pushes"][0]["commit"] == pushed["commit"]
    # Nothing new: a clear 400, nothing pushed.
    again = api(alice).post(url, {"message": "again"}, format="json")
    assert again.status_code == 200 or again.json()["error"]["code"] == "nothing"


def gitserver_log(server, commit: str) -> str:
    from tests.repos.gitserver import run

    out = run(
        "git", "--git-dir", str(server.root / "private/app.git"), "log", "-1", "--format=%an <%ae>|%s", commit
    )
    return out.stdout.strip()


def test_a_push_rejected_because_the_remote_moved_is_a_clear_409_then_pull_and_push_again(
    api, alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    session, box = _create(api, alice, sessions_made, branch="shared/topic")
    box.write("/workspace/mine.txt", "mine\n")
    url = _base(alice, session.pk) + "workspace/push/"
    assert api(alice).post(url, {"message": "first"}, format="json").status_code == 200
    theirs = gitserver.advance("public/demo.git", "shared/topic", "theirs.txt", "theirs\n")
    box.write("/workspace/mine.txt", "mine, v2\n")
    rejected = api(alice).post(url, {"message": "second"}, format="json")
    assert rejected.status_code == 409, rejected.content
    assert rejected.json()["error"]["code"] == "rejected"
    assert "has moved" in rejected.json()["error"]["message"]
    assert gitserver.head("public/demo.git", "shared/topic") == theirs
    assert RepoPush.objects.filter(session=session, status="rejected").count() == 1
    pulled = api(alice).post(_base(alice, session.pk) + "workspace/pull/", {}, format="json")
    assert pulled.status_code == 200, pulled.content and pulled.json()["merged"] == theirs
    assert box.read("theirs.txt").content == "theirs"  # the remote's change is in the work tree
    assert box.read("mine.txt").content == "mine, v2"
    final = api(alice).post(url, {"message": "after merge"}, format="json")
    assert final.status_code == 200, final.content
    assert gitserver.head("public/demo.git", "shared/topic") == final.json()["commit"]


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
    assert upload.status_code == 200, upload.content
    assert upload.json()["written"] == ["docs/file"]
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


def test_uploads_and_archives_are_size_capped(api, alice, repo_project, gitserver, sessions_made, settings):
    from hangar.engine import repo_ops

    repo_project(gitserver.url("public/demo.git"))
    session, _ = _create(api, alice, sessions_made)
    settings.HANGAR_WORKSPACE_ARCHIVE_MAX_BYTES = 1024
    response = api(alice).get(_base(alice, session.pk) + "workspace/archive/")
    assert response.status_code == 413
    big = io.BytesIO(b"x" * (repo_ops.UPLOAD_MAX_BYTES + 1))
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
        assert client.get(base + "archive/").status_code == 404
        upload = client.post(base + "upload/", {"file": [io.BytesIO(b"x")]}, format="multipart")
        assert upload.status_code == 404
    assert not RepoPush.objects.filter(session=session).exists()


def test_a_bad_ref_at_session_creation_is_a_400_and_leaves_no_session(api, alice, repo_project, gitserver):
    repo_project(gitserver.url("public/demo.git"))
    response = api(alice).post(_base(alice), {"title": "t", "branch": "bad..name"}, format="json")
    assert response.status_code == 400 and "branch" in response.json()["error"]["fields"]
    assert not Session.objects.filter(project=alice.project).exists()
