"""The audit log: append-only. The ORM refuses update/delete here and a database trigger (migration
0002) refuses them for any client, so a compromised app path cannot rewrite history."""

from django.db import models


class AuditImmutable(Exception):
    pass


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AuditImmutable("audit events are append-only")

    def delete(self):
        raise AuditImmutable("audit events are append-only")


class ActorType(models.TextChoices):
    USER = "user"
    TOKEN = "token"
    INTEGRATION = "integration"
    SYSTEM = "system"


class AuditEvent(models.Model):
    org = models.ForeignKey("accounts.Org", on_delete=models.DO_NOTHING, null=True, db_constraint=False)
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64, blank=True)
    actor_label = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=100, db_index=True)
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["org", "-id"], name="audit_org_id_desc")]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise AuditImmutable("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditImmutable("audit events are append-only")
