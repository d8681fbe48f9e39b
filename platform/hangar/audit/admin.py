from django.contrib import admin

from hangar.accounts.admin_scoping import TenantScopedAdmin
from hangar.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedAdmin):
    """Read-only for everyone, superusers included: the log is append-only."""

    superuser_writes = False
    list_display = [
        "created_at",
        "org",
        "action",
        "actor_type",
        "actor_label",
        "target_type",
        "target_id",
        "ip",
    ]
    list_filter = ["action", "actor_type"]
    search_fields = ["action", "actor_label", "target_id", "request_id"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    date_hierarchy = "created_at"
