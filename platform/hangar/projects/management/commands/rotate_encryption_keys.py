"""Re-encrypt every stored secret under the first of HANGAR_ENCRYPTION_KEYS. Rotation: prepend a new key,
run this, then remove the old key from the environment."""

from django.core.management.base import BaseCommand

from hangar.accounts.actors import system_actor
from hangar.projects.key_rotation import encryption_keys_rotate


class Command(BaseCommand):
    help = "Re-encrypt provider keys and env values with the first encryption key."

    def handle(self, *args, **opts):
        counts = encryption_keys_rotate(actor=system_actor(None, "rotate_encryption_keys"))
        self.stdout.write(
            f"re-encrypted {counts['credentials']} credential(s), {counts['env_vars']} env var(s), "
            f"{counts['repo_tokens']} repository token(s), {counts['repo_ssh_keys']} deploy key(s), "
            f"{counts['mcp_oauth_grants']} MCP OAuth grant(s)"
        )
