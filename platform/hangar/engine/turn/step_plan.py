"""What one step runs with: its agent, model, rules and tools (seed 000 §3.2, "resolve the agent, the model,
the tools"), as a frozen `StepPlan` the loop hands to whatever the step does. The run's `Planner` works it
out from the step's user message and the rules just re-read, and keeps what is worth keeping between steps:
the resolved model (its credential decrypted once), the org's policy, and the last offer of tools."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hangar.conversations.loop_selectors import StepState
from hangar.conversations.models import Message, Session
from hangar.conversations.services import now_ms
from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import AGENTS, Agent, agent_get
from hangar.engine.agents.custom_agents import UnknownAgent, project_agents, resolve_agent
from hangar.engine.agents.skills import listing as skills_listing
from hangar.engine.mcp.tools import McpCatalog
from hangar.engine.providers.base import Model, ProviderError
from hangar.engine.providers.resolve import ModelResolver
from hangar.engine.session.outcomes import ModelUnavailable
from hangar.engine.tools.base import Tool
from hangar.engine.tools.registry import ALL, get_tools, tool_schemas_for
from hangar.engine.turn.live_policy import LivePolicy
from hangar.engine.turn.session_sandbox import SessionSandbox
from hangar.engine.turn.tool_calls import CallScope

Rules = list[dict[str, Any]]


@dataclass(frozen=True)
class StepPlan:
    """One step's configuration: read by the step, never changed by it."""

    model_ref: dict[str, Any]  # {"providerID", "modelID"} as the user message asks
    model: Model
    agent: Agent
    tools: dict[str, Tool]  # offered this step (those the rules deny for every pattern left out)
    schemas: list[dict[str, Any]]  # the tools' schemas as the model sees them
    skills_block: str  # the system prompt's <available_skills>
    scope: CallScope  # what the step's tool calls need from the run

    def assistant_data(self, user: Message, agent: str | None = None) -> dict[str, Any]:
        """A new assistant message answering `user`, by the step's agent (or `agent`: the compaction's)."""
        name = agent or self.agent.name
        return {
            "role": "assistant",
            "time": {"created": now_ms()},
            "parentID": user.pk,
            "modelID": self.model_ref["modelID"],
            "providerID": self.model_ref["providerID"],
            "mode": name,
            "agent": name,
            "path": {"cwd": "/workspace", "root": "/workspace"},
        }


class Planner:
    """Plans each step of one run. `resolve_model` is the seam a test swaps for a scripted model;
    `policy_stamp` is the policy's stamp as the lease keeper last read it (checked before each tool call)."""

    def __init__(
        self,
        session: Session,
        sandbox: SessionSandbox,
        *,
        abort: threading.Event,
        active_runs: Callable[[], int],
        resolve_model: ModelResolver,
        policy_stamp: Callable[[], datetime | None],
    ) -> None:
        self.session, self.sandbox, self.abort, self.active_runs = session, sandbox, abort, active_runs
        self._resolve_model, self._policy_stamp = resolve_model, policy_stamp
        self.live = LivePolicy(session, sandbox.attached)
        self.model: Model | None = None  # the last step's (None until a step resolved one)
        self._model_key: tuple[str, str] | None = None
        self._org_policy: Rules | None = None  # read once per run, again when a policy changes
        self._offered: tuple[tuple[Any, ...], dict[str, Tool], Rules] | None = None  # see `_offer`
        self._member_rules: Rules = []  # the run's person's own rules, read each step
        self.mcp = McpCatalog(sandbox.attach)  # the MCP servers' tools, listed at the run's first step

    def plan(self, user: Message, state: StepState) -> StepPlan:
        """The step's agent, model, rules and tools, from its user message and the rules just re-read."""
        session = self.session
        if self.live.observe(state.policy_stamp):  # a policy changed: re-read above, read the org's again
            self._org_policy = None
        session.permission, session.project.permission_rules = state.session_rules, state.project_rules
        self._member_rules = state.member_rules or []
        model_ref = user.data["model"]
        model = self._resolve(model_ref)  # first: a model that cannot be used fails before the sandbox
        agent = self._agent(user.data.get("agent"))
        ruleset = self._ruleset(agent)
        tools = get_tools(agent.name, model_ref["modelID"])
        if tools:  # an agent offered no tools (the hidden ones) gets no MCP tools either
            tools.update(self.mcp.tools(session, set(ALL), self.sandbox.workspace_mcp))
        skills = (
            [s for s in self.sandbox.skills() if self._may("skill", s.name, ruleset)]
            if "skill" in tools
            else []
        )
        if not skills:  # nothing to load: the tool is not offered (OpenCode's)
            tools.pop("skill", None)
        tools, schemas = self._offer(tools, ruleset)
        scope = CallScope(
            session=session,
            agent=agent.name,
            tools=tools,
            ruleset=ruleset,
            org_policy=self.org_policy(),
            abort=self.abort,
            sandbox=self.sandbox.attach,
            active_runs=self.active_runs,
            refresh_policy=lambda: self._refresh_policy(agent),
            custom_agents=self._custom_agents() if "task" in tools else {},
            workspace_lsp=self.sandbox.workspace_lsp,
            workspace_formatter=self.sandbox.workspace_formatter,
        )
        return StepPlan(model_ref, model, agent, tools, schemas, skills_listing(skills), scope)

    @property
    def model_ref(self) -> dict[str, Any] | None:
        """The last step's model, as a user message names one (None until a step resolved one)."""
        return {"providerID": self._model_key[0], "modelID": self._model_key[1]} if self._model_key else None

    def org_policy(self) -> Rules:
        if self._org_policy is None:
            self._org_policy = perm.org_policy_for(self.session.org)
        return self._org_policy

    def _resolve(self, model_ref: dict[str, Any]) -> Model:
        """The step's model, resolved (its credential decrypted) when it differs from the last step's."""
        key = (model_ref["providerID"], model_ref["modelID"])
        if self.model is not None and self._model_key == key:
            return self.model
        session = self.session
        try:
            self.model = self._resolve_model(
                org_id=session.org_id, user_id=session.prompter_id, provider_id=key[0], model_id=key[1]
            )
        except ProviderError as exc:  # e.g. no credential for the provider: the user can act on this
            data = {
                "message": exc.message,
                **({"providerID": key[0]} if exc.name == "ProviderAuthError" else {}),
            }
            raise ModelUnavailable({"name": exc.name, "data": data}) from exc
        self._model_key = key
        return self.model

    def _may(self, permission: str, pattern: str, ruleset: Rules) -> bool:
        return perm.decide(permission, [pattern], ruleset=ruleset, org_policy=self.org_policy()) != perm.DENY

    def _custom_agents(self) -> dict[str, Agent]:
        """The task tool's choice beyond the built-in agents: the workspace's, the project's winning."""
        return {**self.sandbox.custom_agents()[0], **project_agents(self.session.project.agents)}

    def _agent(self, name: str | None) -> Agent:
        """A built-in agent, else the workspace's (read only for a name that is not built in)."""
        if not name or name in AGENTS:
            return agent_get(name)
        configured = project_agents(self.session.project.agents)
        if name in configured:
            return configured[name]
        try:
            return resolve_agent(name, self.sandbox.custom_agents(), configured)
        except UnknownAgent as exc:  # e.g. its file was deleted or broken since the prompt
            raise ModelUnavailable({"name": "UnknownAgent", "data": {"message": str(exc)}}) from exc

    def _offer(self, tools: dict[str, Tool], ruleset: Rules) -> tuple[dict[str, Tool], Rules]:
        """The tools the step offers (those the rules deny for every pattern are left out) and their
        schemas (the task tool lists only the subagents the rules let it start). Worked out again only when
        the tools or rules differ from the last step's: they rarely do, and comparing is a fraction of
        matching every rule against every tool."""
        policy = self.org_policy()
        custom = self._custom_agents() if "task" in tools else {}
        # The MCP catalog's generation: a server's re-listed tools may keep their names and change schemas.
        key = (list(tools), ruleset, policy, list(custom.values()), self.mcp.generation)
        if self._offered is None or self._offered[0] != key:
            off = perm.disabled_tools(key[0], ruleset, policy)
            kept = {name: tool for name, tool in tools.items() if name not in off}
            self._offered = (key, kept, tool_schemas_for(kept, ruleset, policy, custom.values()))
        return self._offered[1], self._offered[2]

    def _ruleset(self, agent: Agent) -> Rules:
        project, session = self.session.project, self.session
        return perm.session_ruleset(
            agent.permission,
            project.permission_rules,
            session.permission,
            org_rules=self.org_policy(),
            member_rules=self._member_rules,
        )

    def _refresh_policy(self, agent: Agent) -> tuple[Rules, Rules] | None:
        """Before a tool call: (ruleset, org policy) in force if a policy changed since the step began
        (the live sandbox is brought up to date meanwhile), else None. No statement unless it changed."""
        if not self.live.observe(self._policy_stamp()):
            return None
        self._org_policy = perm.org_policy_for(self.session.org)
        return self._ruleset(agent), self._org_policy
