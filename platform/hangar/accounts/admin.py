from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin as BaseGroupAdmin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group

from hangar.accounts.admin_scoping import TenantScopedAdmin
from hangar.accounts.models import ApiToken, Membership, Org, User
from hangar.audit.models import AuditEvent


class SuperuserOnly:
    """Every permission is the platform superuser's alone. Django's ModelAdmin would otherwise fall back to
    model permissions (`change_user` granted directly or through a group), which know nothing of orgs: a
    staff user holding one could edit any user, themselves into a superuser."""

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser


admin.site.unregister(Group)


@admin.register(Group)
class GroupAdmin(SuperuserOnly, BaseGroupAdmin):
    """Groups only carry model permissions, which the tenant-scoped admin ignores; superusers only."""


@admin.register(User)
class UserAdmin(SuperuserOnly, BaseUserAdmin):
    """Users span orgs, so only superusers manage them here."""

    ordering = ["email"]
    list_display = ["email", "name", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "name"]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    fieldsets = [
        (None, {"fields": ["email", "password", "name"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser"]}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]
    filter_horizontal = ()


@admin.register(Org)
class OrgAdmin(TenantScopedAdmin):
    org_path = "pk"
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    list_display = ["user", "org", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "org__slug"]
    raw_id_fields = ["user", "org"]


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScopedAdmin):
    """Tokens are created through the API (the raw token is shown once there); the digest never shows."""

    list_display = ["prefix", "name", "user", "org", "created_at", "last_used_at", "expires_at", "revoked_at"]
    fields = readonly_fields = (
        "prefix",
        "name",
        "user",
        "org",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    search_fields = ["prefix", "name", "user__email"]

    def has_add_permission(self, request):
        return False


# The audit log's page lives here, beside the tenant-scoped admin it uses: the audit app imports no other app.
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
