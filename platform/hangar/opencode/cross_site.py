"""Cross-site requests to /oc/. A browser that once answered its Basic challenge attaches those credentials
to every request for the origin, a cross-site form post included: form-urlencoded, multipart or text/plain
(whose body can be made valid JSON). A page elsewhere cannot send `Content-Type: application/json` without
a CORS preflight, which /oc/ never grants, so an unsafe method must carry that type. A bodyless call (the
stock SDK sends abort with no body and no type) is allowed unless a browser marks it as cross-site, since
a credentialed `fetch` without a body needs no preflight either."""

from urllib.parse import urlsplit

from rest_framework.exceptions import APIException, PermissionDenied, UnsupportedMediaType

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _foreign_origin(request) -> bool:
    site = request.META.get("HTTP_SEC_FETCH_SITE", "")
    if site in ("cross-site", "same-site"):
        return True
    origin = request.META.get("HTTP_ORIGIN", "")
    return bool(origin) and urlsplit(origin).netloc != request.get_host()


def cross_site_refusal(request) -> APIException | None:
    """Why this request (a Django HttpRequest) must not act, or None."""
    if request.method not in UNSAFE_METHODS:
        return None
    content_type = request.META.get("CONTENT_TYPE", "")
    if content_type.split(";")[0].strip().lower() == "application/json":
        return None
    if content_type or int(request.META.get("CONTENT_LENGTH") or 0):
        return UnsupportedMediaType(
            content_type, detail=f"Unsupported content type {content_type!r}: send JSON."
        )
    if _foreign_origin(request):
        return PermissionDenied("Cross-site requests are refused.")
    return None
