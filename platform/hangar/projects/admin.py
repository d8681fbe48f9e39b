from django.contrib import admin

from hangar.accounts.admin_scoping import TenantScopedAdmin
from hangar.projects.models import Project, ProjectEnvVar, ProviderCredential


class EnvVarInline(admin.TabularInline):
    """Names and flags only: values are encrypted and secret ones never leave the worker."""

    model = ProjectEnvVar
    fields = ["name", "secret"]
    readonly_fields = ["name", "secret"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Project)
class ProjectAdmin(TenantScopedAdmin):
    list_display = ["slug", "name", "org", "default_model", "network_policy", "created_at"]
    search_fields = ["slug", "name", "org__slug"]
    list_filter = ["network_policy"]
    inlines = [EnvVarInline]


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(TenantScopedAdmin):
    """Keys are set through the API; here only what the API shows (a hint, never the key)."""

    list_display = ["provider", "org", "user", "api_base", "api_key_hint", "updated_at"]
    fields = [
        "provider",
        "org",
        "user",
        "models_list",
        "api_base",
        "api_key_hint",
        "created_at",
        "updated_at",
    ]
    # api_base too: a new base must come with its key (projects.credential_services.credential_set), which only the API takes.
    readonly_fields = ["provider", "org", "user", "api_base", "api_key_hint", "created_at", "updated_at"]

    def has_add_permission(self, request):
        return False
