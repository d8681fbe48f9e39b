"""`!` shell mode (OpenCode's `POST /session/{id}/shell`): a command the person runs in the session's
sandbox, recorded in the conversation as OpenCode records it (its SessionPrompt.shellImpl): a user
message holding the synthetic text "The following tool was executed by the user", then an assistant
message by the named agent holding one `bash` tool part, running while the output streams, completed with
the output. No model is called; the next prompt's model reads it as a bash call and its result.

Unlike OpenCode, the command answers to the bash rules (the agent's, the project's, the session's and the
org's policy): a `deny` for any of its simple commands, or for a folder outside the workspace it names,
refuses it. `ask` runs it: the person who typed it is the one who would be asked.

The command runs in the web request (OpenCode answers once it is done), holding the session's lease so
that no run starts meanwhile; a prompt that arrives during it is run when it ends."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations import services as store
from hangar.conversations.loop_services import session_lease_acquire, session_lease_release
from hangar.conversations.models import Message, Session
from hangar.conversations.revert_services import revert_cleanup
from hangar.conversations.selectors import last_message_id
from hangar.engine.agents import permissions as perm
from hangar.engine.agents import shell_parse
from hangar.engine.agents.secret_env import command_env, masker_for
from hangar.engine.services import PromptRejected, prompt_agent, require_member
from hangar.engine.session.enqueue import enqueue_run
from hangar.engine.tools.bash import DEFAULT_TIMEOUT_MS, METADATA_CHARS
from hangar.engine.tools.truncate import output_path, truncate_output
from hangar.engine.workspace.sandboxes import sandbox_for_request
from hangar.ids import client_message_id_problem
from sandbox.protocol import WORKSPACE

USER_NOTE = "The following tool was executed by the user"  # OpenCode's synthetic text
MAX_COMMAND = 10_000
STREAM_EVERY_S = 0.25  # at most this often the running part's output is stored and sent


class ShellBusy(Exception):
    """The session is running (or a run is asked for): OpenCode's SessionBusyError, a 409."""


class ShellDenied(PromptRejected):
    """The bash rules deny the command: a 403 naming the rule's verdict."""


def shell_allowed(session: Session, agent_permission: list[dict[str, Any]], command: str) -> bool:
    """The bash tool's questions for `command` (hangar.engine.tools.bash), answered by the rules alone."""
    found = shell_parse.check(command, WORKSPACE)
    ruleset, policy = perm.ruleset_for(session, agent_permission)
    asks = [("external_directory", found.directories), ("bash", found.patterns)]
    return all(
        perm.decide(name, patterns, ruleset=ruleset, org_policy=policy) != perm.DENY
        for name, patterns in asks
        if patterns
    )


def session_shell(
    *,
    actor: Actor,
    session: Session,
    command: str,
    agent: str,
    model: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> tuple[Message, dict[str, Any]]:
    """Run `command` in the session's sandbox and record it (module doc). Returns the assistant message and
    its tool part. PromptRejected (400) for a bad body, ShellDenied (403), ShellBusy (409)."""
    require_member(actor, session)
    if not isinstance(command, str) or not command.strip() or len(command) > MAX_COMMAND:
        raise PromptRejected(f"a command of 1 to {MAX_COMMAND} characters", field="command")
    if message_id is not None:
        problem = client_message_id_problem(message_id, last=last_message_id(session))
        if problem:
            raise PromptRejected(problem, field="messageID")
    chosen = prompt_agent(session, agent)
    model = model or chosen.model or session.model
    if not (model or {}).get("modelID"):
        raise PromptRejected("no model: set one on the request, the session or the project", field="model")
    if not shell_allowed(session, chosen.permission, command):
        raise ShellDenied("the bash permission rules deny this command", field="command")
    timeout_s = min(DEFAULT_TIMEOUT_MS / 1000, int(session.project.command_timeout_s))
    owner = f"shell:{uuid.uuid4().hex[:12]}"
    if (
        session.status != "idle"
        or session_lease_acquire(session_id=session.pk, owner=owner, ttl_s=int(timeout_s) + 60) is None
    ):
        raise ShellBusy(session.pk)
    try:
        assistant, part = _record_start(actor, session, command, chosen.name, model, message_id)
        part = _run(session, assistant, part, command, timeout_s)
    finally:
        store.session_status_set(session=session, status="idle")
        if session_lease_release(session_id=session.pk, owner=owner):  # a prompt came meanwhile
            enqueue_run(session.pk)
    return assistant, part


def _record_start(
    actor: Actor, session: Session, command: str, agent: str, model: dict[str, Any], message_id: str | None
) -> tuple[Message, dict[str, Any]]:
    ref = {"providerID": model["providerID"], "modelID": model["modelID"]}
    with transaction.atomic():
        if session.revert:  # as a prompt: the reverted messages go once the conversation moves on
            revert_cleanup(session)
        user = store.message_create(
            session=session,
            data={
                "id": message_id,
                "role": "user",
                "time": {"created": store.now_ms()},
                "agent": agent,
                "model": ref,
            },
            parts=[{"type": "text", "text": USER_NOTE, "synthetic": True}],
        )
        assistant = store.message_create(
            session=session,
            data={
                "role": "assistant",
                "parentID": user.pk,
                "mode": agent,
                "agent": agent,
                "cost": 0,
                "path": {"cwd": WORKSPACE, "root": WORKSPACE},
                "time": {"created": store.now_ms()},
                "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                **ref,
            },
        )
        part = store.part_upsert(
            message=assistant,
            data={
                "type": "tool",
                "tool": "bash",
                "callID": f"call_{uuid.uuid4().hex[:24]}",
                "state": {
                    "status": "running",
                    "time": {"start": store.now_ms()},
                    "input": {"command": command},
                },
            },
        ).data
        store.session_status_set(session=session, status="busy")
        audit_record(actor=actor, action="session.shell", target=session, data={"message": assistant.pk})
    return assistant, part


def _run(
    session: Session, assistant: Message, part: dict[str, Any], command: str, timeout_s: float
) -> dict[str, Any]:
    """Run it, the output streamed into the running part, then complete the part and the message."""
    box = sandbox_for_request(session)
    masker = masker_for(session.project)  # the project's secrets never reach the part or its events
    shown: list[str] = []
    last_sent = [0.0]

    def on_output(chunk: str) -> None:
        shown.append(chunk)
        if len(shown) > 64:
            shown[:] = ["".join(shown)[-METADATA_CHARS:]]
        now = time.monotonic()
        if now - last_sent[0] >= STREAM_EVERY_S:
            last_sent[0] = now
            output = masker.text("".join(shown))[-METADATA_CHARS:]
            store.part_upsert(
                message=assistant, data={**part, "state": {**part["state"], "metadata": {"output": output}}}
            )

    result = box.exec(
        command,
        cwd=WORKSPACE,
        env=command_env(session.project, command, WORKSPACE) or None,  # as the bash tool's (secret_env)
        timeout_s=timeout_s,
        on_output=on_output,
        cancel=threading.Event(),
        full_output_path=output_path(part["callID"]),
    )
    output = result.output
    if result.status == "timeout":
        output += f"\n\n<metadata>\nbash tool terminated command after exceeding timeout {int(timeout_s * 1000)} ms\n</metadata>"
    spilled = result.full_output_path and result.total_bytes is not None and result.total_lines is not None
    bounded = truncate_output(
        output,
        call_id=part["callID"],
        sandbox=box,
        direction="tail",
        total=(result.total_bytes or 0, result.total_lines or 0) if spilled else None,
        saved_path=result.full_output_path if spilled else None,
    )
    state = {
        "status": "completed",
        "input": {"command": command},
        "title": "",
        "metadata": {"output": bounded.content, "exit": result.exit_code},
        "output": bounded.content,
        "time": {"start": part["state"]["time"]["start"], "end": store.now_ms()},
    }
    data = {**assistant.data, "time": {**assistant.data["time"], "completed": store.now_ms()}}
    parts, _ = store.parts_upsert(
        message=assistant, parts=[{**part, "state": masker.data(state)}], message_data=data
    )
    return parts[0]
