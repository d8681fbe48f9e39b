"""Writes and reads of members' OAuth grants for remote MCP servers (McpOAuthGrant): the grant is a JSON
document (tokens, client registration, endpoints: hangar.engine.mcp.oauth says what is in it) stored
encrypted with the project secrets' keys (hangar.projects.crypto). Every read and write names the member,
the project and the server: a grant is never looked up by anything else, so no one reads another's."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.projects import crypto
from hangar.projects.models import McpOAuthGrant, Project


def _decrypt(row: McpOAuthGrant) -> dict[str, Any]:
    document = json.loads(crypto.decrypt(row.grant_encrypted))
    return document if isinstance(document, dict) else {}


def mcp_grant_get(*, project_id: int, user_id: int, server: str, url: str) -> dict[str, Any] | None:
    """The member's grant for the server, decrypted; None when there is none or it was given for
    another URL (the server moved: the old tokens are not sent to the new place)."""
    row = McpOAuthGrant.objects.filter(project_id=project_id, user_id=user_id, server=server).first()
    if row is None or row.url != url:
        return None
    return _decrypt(row)


def mcp_grant_exists(*, project_id: int, user_id: int, server: str, url: str) -> bool:
    return McpOAuthGrant.objects.filter(
        project_id=project_id, user_id=user_id, server=server, url=url
    ).exists()


@transaction.atomic
def mcp_grant_store(
    *, actor: Actor, project: Project, user_id: int, server: str, url: str, grant: dict[str, Any]
) -> None:
    """Keep a new grant (a finished authorization), replacing the member's previous one."""
    McpOAuthGrant.objects.update_or_create(
        project=project,
        user_id=user_id,
        server=server,
        defaults={"url": url, "grant_encrypted": crypto.encrypt(json.dumps(grant))},
    )
    audit_record(
        actor=actor, action="mcp.oauth.grant", target=project, data={"server": server, "user": user_id}
    )


@transaction.atomic
def mcp_grant_refresh(
    *,
    project_id: int,
    user_id: int,
    server: str,
    url: str,
    refresh: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> dict[str, Any] | None:
    """`refresh(grant)` under the row's lock, its answer stored (None: the grant is dropped, it cannot be
    refreshed). Two workers refreshing at once do it one after the other, the second seeing the first's
    new tokens (a rotated refresh token is single-use). Returns the grant now held, or None."""
    row = (
        McpOAuthGrant.objects.select_for_update()
        .filter(project_id=project_id, user_id=user_id, server=server, url=url)
        .first()
    )
    if row is None:
        return None
    renewed = refresh(_decrypt(row))
    if renewed is None:
        row.delete()
        return None
    row.grant_encrypted = crypto.encrypt(json.dumps(renewed))
    row.save(update_fields=["grant_encrypted", "updated_at"])
    return renewed


@transaction.atomic
def mcp_grant_forget(*, actor: Actor, project: Project, user_id: int, server: str) -> dict[str, Any] | None:
    """Delete the member's grant; returns it (decrypted) so the caller can revoke its tokens."""
    row = (
        McpOAuthGrant.objects.select_for_update()
        .filter(project=project, user_id=user_id, server=server)
        .first()
    )
    if row is None:
        return None
    grant = _decrypt(row)
    row.delete()
    audit_record(
        actor=actor, action="mcp.oauth.forget", target=project, data={"server": server, "user": user_id}
    )
    return grant


def mcp_grants_drop_for_leaving_member(*, org_id: int, user_id: int, **_signal: object) -> int:
    """A member leaving an org takes their MCP grants for its projects with them (called inside
    member_remove's transaction through accounts.signals.member_leaving, so no HTTP here: the tokens are
    not revoked at the server, they lapse there). Returns how many went."""
    return McpOAuthGrant.objects.filter(project__org_id=org_id, user_id=user_id).delete()[0]


def mcp_grants_rotate() -> int:
    """Re-encrypt every grant under the first key (called by encryption_keys_rotate, in its transaction)."""
    count = 0
    for row in McpOAuthGrant.objects.select_for_update():
        row.grant_encrypted = crypto.rotate(row.grant_encrypted)
        row.save(update_fields=["grant_encrypted"])
        count += 1
    return count
