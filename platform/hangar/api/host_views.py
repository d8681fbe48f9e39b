"""The platform operator's sandbox hosts under `/api/operator/hosts/` (docs/scale-out.md, "Drain"): list
them, drain or activate one, as `manage.py sandbox_host` and the superuser admin do (the same service,
audited the same way).

Hosts are no org's: only a superuser signed in with a browser session reaches this. Anyone else gets a
404, as for a path that does not exist (the surface is invisible, not forbidden), and so does a request
with an API token, even a superuser's: a token acts in the one org it was made in."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import ApiToken
from hangar.conversations.host_selectors import host_named, hosts_all
from hangar.conversations.host_services import host_state_set
from hangar.conversations.models import HostState, SandboxHost

TAG = ["operator"]


class SandboxHostOut(serializers.Serializer):
    name = serializers.CharField()
    state = serializers.ChoiceField(choices=HostState.choices)
    state_changed_at = serializers.DateTimeField(allow_null=True)
    labels = serializers.ListField(child=serializers.CharField())
    cpus = serializers.FloatField()
    memory_mb = serializers.IntegerField()
    disk_mb = serializers.IntegerField()
    free_memory_mb = serializers.IntegerField()
    free_disk_mb = serializers.IntegerField()
    live_sandboxes = serializers.IntegerField()
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    heartbeat_age_s = serializers.SerializerMethodField(
        help_text="seconds since the last heartbeat by the server's clock (null: never beat)"
    )

    def get_heartbeat_age_s(self, host: SandboxHost) -> float | None:
        if host.heartbeat_at is None:
            return None
        return round((timezone.now() - host.heartbeat_at).total_seconds(), 1)


def operator_or_404(request) -> str:
    """Who the operator is (their email, for the audit), or a 404 for anyone else."""
    user = request.user
    operator = user.is_authenticated and user.is_active and user.is_superuser
    if not operator or isinstance(request.auth, ApiToken):
        raise NotFound()
    return str(user.email)


class OperatorView(APIView):
    # Anonymous callers get the 404 too (operator_or_404), not a 401 that would show the route exists.
    permission_classes = [AllowAny]


class HostListView(OperatorView):
    @extend_schema(
        tags=TAG,
        operation_id="operator_hosts_list",
        responses=SandboxHostOut(many=True),
        summary="Sandbox hosts",
    )
    def get(self, request):
        operator_or_404(request)
        return Response(SandboxHostOut(hosts_all(), many=True).data)


class _HostStateView(OperatorView):
    state: str

    def post(self, request, name):
        operator = operator_or_404(request)
        if host_named(name) is None:
            raise NotFound()
        host = host_state_set(host_name=name, state=self.state, by=operator)
        return Response(SandboxHostOut(host).data)


class HostDrainView(_HostStateView):
    state = HostState.DRAINING

    @extend_schema(
        tags=TAG,
        operation_id="operator_host_drain",
        request=None,
        responses=SandboxHostOut,
        summary="Drain a host: no new sessions; its idle sandboxes are hibernated, busy ones finish first",
    )
    def post(self, request, name):
        return super().post(request, name)


class HostActivateView(_HostStateView):
    state = HostState.ACTIVE

    @extend_schema(
        tags=TAG,
        operation_id="operator_host_activate",
        request=None,
        responses=SandboxHostOut,
        summary="Activate a host: it takes new sessions again",
    )
    def post(self, request, name):
        return super().post(request, name)
