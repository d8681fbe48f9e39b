from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "hangar.realtime"
    label = "realtime"

    def ready(self) -> None:
        """The store's committed events are pushed through this layer's Redis fan-out."""
        from hangar.conversations.events import set_sink
        from hangar.realtime import broadcast

        set_sink(broadcast)
        from hangar.realtime import access  # noqa: F401  (connects the access_changed receiver)
