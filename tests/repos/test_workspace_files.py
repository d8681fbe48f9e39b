"""Browsing a session's files from /api (the web app's file tree and viewer): one directory at a time,
directories first; text files up to a cap, binary files named but not sent; paths that leave the
workspace and symlinks out of it never reach anything else; another org's session is a 404."""

import pytest

from hangar.conversations.models import Session
from hangar.engine.workspace.sandboxes import sandbox_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def _session(api, persona, made):
    base = f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/"
    response = api(persona).post(base, {"title": "files"}, format="json")
    assert response.status_code == 201, response.content
    made.append(response.json()["id"])
    session = Session.objects.get(pk=response.json()["id"])
    return base + f"{session.pk}/workspace/", sandbox_for(session)


def test_a_directory_lists_directories_first_and_a_text_file_reads_back(api, alice, sessions_made):
    url, box = _session(api, alice, sessions_made)
    box.write("/workspace/src/app.py", "print('hi')\n")
    box.write("/workspace/README.md", "# demo\n")
    box.write("/workspace/odd name\n.txt", "x")
    listing = api(alice).get(url + "files/")
    assert listing.status_code == 200, listing.content
    body = listing.json()
    assert body["path"] == "" and body["truncated"] is False
    assert body["entries"][0] == {"name": "src", "path": "src", "type": "directory"}
    assert {"name": "README.md", "path": "README.md", "type": "file"} in body["entries"]
    assert {"name": "odd name\n.txt", "path": "odd name\n.txt", "type": "file"} in body["entries"]
    inner = api(alice).get(url + "files/", {"path": "src"}).json()
    assert inner["entries"] == [{"name": "app.py", "path": "src/app.py", "type": "file"}]
    read = api(alice).get(url + "file/", {"path": "src/app.py"}).json()
    assert read == {
        "path": "src/app.py",
        "type": "text",
        "size": 12,
        "content": "print('hi')\n",
        "tooLarge": False,
    }


def test_binary_and_oversized_files_are_named_not_sent(api, alice, sessions_made):
    url, box = _session(api, alice, sessions_made)
    box.write("/workspace/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    box.exec("head -c 1100000 /dev/zero | tr '\\0' a > /workspace/big.txt")
    binary = api(alice).get(url + "file/", {"path": "logo.png"}).json()
    assert binary["type"] == "binary" and binary["content"] == "" and binary["size"] == 16
    big = api(alice).get(url + "file/", {"path": "big.txt"}).json()
    assert big["tooLarge"] is True and big["content"] == "" and big["size"] == 1100000


def test_paths_out_of_the_workspace_are_refused_and_symlinks_stay_in_the_sandbox(api, alice, sessions_made):
    url, box = _session(api, alice, sessions_made)
    for path in ("../etc/passwd", "/etc/passwd", "src/../../etc"):
        refused = api(alice).get(url + "file/", {"path": path})
        assert refused.status_code == 400 and "outside the workspace" in refused.json()["error"]["message"]
    assert api(alice).get(url + "files/", {"path": "/"}).status_code == 400
    # A link the session made points into the sandbox's own filesystem, never the host's.
    box.exec("ln -s /etc/hostname /workspace/host")
    linked = api(alice).get(url + "file/", {"path": "host"}).json()
    assert linked["content"].strip() == box.exec("cat /etc/hostname").output.strip()
    assert api(alice).get(url + "file/", {"path": "missing.txt"}).status_code == 404
    assert api(alice).get(url + "file/", {"path": ""}).status_code == 400  # the root is a directory


def test_another_orgs_session_files_are_a_404(api, alice, charlie, sessions_made):
    url, box = _session(api, alice, sessions_made)
    box.write("/workspace/secret.txt", "alice's\n")
    for endpoint, query in (
        ("files/", {}),
        ("file/", {"path": "secret.txt"}),
        ("find/", {"query": "secret"}),
    ):
        foreign = api(charlie).get(url.replace("/acme/", f"/{charlie.org.slug}/") + endpoint, query)
        assert foreign.status_code == 404
        direct = api(charlie).get(url + endpoint, query)
        assert direct.status_code == 404


def test_find_offers_files_and_folders_holding_the_query_names_first(api, alice, sessions_made):
    url, box = _session(api, alice, sessions_made)
    box.write("/workspace/src/app.py", "")
    box.write("/workspace/src/apple/tree.py", "")
    box.write("/workspace/docs/about-app.md", "")
    box.write("/workspace/.gitignore", "build/\n")
    box.write("/workspace/build/app.py", "")
    found = api(alice).get(url + "find/", {"query": "APP"})
    assert found.status_code == 200, found.content
    paths = found.json()
    # Those whose own name holds it first, the shorter first; then the rest (a file inside src/apple/).
    assert paths == ["src/app.py", "src/apple/", "docs/about-app.md", "src/apple/tree.py"]
    assert "build/app.py" not in paths  # .gitignore is honoured
    assert api(alice).get(url + "find/", {"query": "app", "type": "file", "limit": 1}).json() == [
        "src/app.py"
    ]
    assert api(alice).get(url + "find/", {"query": "x" * 201}).status_code == 400
    assert api(alice).get(url + "find/").status_code == 400
