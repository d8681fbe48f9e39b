"""Services that start or stop a run: prompt (with its agent, subtask and file parts), summarize, abort.
Answers to what a run waits on (permissions, questions) are hangar.engine.reply_services'.

Each is atomic, audits, and enqueues the run on commit (hangar.engine.session.enqueue, via request_run).
"""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction

from hangar import agent_config
from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.audit.services import audit_record
from hangar.conversations import services as store
from hangar.conversations.models import (
    Message,
    PermissionRequest,
    QuestionRequest,
    Session,
)
from hangar.conversations.revert_services import revert_cleanup
from hangar.conversations.selectors import last_message_id
from hangar.conversations.services import DEFAULT_TITLE_PREFIX
from hangar.conversations.session_services import session_title_provisional
from hangar.engine.agents import custom_agents
from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import AGENTS, Agent, agent_get
from hangar.engine.agents.secret_env import masker_for
from hangar.engine.mcp import resources as mcp_resources
from hangar.engine.run.compaction import compaction_request
from hangar.engine.session.enqueue import enqueue_run
from hangar.engine.session.subtasks import children_abort
from hangar.engine.turn.prompt_files import resolve_files
from hangar.engine.workspace.sandboxes import sandbox_for_request
from hangar.errors import NotFound
from hangar.ids import client_message_id_problem


class PromptRejected(ValueError):
    def __init__(self, message: str, *, field: str = "parts"):
        super().__init__(message)
        self.field = field  # the request field the edges name in their 400


def require_member(actor: Actor, session: Session) -> None:
    """Viewers may read but not drive a session. A foreign org is "not found" (404), never "forbidden"."""
    from hangar.accounts.selectors import require_role

    if actor.org_id != session.org_id:
        raise NotFound()
    if actor.user is not None:
        require_role(actor, session.org_id, Role.MEMBER)


def request_run(session: Session, **changes: Any) -> None:
    """Flag the session for its runner and enqueue the run on commit; other column `changes` of the
    caller's ride in the same UPDATE."""
    Session.objects.filter(pk=session.pk).update(run_requested=True, **changes)
    transaction.on_commit(lambda: enqueue_run(session.pk))


def session_prompt(
    *,
    actor: Actor,
    session: Session,
    parts: list[dict[str, Any]],
    agent: str | None = None,
    model: dict[str, Any] | None = None,
    message_id: str | None = None,
    system: str | None = None,
    mcp_prompt: dict[str, Any] | None = None,
) -> Message:
    """Store the user's message (text and file parts) and start (or feed) the run. A prompt to a busy
    session is read by the running loop at its next step, wrapped in <system-reminder>. `mcp_prompt`: the
    text part an MCP prompt's command stores first, for the worker to fetch (hangar.engine.mcp.prompts)."""
    require_member(actor, session)
    if not parts and not mcp_prompt:
        raise PromptRejected("a prompt needs at least one part")
    if message_id is not None:
        problem = client_message_id_problem(message_id, last=last_message_id(session))
        if problem:
            raise PromptRejected(problem, field="messageID")
    chosen = prompt_agent(session, agent)
    agent_name = chosen.name
    model = model or chosen.model or session.model
    if not (model or {}).get("modelID"):
        raise PromptRejected("no model: set one on the prompt, the session or the project")
    parts = resolve_files(  # before the transaction: a file may need the sandbox attached
        parts, session_id=session.pk, agent=agent_name, sandbox=lambda: sandbox_for_request(session)
    )
    parts = _masked_texts(session, parts)
    with transaction.atomic():
        if session.revert:  # the reverted messages go now that the conversation moves on (OpenCode's cleanup)
            revert_cleanup(session)
        data = {
            "id": message_id,
            "role": "user",
            "time": {"created": store.now_ms()},
            "agent": agent_name,
            "model": {"providerID": model["providerID"], "modelID": model["modelID"]},
        }
        if system:
            data["system"] = system
        # An MCP prompt's pending part comes from the command route only: a client's metadata is dropped below.
        bodies = [mcp_prompt] if mcp_prompt else []
        for part in parts:
            if part.get("type") == "subtask":
                bodies.append(_subtask_part(part, session))
                continue
            if part.get("type") == "agent":
                bodies.extend(_agent_parts(part, session, chosen))
                continue
            body = {
                k: v for k, v in part.items() if k in ("type", "text", "mime", "filename", "url", "synthetic")
            }
            if body.get("type") not in ("text", "file"):
                raise PromptRejected(f"unsupported part type {body.get('type')!r}")
            bodies.extend(_with_resource(part, body))
        message = store.message_create(session=session, data=data, parts=bodies)  # one statement
        if session.title.startswith(DEFAULT_TITLE_PREFIX) and not session.parent_id:  # its first prompt
            text = "\n".join(b["text"] for b in bodies if b.get("type") == "text" and not b.get("synthetic"))
            session_title_provisional(session=session, text=text)
        audit_record(
            actor=actor,
            action="session.prompt",
            target=session,
            data={"message": message.pk, "agent": agent_name, "parts": len(parts)},
        )
        if session.status == "idle":
            store.session_status_set(session=session, status="busy")
        # The prompt's agent and model become the session's, and the prompter's credential the run's,
        # in request_run's UPDATE.
        changes: dict[str, Any] = (
            {} if session.prompter_id == actor.user_id else {"prompter_id": actor.user_id}
        )
        if agent_name != session.agent:
            changes["agent"] = agent_name
        if model != session.model:
            changes["model"] = {"providerID": model["providerID"], "modelID": model["modelID"]}
        request_run(session, **changes)
    return message


def _with_resource(part: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A file part whose source is an MCP resource becomes OpenCode's three parts, its content read by the
    worker (hangar.engine.mcp.resources); any other part stays as it is."""
    if body.get("type") != "file":
        return [body]
    try:
        source = mcp_resources.resource_source(part)
    except ValueError as exc:
        raise PromptRejected(str(exc)) from None
    return [body] if source is None else mcp_resources.attached(body, source)


def prompt_agent(session: Session, name: str | None) -> Agent:
    """The agent a prompt names (else the session's): built in, else the project's, else defined in the
    workspace, read from the session's sandbox only for such a name. PromptRejected (a 400 naming `agent`) if there is none,
    with the reason when its file does not parse."""
    name = name or session.agent or "build"
    if name in AGENTS:
        return AGENTS[name]
    if not isinstance(name, str) or not agent_config.NAME.fullmatch(name):
        raise PromptRejected(f"no agent named {str(name)[:64]!r}", field="agent")
    configured = custom_agents.project_agents(session.project.agents)
    if name in configured:
        return configured[name]
    try:
        workspace = custom_agents.read_workspace_agents(sandbox_for_request(session))
        return custom_agents.resolve_agent(name, workspace, configured)
    except custom_agents.UnknownAgent as exc:
        raise PromptRejected(str(exc), field="agent") from None


SUBTASK_LIMITS = {"prompt": 100_000, "description": 200, "agent": 64, "command": 2_000}


def _subtask_part(part: dict[str, Any], session: Session) -> dict[str, Any]:
    """OpenCode's SubtaskPartInput, checked: the agent a subagent, the texts bounded, the model well formed.
    The run then starts that subagent's task without asking the model (hangar.engine.run.loop.run_subtask)."""
    body: dict[str, Any] = {"type": "subtask"}
    for key, limit in SUBTASK_LIMITS.items():
        value = part.get(key)
        if value is None and key == "command":
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise PromptRejected(
                f"a subtask part needs {key!r}: a non-empty string of at most {limit} characters"
            )
        body[key] = value
    try:
        agent = prompt_agent(session, body["agent"])
    except PromptRejected:
        agent = None
    if agent is None or agent.mode == "primary" or agent.hidden:
        raise PromptRejected(f"unknown subagent {body['agent']!r}")
    model = part.get("model")
    if model is not None:
        if not isinstance(model, dict) or not all(
            isinstance(model.get(k), str) and 0 < len(model[k]) <= 200 for k in ("providerID", "modelID")
        ):
            raise PromptRejected("a subtask's model needs providerID and modelID")
        body["model"] = {"providerID": model["providerID"], "modelID": model["modelID"]}
    return body


# OpenCode's words after an `@agent` mention (its SessionPrompt.createUserMessage), read by the model.
AGENT_MENTION = (
    " Use the above message and context to generate a prompt and call the task tool with subagent: "
)


def _agent_parts(part: dict[str, Any], session: Session, chosen: Agent) -> list[dict[str, Any]]:
    """OpenCode's AgentPartInput (the TUI's `@explore`): the agent part kept as it came, then a synthetic
    text telling the model to delegate to that subagent with the task tool, as OpenCode does. The name must
    be a subagent the prompt's agent may start: OpenCode lets the user's mention pass its agent's `task`
    rule, but here the project's and org's rules are governance, so a denied subagent is a 400 instead of a
    task call the model would see refused."""
    name = part.get("name")
    if not isinstance(name, str) or not agent_config.NAME.fullmatch(name):
        raise PromptRejected("an agent part needs 'name': an agent's name")
    try:
        agent = prompt_agent(session, name)
    except PromptRejected:
        agent = None
    if agent is None or agent.mode == "primary" or agent.hidden:
        raise PromptRejected(f"unknown subagent {name!r}")
    ruleset, policy = perm.ruleset_for(session, chosen.permission)
    if perm.decide("task", [name], ruleset=ruleset, org_policy=policy) == perm.DENY:
        raise PromptRejected(f"the permission rules deny starting the subagent {name!r}")
    body: dict[str, Any] = {"type": "agent", "name": name}
    source = part.get("source")
    if isinstance(source, dict) and _agent_source_ok(source):
        body["source"] = {"value": source["value"], "start": source["start"], "end": source["end"]}
    return [body, {"type": "text", "text": AGENT_MENTION + name, "synthetic": True}]


def _agent_source_ok(source: dict[str, Any]) -> bool:
    """Where in the typed text the mention stood ({value, start, end}), as the TUI sends it."""
    value, start, end = source.get("value"), source.get("start"), source.get("end")
    return (
        isinstance(value, str)
        and len(value) <= 200
        and all(isinstance(n, int) and 0 <= n <= 1_000_000 for n in (start, end))
    )


def session_summarize(
    *, actor: Actor, session: Session, model: dict[str, Any] | None = None, auto: bool = False
) -> Message:
    """Compact the session's history now (OpenCode's `summarize`): a user message holding a `compaction`
    part, by the session's agent, is stored and the run started (or fed: a busy run compacts at its next
    step). The compaction agent then summarises the history with `model` (default: the session's); the
    summary becomes where the history the model is sent starts. `auto` also continues the work afterwards,
    as an automatic compaction does."""
    require_member(actor, session)
    model = model or session.model
    if not (model or {}).get("modelID") or not model.get("providerID"):
        raise PromptRejected("no model: name one, or set one on the session or the project", field="modelID")
    with transaction.atomic():
        message = compaction_request(
            session,
            agent=agent_get(session.agent).name,
            model={"providerID": model["providerID"], "modelID": model["modelID"]},
            auto=auto,
        )
        audit_record(
            actor=actor,
            action="session.summarize",
            target=session,
            data={"message": message.pk, "auto": auto},
        )
        if session.status == "idle":
            store.session_status_set(session=session, status="busy")
        changes = {} if session.prompter_id == actor.user_id else {"prompter_id": actor.user_id}
        request_run(session, **changes)
    return message


def session_abort(*, actor: Actor, session: Session) -> None:
    """Ask the runner to stop. The runner (this one or the next to take the lease) cancels the stream
    and the running command, marks unfinished tool parts "Tool execution aborted" and goes idle."""
    require_member(actor, session)
    with transaction.atomic():
        Session.objects.filter(pk=session.pk).update(abort_requested=True)
        audit_record(actor=actor, action="session.abort", target=session)
        request_run(session)
        children_abort(session.pk)  # at once, not only when the parent's run gets to it


def wait_idle(session_id: str, timeout_s: float = 600.0, poll_s: float = 0.05) -> Session:
    """Block until the session is idle with no run pending (the OpenCode blocking prompt uses this)."""
    deadline = time.monotonic() + timeout_s
    while True:
        session = Session.objects.get(pk=session_id)
        waiting = (
            PermissionRequest.objects.filter(session_id=session_id, status="pending").exists()
            or QuestionRequest.objects.filter(session_id=session_id, status="pending").exists()
        )
        if (session.status == "idle" and not session.run_requested and not session.lease_owner) or waiting:
            return session
        if time.monotonic() > deadline:
            return session
        time.sleep(poll_s)


def _masked_texts(session: Session, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt's text parts (what it typed and the files read for it) with the project's secrets masked:
    a file a command wrote a secret into never reaches the model (hangar.engine.agents.secret_env)."""
    if not any(p.get("type") == "text" for p in parts):
        return parts
    masker = masker_for(session.project)
    if not masker:
        return parts
    return [
        {**p, "text": masker.text(str(p.get("text", "")))} if p.get("type") == "text" else p for p in parts
    ]
