"""Health of what the platform stands on: Postgres, Redis, the Docker engine, Celery workers, sandbox disk.

200 when Postgres and Redis answer (the API can serve); Docker, workers and disk only degrade the status,
since the API still works without them (runs queue until a worker is back).
Anyone (a load balancer) gets the cheap liveness, `{"status"}` alone: two pings, no Celery broadcast, no
Docker call, no error text. A signed-in user gets each check, with a failure named by its exception type
only (the text may carry hosts and addresses); the Celery ping is cached for a few seconds, so polling
clients do not broadcast to every worker on every request."""

import threading
import time

import redis
from django.conf import settings
from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

WORKERS_CACHE_S = 10
_workers_seen: tuple[float, dict] | None = None
_workers_lock = threading.Lock()


def _check(fn) -> dict:
    try:
        detail = fn()
        return {"status": "ok", **({"detail": detail} if detail else {})}
    except Exception as exc:  # a health check reports every failure, whatever its type
        return {"status": "error", "detail": type(exc).__name__}


def check_postgres() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return ""


def check_redis() -> str:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        client.ping()
    finally:
        client.close()
    return ""


def check_docker() -> str:
    import docker

    client = docker.from_env(timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return ""


def check_workers() -> str:
    from hangar.celery import app

    replies = app.control.ping(timeout=0.5) or []
    if not replies:
        raise RuntimeError("no Celery worker answered")
    return f"{len(replies)} worker(s)"


def check_model() -> str:
    """The bundled model server (deploy/up.sh sets HANGAR_MODEL_HEALTH_URL while it serves one)."""
    import httpx

    response = httpx.get(settings.MODEL_HEALTH_URL, timeout=1.0)
    response.raise_for_status()
    return ""


def _model_check() -> dict:
    """The bundled model: ok once it answers; while deploy/local-model.sh builds it, `starting` with what
    it is doing and the minutes left (the web app's readiness badge shows the detail)."""
    from hangar import local_model

    check = _check(check_model)
    starting = local_model.status() if check["status"] != "ok" else None
    if starting is not None and starting["state"] in (*local_model.NOT_READY, "serving"):
        state = "error" if starting["state"] == "failed" else "starting"
        check = {"status": state, "detail": local_model.describe(starting)}
        if state == "starting" and local_model.minutes_left(starting):
            check["minutes_left"] = local_model.minutes_left(starting)
    return check


def check_sandbox_disk() -> str:
    from sandbox import budget, repo_disk
    from sandbox.protocol import QuotaExceeded

    now, limits = budget.usage(), budget.Limits.from_env()
    if now.free_mb < limits.headroom_mb:
        raise QuotaExceeded("at its high watermark")  # new workspaces are refused, writers paused
    return (
        f"{now.free_mb:.0f} MB free, {now.written_mb:.0f} MB written by {now.volumes} workspaces "
        f"(quotas {now.reserved_mb:.0f} MB, not held), {repo_disk.used_mb():.0f} MB in repositories (mirrors and "
        f"layers), {limits.headroom_mb} MB headroom"
    )


def _workers_cached() -> dict:
    global _workers_seen
    with _workers_lock:
        if _workers_seen is None or time.monotonic() - _workers_seen[0] > WORKERS_CACHE_S:
            _workers_seen = (time.monotonic(), _check(check_workers))
        return _workers_seen[1]


def health_report(*, detail: bool) -> tuple[dict, int]:
    checks = {"postgres": _check(check_postgres), "redis": _check(check_redis)}
    essential_ok = all(check["status"] == "ok" for check in checks.values())
    code = 200 if essential_ok else 503
    if not detail:
        return {"status": "ok" if essential_ok else "error"}, code
    checks |= {
        "docker": _check(check_docker),
        "workers": _workers_cached(),
        "sandbox_disk": _check(check_sandbox_disk),
    }
    if settings.MODEL_HEALTH_URL:
        checks["model"] = _model_check()
    all_ok = all(check["status"] == "ok" for check in checks.values())
    status = "ok" if all_ok else ("degraded" if essential_ok else "error")
    return {"status": status, "checks": checks}, code


class CheckOut(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "starting", "error"], help_text="`starting`: the bundled model."
    )
    detail = serializers.CharField(required=False)
    minutes_left = serializers.IntegerField(required=False, help_text="The bundled model's estimate.")


class HealthOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded", "error"])
    checks = serializers.DictField(child=CheckOut(), required=False, help_text="Signed-in users only.")


class HealthView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(operation_id="health", responses={200: HealthOut, 503: HealthOut})
    def get(self, request):
        body, status = health_report(detail=bool(request.user and request.user.is_authenticated))
        return Response(body, status=status)
