"""What a project looks like to an OpenCode client: config, agents, paths, project, providers.

The sandbox's workspace is `/workspace`; that is the `directory` every session reports and the client
echoes back (as `?directory=`), which we accept and ignore: the base URL already names the project."""

from hangar.engine.providers.catalogue import ModelLimits, limits_for
from hangar.projects.models import Project

WORKSPACE = "/workspace"
HOME = "/root"


def config(project: Project, username: str, own: dict | None = None) -> dict:
    """The project's config over the member's own settings (`own`, hangar.accounts.member_config_services), as
    OpenCode lays a project's config over the global one."""
    body = {
        **(own or {}),
        "$schema": "https://opencode.ai/config.json",
        "command": {},
        "plugin": [],
        "mode": {},
        "agent": {},
        "provider": {},
        "username": (own or {}).get("username") or username,
        "default_agent": project.default_agent or "build",
        # OpenCode's TUI offers /share unless this is "disabled": the org's share policy says whether it may.
        "share": "disabled" if project.org.share_policy == "off" else "manual",
        "autoupdate": (own or {}).get("autoupdate", False),
    }
    if project.default_model:
        body["model"] = project.default_model
    return body


def agents(project: Project, custom: list | None = None) -> list[dict]:
    """The engine's visible agents and the workspace's (`custom`), in OpenCode's Agent shape, with the
    project's rules appended."""
    from hangar.engine.agents.builtin import agent_info, agent_list

    extra = list(project.permission_rules or [])
    listed = [*agent_list(), *(a for a in custom or [] if not a.hidden)]
    return [{**info, "permission": [*info["permission"], *extra]} for info in map(agent_info, listed)]


def path() -> dict:
    return {
        "home": HOME,
        "state": f"{HOME}/.local/state/opencode",
        "config": f"{HOME}/.config/opencode",
        "worktree": WORKSPACE,
        "directory": WORKSPACE,
    }


def project_info(project: Project) -> dict:
    return {
        "id": str(project.pk),
        "worktree": WORKSPACE,
        "name": project.name,
        "sandboxes": [],
        "time": {
            "created": int(project.created_at.timestamp() * 1000),
            "updated": int(project.updated_at.timestamp() * 1000),
        },
    }


def _limits(project: Project, provider_id: str, model_id: str) -> ModelLimits:
    return limits_for(project.model_limits, provider_id, model_id, litellm=False)


def _limit(project: Project, provider_id: str, model_id: str) -> dict:
    """The project's override, else the catalogue's stated default: the web process never imports LiteLLM
    (the worker, which does, may know the model better; see hangar.engine.providers.catalogue)."""
    limits = _limits(project, provider_id, model_id)
    return {
        "context": limits.context,
        "output": limits.output,
        **({"input": limits.input} if limits.input else {}),
    }


def providers(project: Project, models: list[str] | None = None) -> tuple[list[dict], dict]:
    """OpenCode's providers for `models` ("provider/model" names: the org's offer, hangar.usage.selectors.
    offered_models; else the project's default model alone), grouped by provider; the default is the
    project's model, else each provider's first."""
    names = models if models is not None else [project.default_model or ""]
    grouped: dict[str, dict] = {}
    for name in names:
        provider_id, _, model_id = name.partition("/")
        if not model_id:
            continue
        provider = grouped.setdefault(
            provider_id,
            {"id": provider_id, "name": provider_id, "source": "api", "env": [], "options": {}, "models": {}},
        )
        provider["models"][model_id] = _model(project, provider_id, model_id)
    default = {pid: next(iter(p["models"])) for pid, p in grouped.items()}
    chosen_provider, _, chosen_model = (project.default_model or "").partition("/")
    if chosen_model and chosen_provider in grouped and chosen_model in grouped[chosen_provider]["models"]:
        default[chosen_provider] = chosen_model
    return list(grouped.values()), default


def _model(project: Project, provider_id: str, model_id: str) -> dict:
    attachments = _limits(project, provider_id, model_id).attachments
    return {
        "id": model_id,
        "providerID": provider_id,
        "name": model_id,
        "api": {"id": model_id, "url": "", "npm": "@ai-sdk/openai-compatible"},
        "capabilities": {
            "temperature": True,
            "reasoning": False,
            "attachment": attachments,
            "toolcall": True,
            "input": {"text": True, "audio": False, "image": attachments, "video": False, "pdf": attachments},
            "output": {"text": True, "audio": False, "image": False, "video": False, "pdf": False},
            "interleaved": False,
        },
        "cost": {"input": 0, "output": 0, "cache": {"read": 0, "write": 0}},
        "limit": _limit(project, provider_id, model_id),
        "status": "active",
        "options": {},
        "headers": {},
        "release_date": "",
    }
