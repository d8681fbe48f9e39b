from django.contrib import admin

from hangar.accounts.admin_scoping import TenantScopedAdmin
from hangar.conversations.host_services import host_state_set
from hangar.conversations.models import HostState, Message, SandboxHost, Session
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


@admin.register(SandboxHost)
class SandboxHostAdmin(admin.ModelAdmin):
    """The platform operator's hosts (docs/scale-out.md): superusers only, never an org's staff. Read-only
    but for two actions, which go through the service (audited): drain and activate."""

    list_display = ["name", "state", "heartbeat_at", "free_memory_mb", "free_disk_mb", "live_sandboxes"]
    list_filter = ["state"]
    readonly_fields = [f.name for f in SandboxHost._meta.fields]
    actions = ["drain", "activate"]

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Drain (no new sessions; idle sandboxes hibernated)")
    def drain(self, request, queryset):
        self._set(request, queryset, HostState.DRAINING)

    @admin.action(description="Activate (take new sessions again)")
    def activate(self, request, queryset):
        self._set(request, queryset, HostState.ACTIVE)

    def _set(self, request, queryset, state: str) -> None:
        for host in queryset:
            host_state_set(host_name=host.name, state=state, by=request.user.email)
        self.message_user(request, f"{queryset.count()} host(s): {state}")
