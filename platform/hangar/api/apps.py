from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "hangar.api"
    label = "api"
