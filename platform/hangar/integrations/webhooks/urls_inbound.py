from hangar.integrations.webhooks.urls import inbound_urlpatterns as urlpatterns

__all__ = ["urlpatterns"]
