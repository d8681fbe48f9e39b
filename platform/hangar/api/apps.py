from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "hangar.api"
    label = "api"

    def ready(self) -> None:
        from hangar import drf_auth  # noqa: F401  (registers the OpenAPI descriptions of the token schemes)
