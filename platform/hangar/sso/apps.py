from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "hangar.sso"
    label = "sso"
