"""Provider keys and env values encrypted at rest with MultiFernet; resolution for the engine (the user's
credential wins); key rotation keeps everything decryptable; the key never reaches logs or audit rows."""

import logging

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from hangar.audit.models import AuditEvent
from hangar.projects import crypto
from hangar.projects.credential_services import credential_set
from hangar.projects.credentials import CredentialNotFound, credential_resolve
from hangar.projects.env import env_for_sandbox
from hangar.projects.env_var_services import env_var_set
from hangar.projects.mcp_oauth_services import mcp_grant_get, mcp_grant_store
from hangar.projects.models import ProjectEnvVar, ProviderCredential

KEY = "sk-org-key-0123456789-abcd"
PERSONAL = "sk-bobs-own-key-5555-wxyz"


def raw_column(pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key_encrypted FROM projects_providercredential WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def test_the_key_is_encrypted_in_the_column_and_resolves_for_the_engine(alice, caplog):
    caplog.set_level(logging.DEBUG)
    credential = credential_set(
        actor=alice.actor,
        org=alice.org,
        provider="local",
        api_key=KEY,
        api_base="http://127.0.0.1:8080/v1",
        models=["qwen"],
    )
    assert KEY not in raw_column(credential.pk)
    resolved = credential_resolve(org_id=alice.org.pk, user_id=alice.user.pk, provider="local")
    assert (resolved.api_key, resolved.api_base, resolved.models, resolved.scope) == (
        KEY,
        "http://127.0.0.1:8080/v1",
        ["qwen"],
        "org",
    )
    assert KEY not in repr(resolved)
    assert KEY not in caplog.text
    assert KEY not in str(list(AuditEvent.objects.values()))


def test_a_users_own_credential_wins_over_the_orgs(alice, bob):
    credential_set(actor=alice.actor, org=alice.org, provider="openai", api_key=KEY)
    credential_set(actor=bob.actor, org=bob.org, provider="openai", api_key=PERSONAL, user=bob.user)
    assert credential_resolve(org_id=alice.org.pk, user_id=bob.user.pk, provider="openai").api_key == PERSONAL
    assert credential_resolve(org_id=alice.org.pk, user_id=alice.user.pk, provider="openai").api_key == KEY
    # A session whose creator is gone resolves the org's credential, never someone's personal one.
    assert credential_resolve(org_id=alice.org.pk, user_id=None, provider="openai").api_key == KEY


def test_another_orgs_credential_never_resolves(alice, charlie):
    credential_set(actor=alice.actor, org=alice.org, provider="openai", api_key=KEY)
    with pytest.raises(CredentialNotFound):
        credential_resolve(org_id=charlie.org.pk, user_id=charlie.user.pk, provider="openai")


def test_rotation_re_encrypts_under_the_new_key_and_the_old_key_can_then_go(alice, settings):
    old_key = settings.ENCRYPTION_KEYS[0]
    credential = credential_set(actor=alice.actor, org=alice.org, provider="openai", api_key=KEY)
    env_var_set(actor=alice.actor, project=alice.project, name="TOKEN", value="s3cret")
    grant = {
        "project": alice.project,
        "user_id": alice.user.pk,
        "server": "tools",
        "url": "https://mcp.example/mcp",
    }
    mcp_grant_store(actor=alice.actor, **grant, grant={"access_token": "oauth-access"})
    new_key = Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [new_key, old_key]
    assert (
        credential_resolve(org_id=alice.org.pk, user_id=None, provider="openai").api_key == KEY
    )  # still reads
    before = raw_column(credential.pk)
    call_command("rotate_encryption_keys")
    assert raw_column(credential.pk) != before
    settings.ENCRYPTION_KEYS = [new_key]  # old key retired
    assert credential_resolve(org_id=alice.org.pk, user_id=None, provider="openai").api_key == KEY
    assert decrypted_env(alice.project) == {"TOKEN": "s3cret"}
    held = mcp_grant_get(project_id=alice.project.pk, user_id=alice.user.pk, server="tools", url=grant["url"])
    assert held == {"access_token": "oauth-access"}
    assert AuditEvent.objects.filter(action="encryption_keys.rotate").get().data == {
        "credentials": 1,
        "env_vars": 1,
        "repo_tokens": 0,
        "repo_ssh_keys": 0,
        "mcp_oauth_grants": 1,
    }


def decrypted_env(project) -> dict[str, str]:
    return {var.name: crypto.decrypt(var.value_encrypted) for var in project.env_vars.all()}


def test_only_sandbox_safe_env_vars_reach_the_sandbox(alice):
    env_var_set(actor=alice.actor, project=alice.project, name="SECRET", value="top", secret=True)
    env_var_set(actor=alice.actor, project=alice.project, name="PLAIN", value="ok", secret=False)
    assert env_for_sandbox(alice.project) == {"PLAIN": "ok"}
    assert decrypted_env(alice.project) == {"PLAIN": "ok", "SECRET": "top"}
    assert "top" not in ProjectEnvVar.objects.get(name="SECRET").value_encrypted


def test_a_blank_key_clears_it_and_none_keeps_it(alice):
    credential = credential_set(actor=alice.actor, org=alice.org, provider="openai", api_key=KEY)
    credential_set(actor=alice.actor, org=alice.org, provider="openai", models=["gpt-4o"])
    assert credential_resolve(org_id=alice.org.pk, user_id=None, provider="openai").api_key == KEY
    credential_set(actor=alice.actor, org=alice.org, provider="openai", api_key="")
    assert ProviderCredential.objects.get(pk=credential.pk).api_key_encrypted == ""


def test_mask_shows_only_the_last_four_of_long_secrets():
    assert crypto.mask(KEY) == "…abcd" and crypto.mask("short") == "…"
