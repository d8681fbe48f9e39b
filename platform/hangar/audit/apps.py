from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "hangar.audit"
    label = "audit"
