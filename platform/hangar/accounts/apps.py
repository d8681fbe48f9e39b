from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "hangar.accounts"
    label = "accounts"

    def ready(self) -> None:
        from hangar.accounts import schema  # noqa: F401  (registers the OpenAPI auth extensions)
