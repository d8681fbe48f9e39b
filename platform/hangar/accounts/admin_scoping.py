"""Tenant-safe Django admin. Superusers see everything. Other staff see only objects of orgs where they
are admin or owner, and only read them: the admin bypasses the services, so writes there are kept to
superusers and every write is still audited (save_model/delete_model below)."""

from django.contrib import admin
from django.db import transaction

from hangar.accounts.actors import Actor, client_ip
from hangar.accounts.models import Membership, Role
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record

MANAGER_ROLES = (Role.ADMIN, Role.OWNER)


def managed_org_ids(user) -> list[int]:
    return list(Membership.objects.filter(user=user, role__in=MANAGER_ROLES).values_list("org_id", flat=True))


class TenantScopedAdmin(admin.ModelAdmin):
    org_path = "org"  # lookup from the model to its Org
    superuser_writes = True

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**{f"{self.org_path}__in": managed_org_ids(request.user)})

    def _manages(self, request) -> bool:
        return request.user.is_active and request.user.is_staff and bool(managed_org_ids(request.user))

    def has_module_permission(self, request):
        return request.user.is_superuser or self._manages(request)

    def has_view_permission(self, request, obj=None):
        if request.user.is_superuser:
            return True
        if not self._manages(request):
            return False
        return obj is None or self.get_queryset(request).filter(pk=obj.pk).exists()

    def has_add_permission(self, request):
        return request.user.is_superuser and self.superuser_writes

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser and self.superuser_writes

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and self.superuser_writes

    def _actor(self, request, obj) -> Actor:
        org_id = getattr(obj, "org_id", None) or getattr(getattr(obj, "project", None), "org_id", None)
        return Actor(
            type=ActorType.USER,
            org_id=org_id,
            user=request.user,
            label=f"admin:{request.user.email}",
            ip=client_ip(request),
            request_id=getattr(request, "request_id", ""),
        )

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            if change and form is not None:
                # Only what the form changed: the rest of the row may have moved since the form read it.
                fields = [f for f in form.changed_data if f in {x.name for x in obj._meta.concrete_fields}]
                if any(f.name == "updated_at" for f in obj._meta.concrete_fields):
                    fields.append("updated_at")
                if fields:
                    obj.save(update_fields=fields)
            else:
                super().save_model(request, obj, form, change)
            audit_record(
                actor=self._actor(request, obj),
                target=obj,
                action=f"admin.{obj._meta.model_name}.{'change' if change else 'add'}",
                data={"fields": sorted(form.changed_data)} if form else {},
            )

    def delete_model(self, request, obj):
        with transaction.atomic():
            audit_record(
                actor=self._actor(request, obj), target=obj, action=f"admin.{obj._meta.model_name}.delete"
            )
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)
