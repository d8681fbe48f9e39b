"""WebSocket routes (mounted by hangar.asgi behind the cookie/token auth middleware)."""

from django.urls import path

from hangar.realtime.consumers import OrgStreamConsumer, SessionStreamConsumer
from hangar.realtime.terminal import TerminalConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:session_id>/", SessionStreamConsumer.as_asgi()),
    path("ws/sessions/<str:session_id>/terminal/", TerminalConsumer.as_asgi()),
    path("ws/orgs/<str:org_slug>/", OrgStreamConsumer.as_asgi()),
]
