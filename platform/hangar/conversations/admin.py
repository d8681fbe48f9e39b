from django.contrib import admin

from hangar.accounts.admin_scoping import TenantScopedAdmin
from hangar.conversations.models import Message, Session
from hangar.conversations.session_services import session_admin_update


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("id", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Session)
class SessionAdmin(TenantScopedAdmin):
    """Read-mostly: sessions change through the engine. Superusers may fix a title or archive one."""

    list_display = ["id", "title", "org", "project", "status", "created_at", "archived_at"]
    list_filter = ["status"]
    search_fields = ["id", "title", "org__slug", "project__slug"]
    fields = (
        "id",
        "org",
        "project",
        "creator",
        "parent",
        "title",
        "agent",
        "model",
        "status",
        "event_seq",
        "lease_owner",
        "lease_expires_at",
        "created_at",
        "updated_at",
        "archived_at",
    )
    readonly_fields = tuple(f for f in fields if f not in ("title", "archived_at"))

    inlines = [MessageInline]

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        # Never obj.save(): the form's instance was read before the engine's latest writes (event_seq,
        # status, abort), and a whole-row save would put them back.
        session_admin_update(
            actor=self._actor(request, obj), session=obj, title=obj.title, archived_at=obj.archived_at
        )
