"""ASGI entry point: HTTP through Django, WebSockets through Channels (hangar.realtime.routing)."""

import os
import re

from django.core.asgi import get_asgi_application
from django.urls import get_resolver, path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from hangar.body_limit import body_limited, install_in_daphne  # noqa: E402
from hangar.heap import freeze_start_up_heap  # noqa: E402
from hangar.opencode.pty_socket import PtyConsumer  # noqa: E402
from hangar.realtime.auth import WebSocketAuthMiddleware  # noqa: E402
from hangar.realtime.origin import origin_validated  # noqa: E402
from hangar.realtime.routing import websocket_urlpatterns  # noqa: E402

UPLOAD_PATH = re.compile(r"/workspace/upload/?$")


def _upload_cap() -> int:
    return settings.HANGAR_WORKSPACE_UPLOAD_MAX_BYTES + 2**20  # the files, and their multipart framing


# Under Daphne the body is read before the application is called: the cap goes where it is read too.
install_in_daphne(lambda path: _upload_cap() if UPLOAD_PATH.search(path.decode("latin-1")) else None)

application = ProtocolTypeRouter(
    {
        # An upload's size is checked as it streams, before Django spools the body (hangar.body_limit).
        "http": body_limited(django_asgi_app, [(UPLOAD_PATH, _upload_cap)]),
        "websocket": origin_validated(
            WebSocketAuthMiddleware(
                URLRouter(
                    [
                        *websocket_urlpatterns,
                        # OpenCode's /pty/{id}/connect, under the project's base URL (hangar.opencode).
                        path("oc/<str:project_id>/pty/<str:pty_id>/connect", PtyConsumer.as_asgi()),
                    ]
                )
            )
        ),
    }
)
# Load the URLconf (every view, serializer and DRF) now rather than on the first request, so that the heap
# frozen next holds all of the process's imports (hangar.heap).
get_resolver().url_patterns  # noqa: B018  (the attribute imports every URL module)
freeze_start_up_heap()
