"""A project points at a repository: URL checked (scheme, no credentials in it, public host unless the
operator allows private ones), the token stored encrypted and never returned."""

from hangar.projects import crypto
from hangar.projects.models import Project
from tests.repos.conftest import TOKEN


def _patch(api, persona, body, project=None):
    project = project or persona.project
    return api(persona).patch(f"/api/orgs/{persona.org.slug}/projects/{project.pk}/", body, format="json")


def test_alice_sets_a_repository_and_the_token_is_write_only(api, alice, allow_private, gitserver):
    url = gitserver.url("private/app.git")
    body = {"repo_url": url, "repo_default_branch": "main", "repo_username": "alice", "repo_token": TOKEN}
    response = _patch(api, alice, body)
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["repo_url"] == url and data["repo_username"] == "alice"
    assert data["repo_token_hint"] == "…" + TOKEN[-4:]
    assert TOKEN not in response.content.decode() and "repo_token" not in data
    stored = Project.objects.get(pk=alice.project.pk)
    assert TOKEN not in stored.repo_token_encrypted and crypto.decrypt(stored.repo_token_encrypted) == TOKEN
    listed = api(alice).get("/api/orgs/acme/projects/").content.decode()
    assert TOKEN not in listed
    # Not sending the token keeps it; "" clears it.
    assert _patch(api, alice, {"repo_default_branch": "dev"}).json()["repo_token_hint"] == "…" + TOKEN[-4:]
    assert _patch(api, alice, {"repo_token": ""}).json()["repo_token_hint"] == ""


def test_it_refuses_urls_with_credentials_and_other_schemes(api, alice, allow_private):
    for url in (
        "https://user:pw@github.com/acme/app.git",
        "https://ghp_token@github.com/acme/app.git",
        "ftp://github.com/acme/app.git",
        "file:///etc/passwd",
        "ext::sh -c touch% /tmp/pwned",
        "ext::ssh -oProxyCommand=touch% /tmp/pwned x",
        "https://github.com/",
        "https://github.com/acme/app.git?x=1",
    ):
        response = _patch(api, alice, {"repo_url": url})
        assert response.status_code == 400 and "repo_url" in response.json()["error"]["fields"], (
            url,
            response.content,
        )
    assert Project.objects.get(pk=alice.project.pk).repo_url == ""


def test_it_refuses_loopback_private_and_metadata_hosts_unless_the_operator_allows_them(
    api, alice, settings, gitserver
):
    settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS = False
    for url in (
        "https://127.0.0.1/acme/app.git",
        "https://localhost/acme/app.git",
        "https://10.1.2.3/acme/app.git",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/acme/app.git",
        "https://[::ffff:127.0.0.1]/acme/app.git",
        "https://100.64.0.1/acme/app.git",
    ):
        response = _patch(api, alice, {"repo_url": url})
        assert response.status_code == 400, (url, response.content)
        assert "repo_url" in response.json()["error"]["fields"], response.content
    assert _patch(api, alice, {"repo_url": gitserver.url("public/demo.git")}).status_code == 400  # plain http
    settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS = True
    assert _patch(api, alice, {"repo_url": gitserver.url("public/demo.git")}).status_code == 200


def test_members_cannot_set_a_repository_and_other_orgs_get_404(
    api, alice, bob, charlie, allow_private, gitserver
):
    url = gitserver.url("public/demo.git")
    assert _patch(api, bob, {"repo_url": url}, project=alice.project).status_code == 403
    response = api(charlie).patch(
        f"/api/orgs/acme/projects/{alice.project.pk}/", {"repo_url": url}, format="json"
    )
    assert response.status_code == 404
    response = api(charlie).patch(
        f"/api/orgs/globex/projects/{alice.project.pk}/", {"repo_url": url}, format="json"
    )
    assert response.status_code == 404
    assert Project.objects.get(pk=alice.project.pk).repo_url == ""


def test_rotating_encryption_keys_re_encrypts_repository_tokens(alice, settings):
    from cryptography.fernet import Fernet

    from hangar.projects.key_rotation import encryption_keys_rotate

    project = alice.project
    project.repo_token_encrypted = crypto.encrypt(TOKEN)
    project.save()
    settings.ENCRYPTION_KEYS = [Fernet.generate_key().decode(), *settings.ENCRYPTION_KEYS]
    counts = encryption_keys_rotate(actor=alice.actor)
    assert counts["repo_tokens"] == 1
    settings.ENCRYPTION_KEYS = settings.ENCRYPTION_KEYS[:1]
    assert crypto.decrypt(Project.objects.get(pk=project.pk).repo_token_encrypted) == TOKEN
