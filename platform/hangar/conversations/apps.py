from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "hangar.conversations"
    label = "conversations"
