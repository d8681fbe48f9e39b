"""Liveness of what the platform stands on: Postgres, Redis, the Docker engine, Celery workers.

200 when Postgres and Redis answer (the API can serve); Docker and workers only degrade the status,
since the API still works without them (runs queue until a worker is back). Unauthenticated, so it
reports reachability and counts only, never tenant data or connection strings."""

import redis
from django.conf import settings
from django.db import connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


def _check(fn) -> dict:
    try:
        detail = fn()
        return {"status": "ok", **({"detail": detail} if detail else {})}
    except Exception as exc:  # a health check reports every failure, whatever its type
        return {"status": "error", "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}


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


def health_report() -> tuple[dict, int]:
    checks = {
        "postgres": _check(check_postgres),
        "redis": _check(check_redis),
        "docker": _check(check_docker),
        "workers": _check(check_workers),
    }
    if settings.MODEL_HEALTH_URL:
        checks["model"] = _check(check_model)
    essential_ok = checks["postgres"]["status"] == "ok" and checks["redis"]["status"] == "ok"
    all_ok = all(check["status"] == "ok" for check in checks.values())
    status = "ok" if all_ok else ("degraded" if essential_ok else "error")
    return {"status": status, "checks": checks}, 200 if essential_ok else 503


class CheckOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "error"])
    detail = serializers.CharField(required=False)


class HealthOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded", "error"])
    checks = serializers.DictField(child=CheckOut())


class HealthView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(operation_id="health", responses={200: HealthOut, 503: HealthOut})
    def get(self, request):
        body, status = health_report()
        return Response(body, status=status)
