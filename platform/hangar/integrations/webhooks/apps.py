from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "hangar.integrations.webhooks"
    label = "webhooks"

    def ready(self) -> None:
        from hangar.conversations.events import listener_register
        from hangar.integrations.webhooks.outbound import on_events

        listener_register(on_events)
