from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "hangar.accounts"
    label = "accounts"
