"""The web app's entry page: frontend/dist/index.html at `/` and at every client-side route, so a reload
or a shared link on `/o/acme/p/3/s/ses_…` opens the app (its hashed assets come from WhiteNoise under
/static/). /api, /oc, /ws, /admin and /static never reach this view (hangar.urls)."""

from functools import lru_cache

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

NOT_BUILT = (
    "<!doctype html><title>Hangar</title><h1>The web app is not built</h1>"
    "<p>Run <code>deploy/setup.sh</code> (or <code>frontend/build.sh</code>). The API is at "
    '<a href="/api/docs/">/api/docs/</a>.</p>'
)


@lru_cache(maxsize=1)
def _index(mtime: float) -> str:
    return (settings.FRONTEND_DIST / "index.html").read_text()


@require_GET
@ensure_csrf_cookie  # the app's first POST (sign in) needs the CSRF cookie
def index(request, path: str = ""):
    page = settings.FRONTEND_DIST / "index.html"
    try:
        body, status = _index(page.stat().st_mtime), 200
    except FileNotFoundError:
        body, status = NOT_BUILT, 503
    response = HttpResponse(body, status=status, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-cache"  # the page names the current hashed assets
    return response
