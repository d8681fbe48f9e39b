from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "hangar.projects"
    label = "projects"

    def ready(self) -> None:
        from hangar.accounts.signals import member_leaving
        from hangar.projects.credential_services import credentials_revoke_for_leaving_member
        from hangar.projects.mcp_oauth_services import mcp_grants_drop_for_leaving_member

        member_leaving.connect(credentials_revoke_for_leaving_member, dispatch_uid="projects.credentials")
        member_leaving.connect(mcp_grants_drop_for_leaving_member, dispatch_uid="projects.mcp_oauth_grants")
