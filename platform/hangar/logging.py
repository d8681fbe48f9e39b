"""Structured logs (structlog) carrying request id, org and session through contextvars."""

import logging
import uuid

import structlog

structlog.configure(
    processors=[
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(),
    ],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
    cache_logger_on_first_use=True,
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {"LiteLLM": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}


def get_logger(name: str):
    return structlog.get_logger(name)


class RequestIdMiddleware:
    """Binds a request id (from X-Request-ID or fresh) to the log context and echoes it back."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        request.request_id = request_id[:64]
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request.request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


logging.getLogger("hangar").setLevel(logging.INFO)
