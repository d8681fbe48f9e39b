"""The Content-Security-Policy every response carries (pages, API answers, errors, static files): what
a page of Hangar's origin may load or run. Model output is untrusted markdown shown in the viewer's
browser; were an image or a script of it ever rendered, the policy still keeps it from reaching out:
no inline or foreign script, images only from the platform itself and `data:`, connections only to
the platform and its WebSocket. Styles may be inline (the terminal and React set them at run time);
they cannot fetch, since images and fonts are held to the platform."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def policy(host: str) -> str:
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            f"connect-src 'self' ws://{host} wss://{host}",
            "object-src 'none'",
            "base-uri 'self'",
            "frame-ancestors 'none'",
        ]
    )


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if HEADER not in response:
            try:
                host = request.get_host()
            except Exception:  # a disallowed Host: the error page still gets a policy, without it
                host = "localhost"
            response[HEADER] = policy(host)
        return response
