"""Reading the audit log of one org: filtered, newest first, in cursor pages (GitHub's and GitLab's
convention: a page ends with an opaque cursor for the next; rows written meanwhile never shift a page).

The caller has already proven the reader may read the org's log (hangar.accounts.selectors.check_reader):
this module takes the org id it was given and never reads another org's rows.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from hangar.audit.models import AuditEvent

MAX_PAGE = 200
EXPORT_CHUNK = 2000


class BadFilter(ValueError):
    """A filter or cursor that cannot be read; `field` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class AuditFilters:
    action: str = ""  # exact, or a prefix ending in "." ("session." = every session action)
    actor: str = ""  # the actor's id, or its label (an email, a token prefix)
    target_type: str = ""
    target_id: str = ""
    project: int | None = None
    session: str = ""
    since: dt.datetime | None = None
    until: dt.datetime | None = None


def _filtered(org_id: int, f: AuditFilters) -> QuerySet[AuditEvent]:
    rows = AuditEvent.objects.filter(org_id=org_id)
    if f.action:
        rows = (
            rows.filter(action__startswith=f.action)
            if f.action.endswith(".")
            else rows.filter(action=f.action)
        )
    if f.actor:
        rows = rows.filter(Q(actor_id=f.actor) | Q(actor_label=f.actor))
    if f.target_type:
        rows = rows.filter(target_type=f.target_type)
    if f.target_id:
        rows = rows.filter(target_id=f.target_id)
    if f.project is not None:
        rows = rows.filter(
            Q(target_type="projects.project", target_id=str(f.project)) | Q(data__project=f.project)
        )
    if f.session:
        rows = rows.filter(
            Q(target_type="conversations.session", target_id=f.session) | Q(data__session=f.session)
        )
    if f.since is not None:
        rows = rows.filter(created_at__gte=f.since)
    if f.until is not None:
        rows = rows.filter(created_at__lt=f.until)
    return rows.order_by("-id")


def encode_cursor(row_id: int) -> str:
    return base64.urlsafe_b64encode(f"a:{row_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, value = text.partition(":")
        if kind != "a":
            raise ValueError(kind)
        return int(value)
    except (ValueError, UnicodeDecodeError):
        raise BadFilter("cursor", "Not a cursor this API gave out.") from None


def audit_page(
    *, org_id: int, filters: AuditFilters, cursor: str = "", limit: int = 50
) -> tuple[list[AuditEvent], str | None]:
    """One page of the org's matching rows, newest first, and the cursor of the next page (None: last)."""
    if not 1 <= limit <= MAX_PAGE:
        raise BadFilter("limit", f"Between 1 and {MAX_PAGE}.")
    rows = _filtered(org_id, filters)
    if cursor:
        rows = rows.filter(id__lt=decode_cursor(cursor))
    page = list(rows[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, (encode_cursor(page[-1].pk) if more and page else None)


def audit_export(*, org_id: int, filters: AuditFilters) -> Iterator[AuditEvent]:
    """Every matching row, newest first, read in keyset chunks (an export never holds the table)."""
    after: int | None = None
    while True:
        rows = _filtered(org_id, filters)
        if after is not None:
            rows = rows.filter(id__lt=after)
        chunk = list(rows[:EXPORT_CHUNK])
        yield from chunk
        if len(chunk) < EXPORT_CHUNK:
            return
        after = chunk[-1].pk
