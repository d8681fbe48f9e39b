from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "hangar.realtime"
    label = "realtime"
