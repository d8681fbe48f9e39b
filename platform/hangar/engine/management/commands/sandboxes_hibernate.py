"""`manage.py sandboxes_hibernate`: stop every sandbox of this host's sandbox root, keeping workspaces
(deploy/up.sh runs it when it stops, so Ctrl-C leaves no sandbox running)."""

from django.core.management.base import BaseCommand

from hangar.engine.workspace.sandboxes import hibernate_all


class Command(BaseCommand):
    help = "Hibernate every running sandbox of this host (workspaces kept) and empty the warm pool."

    def handle(self, *args: object, **options: object) -> None:
        hibernated, removed = hibernate_all()
        self.stdout.write(
            f"{hibernated} stopped (workspaces kept, resumed on the next prompt), {removed} pooled removed"
        )
