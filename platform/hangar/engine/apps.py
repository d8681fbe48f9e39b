from django.apps import AppConfig


class EngineConfig(AppConfig):
    name = "hangar.engine"
    label = "engine"
