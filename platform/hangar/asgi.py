"""ASGI entry point: HTTP through Django, WebSockets through Channels (hangar.realtime.routing)."""

import os

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from hangar.heap import freeze_start_up_heap  # noqa: E402
from hangar.realtime.auth import WebSocketAuthMiddleware  # noqa: E402
from hangar.realtime.origin import origin_validated  # noqa: E402
from hangar.realtime.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": origin_validated(WebSocketAuthMiddleware(URLRouter(websocket_urlpatterns))),
    }
)
# Load the URLconf (every view, serializer and DRF) now rather than on the first request, so that the heap
# frozen next holds all of the process's imports (hangar.heap).
get_resolver().url_patterns  # noqa: B018  (the attribute imports every URL module)
freeze_start_up_heap()
