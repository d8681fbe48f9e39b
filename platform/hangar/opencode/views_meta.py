"""Read-only project routes an OpenCode client asks for: /config, /agent, /path, /project/current,
/provider, /config/providers, /command, /skill, /vcs, and what its TUI asks at start (/lsp, /formatter, /mcp,
/provider/auth, /experimental/capabilities, /experimental/console, /experimental/workspace,
/experimental/workspace/status, /experimental/resource (the MCP servers' resources), /project/{id}/directories). OpenCode's newer `/api/*` surface is not served: its
TUI falls back to the routes above."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from hangar.conversations import selectors as conversation_selectors
from hangar.engine.agents.builtin_commands import with_builtins
from hangar.engine.agents.custom_agents import project_agents, read_workspace_agents
from hangar.engine.agents.custom_commands import read_workspace_commands
from hangar.engine.agents.skills import read_skill, read_skills
from hangar.engine.mcp import listings
from hangar.engine.mcp import prompts as mcp_prompts
from hangar.engine.tools import formatting
from hangar.engine.workspace import code_intel
from hangar.engine.workspace.sandboxes import manager
from hangar.opencode import meta
from hangar.opencode.base import OpenCodeView
from hangar.opencode.workspace_scope import workspace_session
from hangar.usage.selectors import offered_models
from sandbox.protocol import Sandbox, SandboxError

OC = ["opencode"]


class Agents(OpenCodeView):
    """The built-in agents, the project's, and the workspace's own (.opencode/agents/) as the newest
    session has them."""

    @extend_schema(tags=OC, operation_id="oc_agents", responses={200: dict})
    def get(self, request, project_id):
        box = _newest_workspace(self)
        custom = read_workspace_agents(box)[0] if box is not None else {}
        custom |= project_agents(self.scope.project.agents)
        return Response(meta.agents(self.scope.project, list(custom.values())))


class Path(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_path", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.path())


class ProjectCurrent(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_project_current", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.project_info(self.scope.project))


class Providers(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_provider_list", responses={200: dict})
    def get(self, request, project_id):
        providers, default = meta.providers(self.scope.project, _offered(self))
        return Response({"all": providers, "default": default, "connected": [p["id"] for p in providers]})


class ConfigProviders(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_config_providers", responses={200: dict})
    def get(self, request, project_id):
        providers, default = meta.providers(self.scope.project, _offered(self))
        return Response({"providers": providers, "default": default})


def _offered(view: OpenCodeView) -> list[str]:
    """The org's models this member may pick (its credentials' and allow-list's), the project's first."""
    scope = view.scope
    return offered_models(
        org=scope.project.org, membership=scope.membership, default=scope.project.default_model
    )


# What an OpenCode client asks of the machine it runs against, answered for Hangar: language servers,
# formatters and local MCP servers run inside the session's sandbox (nothing beside it), providers are set
# up in Hangar (not by OpenCode's auth flows), subagents report back to their caller (not in the
# background), and the project has one directory, the sandbox's workspace.


class Capabilities(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_experimental_capabilities", responses={200: dict})
    def get(self, request, project_id):
        return Response({"backgroundSubagents": False})


class ConsoleState(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_experimental_console", responses={200: dict})
    def get(self, request, project_id):
        return Response({"consoleManagedProviders": [], "switchableOrgCount": 0})


def _nothing_runs(name: str, answer: list | dict) -> type[OpenCodeView]:
    """/provider/auth (a map) and the like: nothing of the kind runs (/mcp: views_mcp, /lsp and /formatter:
    below)."""

    class Nothing(OpenCodeView):
        @extend_schema(tags=OC, operation_id=f"oc_{name}", responses={200: dict})
        def get(self, request, project_id):
            return Response(answer)

    Nothing.__name__ = Nothing.__qualname__ = f"{name.title().replace('_', '')}Status"
    return Nothing


class Lsp(OpenCodeView):
    """The language servers the named (else the newest) session's running sandbox has started (none until
    a file of their language is touched)."""

    @extend_schema(tags=OC, operation_id="oc_lsp", responses={200: dict})
    def get(self, request, project_id):
        return Response(code_intel.language_servers(workspace_session(self)))


class Formatter(OpenCodeView):
    """The formatters the named (else the newest) session's workspace turns on after a file tool's change,
    and the built-ins it does not (its opencode.json `formatter` key, read from its running sandbox)."""

    @extend_schema(tags=OC, operation_id="oc_formatter", responses={200: dict})
    def get(self, request, project_id):
        return Response(formatting.workspace_status(workspace_session(self)))


ProviderAuth = _nothing_runs("provider_auth", {})
Workspaces = _nothing_runs("experimental_workspace", [])  # OpenCode's remote workspaces: Hangar has its own
WorkspaceStatus = _nothing_runs("experimental_workspace_status", [])


class McpResources(OpenCodeView):
    """The resources of the project's MCP servers as its runs last listed them (hangar.engine.mcp.listings:
    the web process calls no server), keyed `<server>:<name>` like OpenCode's."""

    @extend_schema(tags=OC, operation_id="oc_experimental_resource", responses={200: dict})
    def get(self, request, project_id):
        return Response(listings.resources(self.scope.project, self.scope.actor.user_id))


class ProjectDirectories(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_project_directories", responses={200: dict})
    def get(self, request, project_id, opencode_project_id):
        if opencode_project_id != str(self.scope.project.pk):
            raise NotFound(f"Project not found: {opencode_project_id}")
        return Response([{"directory": meta.WORKSPACE}])


class Vcs(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_vcs", responses={200: dict})
    def get(self, request, project_id):
        project = self.scope.project
        return Response(
            {"default_branch": project.repo_default_branch} if project.repo_default_branch else {}
        )


def _newest_workspace(view: OpenCodeView) -> Sandbox | None:
    """The sandbox of the caller's newest session of the project while it runs: OpenCode lists a
    directory's commands and skills, and a Hangar project has one workspace per session. Nothing is
    started to answer."""
    newest = conversation_selectors.sessions_list(
        view.scope.actor, view.scope.project.pk, archived=False, roots_only=True, search="", limit=1
    )
    if not newest or not manager().is_running(newest[0].pk):
        return None
    return manager().connect(newest[0].pk)


class Commands(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_command_list", responses={200: dict})
    def get(self, request, project_id):
        box = _newest_workspace(self)
        commands = with_builtins(read_workspace_commands(box) if box is not None else ({}, []))[0]
        # The project's MCP servers' prompts follow, named `<server>:<prompt>` (hangar.engine.mcp.prompts).
        mcp = mcp_prompts.command_infos(self.scope.project, self.scope.actor.user_id)
        return Response([command.info() for command in commands.values()] + mcp)


class Skills(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_skill_list", responses={200: dict})
    def get(self, request, project_id):
        box = _newest_workspace(self)
        if box is None:
            return Response([])
        out = []
        for skill in read_skills(box):
            try:
                _, body = read_skill(box, skill.name)
            except (ValueError, SandboxError):
                continue
            out.append(
                {
                    "name": skill.name,
                    "description": skill.description,
                    "location": skill.path,
                    "content": body,
                }
            )
        return Response(out)
