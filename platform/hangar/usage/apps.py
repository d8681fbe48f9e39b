from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "hangar.usage"
    label = "usage"
