"""A repository reached over SSH (ssh:// or git@host:path) with a deploy key: the key is generated or
given, stored encrypted and write-only (its public half shown), the host's key pinned when the URL is
saved, and every fetch and push made by host-side git with both — never inside the sandbox. A wrong key
and a host whose key changed fail with what to do; a stored credential never follows the URL to another
host."""

import subprocess

import pytest

from hangar.conversations.services import session_create
from hangar.engine.workspace.prepare import WorkspaceError
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects import crypto
from hangar.projects.models import Project
from hangar.repos.models import SessionWorkspace
from tests.repos.conftest import FILES
from tests.repos.sshserver import ssh_key_pair

pytestmark = pytest.mark.timeout(180)


def _patch(api, persona, body):
    return api(persona).patch(
        f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/", body, format="json"
    )


def _workspace_session(persona, made):
    persona.project.refresh_from_db()  # as the API left it
    session = session_create(actor=persona.actor, project=persona.project, title="t")
    made.append(session.pk)
    return session


def test_a_generated_deploy_key_clones_and_pushes_an_ssh_repository(
    api, alice, allow_private, gitserver, sshserver, sessions_made
):
    url = sshserver.url("private/app.git")
    response = _patch(api, alice, {"repo_url": url, "repo_ssh_key": "generate"})
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["repo_ssh_host_key"] == sshserver.host_key  # pinned from the host when the URL was saved
    assert data["repo_ssh_host_key_fingerprint"].startswith("SHA256:")
    public = data["repo_ssh_public_key"]
    assert public.startswith("ssh-ed25519 ") and "repo_ssh_key" not in data
    stored = Project.objects.get(pk=alice.project.pk)
    private = crypto.decrypt(stored.repo_ssh_key_encrypted)
    assert "PRIVATE KEY" in private and private not in response.content.decode()
    body = private.splitlines()[1]  # a line of the key itself, to look for below

    # Before the key is added to the repository: refused, and the user is told to check the key.
    session = _workspace_session(alice, sessions_made)
    with pytest.raises(WorkspaceError, match="deploy key"):
        sandbox_for(session)
    assert SessionWorkspace.objects.get(session=session).error["kind"] == "auth"

    sshserver.authorize(public)
    session = _workspace_session(alice, sessions_made)
    box = sandbox_for(session)
    assert box.read("SECRET_PROJECT.md").content == "private"
    assert box.read("README.md").content == FILES["README.md"].strip()
    # The key is nowhere in the sandbox: environment, processes, files.
    seen = box.exec("env; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
    assert seen.exit_code == 0 and "PATH=" in seen.output and body not in seen.output
    found = box.exec(f"grep -rlsF -- '{body[:40]}' /workspace /home /tmp /root /etc /opt /var; true")
    assert found.output.strip() == ""

    assert box.exec("echo 'over ssh' > ssh.txt").exit_code == 0
    base = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session.pk}/workspace/"
    pushed = api(alice).post(base + "push/", {"message": "over ssh"}, format="json")
    assert pushed.status_code == 202, pushed.content
    from hangar.engine import repo_ops
    from hangar.repos.models import WorkspaceOperation

    repo_ops.operation_run(pushed.json()["operation"]["id"])
    op = WorkspaceOperation.objects.get(pk=pushed.json()["operation"]["id"])
    assert op.status == "done", op.error
    branch = SessionWorkspace.objects.get(session=session).branch
    assert gitserver.head("private/app.git", branch) == op.result["commit"]
    assert gitserver.show("private/app.git", op.result["commit"], "ssh.txt") == "over ssh\n"
    assert "Accepted publickey for root" in sshserver.log()


def test_a_host_whose_key_changed_is_refused_with_what_to_do(
    api, alice, allow_private, sshserver, sessions_made, tmp_path
):
    private, public = ssh_key_pair(tmp_path, "deploy")
    sshserver.authorize(public)
    _, other_host = ssh_key_pair(tmp_path, "impostor")
    response = _patch(
        api,
        alice,
        {
            "repo_url": sshserver.url("public/demo.git"),
            "repo_ssh_key": private,
            "repo_ssh_host_key": other_host,
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["repo_ssh_public_key"] == " ".join(public.split()[:2])
    session = _workspace_session(alice, sessions_made)
    with pytest.raises(WorkspaceError, match="does not match the key pinned"):
        sandbox_for(session)
    assert SessionWorkspace.objects.get(session=session).error["kind"] == "host_key"
    # Read again from the host ("" asks for that), the clone works.
    assert _patch(api, alice, {"repo_ssh_host_key": ""}).json()["repo_ssh_host_key"] == sshserver.host_key
    session = _workspace_session(alice, sessions_made)
    assert sandbox_for(session).read("README.md").content == "# demo"


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"repo_url": "-oProxyCommand=touch@x:repo"}, "repo_url", "SSH URL"),
        ({"repo_url": "ssh://git@github.com/"}, "repo_url", "SSH URL"),
        ({"repo_url": "ssh://git@-x/repo.git"}, "repo_url", "SSH URL"),
        ({"repo_ssh_key": "not a key"}, "repo_ssh_key", "private key ssh accepts"),
        ({"repo_ssh_host_key": "ssh-dss AAAAB3"}, "repo_ssh_host_key", "public key"),
    ],
)
def test_bad_ssh_settings_are_refused_naming_the_field(api, alice, allow_private, body, field, message):
    response = _patch(api, alice, body)
    assert response.status_code == 400, response.content
    assert message in " ".join(response.json()["error"]["fields"][field])
    assert Project.objects.get(pk=alice.project.pk).repo_ssh_key_encrypted == ""


def test_a_key_with_a_passphrase_is_refused(api, alice, tmp_path):
    path = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "hunter22", "-f", str(path)], check=True)
    response = _patch(api, alice, {"repo_ssh_key": path.read_text()})
    assert response.status_code == 400
    assert "passphrase" in response.json()["error"]["fields"]["repo_ssh_key"][0]


def test_ssh_to_a_private_address_needs_the_operators_setting(api, alice, settings, sshserver):
    settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS = False
    response = _patch(api, alice, {"repo_url": sshserver.url("public/demo.git"), "repo_ssh_key": "generate"})
    assert response.status_code == 400 and "repo_url" in response.json()["error"]["fields"]
    assert Project.objects.get(pk=alice.project.pk).repo_url == ""


def test_a_stored_credential_never_follows_the_url_to_another_host(
    api, alice, allow_private, gitserver, sshserver
):
    assert (
        _patch(api, alice, {"repo_url": gitserver.url("private/app.git"), "repo_token": "tok"}).status_code
        == 200
    )
    # Another repository on the same host keeps the token.
    same_host = gitserver.url("public/demo.git")
    assert _patch(api, alice, {"repo_url": same_host}).json()["repo_token_hint"]
    moved = _patch(
        api, alice, {"repo_url": sshserver.url("public/demo.git").replace("127.0.0.1", "localhost")}
    )
    assert moved.status_code == 400 and "repo_token" in moved.json()["error"]["fields"]
    assert Project.objects.get(pk=alice.project.pk).repo_url == same_host
    moved = _patch(
        api,
        alice,
        {"repo_url": sshserver.url("public/demo.git").replace("127.0.0.1", "localhost"), "repo_token": ""},
    )
    assert moved.status_code == 200, moved.content
    assert moved.json()["repo_token_hint"] == "" and moved.json()["repo_ssh_host_key"] == sshserver.host_key
