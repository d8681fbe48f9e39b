from django.apps import AppConfig


class ReposConfig(AppConfig):
    name = "hangar.repos"
    label = "repos"
    default_auto_field = "django.db.models.BigAutoField"
