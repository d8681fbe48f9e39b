from django.apps import AppConfig


class SlackConfig(AppConfig):
    name = "hangar.integrations.slack"
    label = "slack"

    def ready(self) -> None:
        from hangar.conversations.events import listener_register
        from hangar.integrations.slack.progress import on_events

        listener_register(on_events)
