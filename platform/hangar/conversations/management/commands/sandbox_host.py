"""`manage.py sandbox_host list | drain NAME | activate NAME`: the platform operator's hosts (the
registry, docs/scale-out.md). Drain takes a host out of placement: its host service hibernates its idle
sandboxes (busy ones when their run ends) and marks it drained when none is live; activate puts it back."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from hangar.conversations.host_selectors import hosts_all
from hangar.conversations.host_services import host_state_set
from hangar.conversations.models import HostState
from hangar.errors import ValidationError


class Command(BaseCommand):
    help = "List the sandbox hosts, or drain or activate one."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list", help="every host: state, heartbeat age, free memory and disk, live sandboxes")
        for action in ("drain", "activate"):
            sub.add_parser(action, help=f"{action} a host").add_argument("name", help="the host's name")

    def handle(self, *args, **opts):
        if opts["action"] == "list":
            self._list()
            return
        state = HostState.DRAINING if opts["action"] == "drain" else HostState.ACTIVE
        try:
            host = host_state_set(
                host_name=opts["name"], state=state, by=f"manage.py sandbox_host {opts['action']}"
            )
        except ValidationError as exc:
            raise CommandError(_message(exc)) from None
        self.stdout.write(f"{host.name}: {host.state}")

    def _list(self) -> None:
        hosts = hosts_all()
        if not hosts:
            self.stdout.write("no sandbox host registered")
            return
        now = timezone.now()
        self.stdout.write("name\tstate\theartbeat\tfree memory MB\tfree disk MB\tlive\tlabels")
        for h in hosts:
            age = f"{(now - h.heartbeat_at).total_seconds():.0f}s ago" if h.heartbeat_at else "never"
            labels = ",".join(h.labels or []) or "-"
            self.stdout.write(
                f"{h.name}\t{h.state}\t{age}\t{h.free_memory_mb}\t{h.free_disk_mb}\t{h.live_sandboxes}\t{labels}"
            )


def _message(exc: ValidationError) -> str:
    detail = exc.detail
    if isinstance(detail, dict):
        return "; ".join(str(v) for v in detail.values())
    return str(detail)
