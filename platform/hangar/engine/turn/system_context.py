"""The durable system context (seed 001 "OpenCode Session Runtime").

A context epoch starts with a baseline: the system texts (the base prompt, then every context source's
rendering) stored with the session (hangar.conversations.models.ContextEpoch) and sent verbatim on every
provider turn of the epoch, so a provider's prompt cache keeps hitting, across worker restarts too. At each
safe provider-turn boundary (a step, after its input and the previous step's tool results are stored) the
sources are sampled again; the ones that changed since they were last admitted are told to the model in
one durable mid-conversation system message, placed after the history's last message, and the epoch's
snapshot advances with it in one write. A turn whose context did not change writes nothing.

Sources, in order: `environment` (model, git), `date`, `instructions` (the AGENTS.md / CLAUDE.md set: the
root's and those nested in directories the agent read files in; then the org's own, the hosted counterpart
of OpenCode's global instructions), `skills` (those the step's agent may load). A source the sandbox could not read is unavailable: it keeps its last value and says nothing; a
first baseline is not started without it (the turn ends with an error the person can retry).

A new epoch (a fresh baseline, earlier updates out of the model's history but kept) starts when the
history's start moved (a compaction completed), when a message an update followed is gone (a revert), or
when the base prompt changed (another agent's own prompt, another model family's): the baseline would no
longer be what the turn needs.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hangar.conversations.context_services import epoch_admit, epoch_start
from hangar.conversations.loop_selectors import context_epoch
from hangar.conversations.models import ContextEpoch, Session
from hangar.engine.session.history import boundary
from hangar.engine.session.outcomes import ContextUnavailable
from hangar.engine.session.system import prompt_text
from hangar.engine.turn.session_sandbox import SessionSandbox

Unavailable = None  # a sampled value the source could not observe this time
ORG_INSTRUCTIONS = "your organisation (its admins set these in the Hangar console)"
History = list[tuple[dict[str, Any], list[dict[str, Any]]]]


@dataclass(frozen=True)
class Source:
    key: str
    baseline: Callable[[Any], str]  # its text in a baseline ("": nothing to say)
    update: Callable[[Any], str]  # the mid-conversation text with its newly effective state


def _environment(value: dict[str, Any]) -> str:
    return (
        prompt_text("environment")
        .format(
            model_id=value["model"], provider_id=value["provider"], is_git="yes" if value["git"] else "no"
        )
        .rstrip()
    )


def _instructions(value: list[list[str]]) -> str:
    return "\n\n".join(f"Instructions from: {path}\n{text}" for path, text in value)


SOURCES = (
    Source(
        "environment",
        _environment,
        lambda value: f"The environment changed. It is now:\n{_environment(value)}",
    ),
    Source("date", lambda value: f"Today's date: {value}", lambda value: f"Today's date is now {value}."),
    Source(
        "instructions",
        _instructions,
        lambda value: (
            "The instructions in effect changed. These replace every instruction given before:\n\n"
            + _instructions(value)
            if value
            else "The instructions given before (from AGENTS.md or CLAUDE.md files) no longer apply."
        ),
    ),
    Source(
        "skills",
        lambda value: value,
        lambda value: (
            f"The skills you may load changed. They are now:\n{value}"
            if value
            else "No skills are available any more."
        ),
    ),
)


def render_baseline(base: str, values: dict[str, Any]) -> list[str]:
    """The baseline's system texts: the base prompt (cached on its own), then every source's rendering."""
    rendered = (source.baseline(values[source.key]) for source in SOURCES)
    return [base, "\n\n".join(text for text in rendered if text)]


def reconcile(snapshot: dict[str, Any], values: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The snapshot after admitting `values`, and the one message telling the model what changed (None:
    nothing to say). An unavailable value keeps the source's last one; a source the snapshot does not
    hold yet (added since the epoch began) says its baseline once."""
    admitted, texts = dict(snapshot), []
    for source in SOURCES:
        value = values[source.key]
        if value is Unavailable or snapshot.get(source.key, Unavailable) == value:
            continue
        text = source.update(value) if source.key in snapshot else source.baseline(value)
        admitted[source.key] = value
        if text:
            texts.append(text)
    return admitted, "\n\n".join(texts) or None


def read_directories(history: History) -> list[str]:
    """Workspace-relative directories of the files the agent read in `history` (completed reads)."""
    dirs = set()
    for _info, parts in history:
        for part in parts:
            if part["type"] != "tool" or part["tool"] != "read" or part["state"]["status"] != "completed":
                continue
            path = part["state"].get("input", {}).get("filePath")
            if not isinstance(path, str):
                continue
            names = PurePosixPath("/workspace", path).parts  # ("/", "workspace", ..., file)
            if len(names) > 3 and names[1] == "workspace" and ".." not in names:
                dirs.add("/".join(names[2:-1]))
    return sorted(dirs)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class SystemContext:
    """One run's view of its session's context epoch: read once, as the run's first step needs it."""

    def __init__(self, session: Session, sandbox: SessionSandbox):
        self.session, self.sandbox = session, sandbox
        self._epoch: ContextEpoch | None = None
        self._read = False

    @property
    def epoch(self) -> ContextEpoch | None:
        if not self._read:
            self._epoch, self._read = context_epoch(self.session.pk), True
        return self._epoch

    def updates(self) -> dict[str, list[str]]:
        """The epoch's mid-conversation system messages, by the id of the message each follows."""
        out: dict[str, list[str]] = {}
        for update in self.epoch.updates if self.epoch else ():
            if update.get("text"):
                out.setdefault(update["after"], []).append(update["text"])
        return out

    def for_turn(
        self, stored: History, *, base: str, model_ref: dict[str, str], skills: str, since: History
    ) -> list[str]:
        """The system texts of the provider turn about to start (the epoch's baseline), starting an epoch
        or admitting a change first. `stored`: the whole history; `since`: the part the model is sent."""
        values = {
            "environment": {
                "model": model_ref["modelID"],
                "provider": model_ref["providerID"],
                "git": self.sandbox.is_git(),
            },
            "date": time.strftime("%a %b %d %Y"),
            "instructions": self._instructions(since),
            "skills": skills,
        }
        ids = [info["id"] for info, _parts in stored]
        start, epoch = ids[boundary([info for info, _parts in stored])], self.epoch
        if epoch is None or self._stale(epoch, start, base, set(ids)):
            if any(value is Unavailable for value in values.values()):
                raise ContextUnavailable(
                    {
                        "name": "ContextUnavailable",
                        "data": {"message": "The workspace could not be read to start the turn: try again."},
                    }
                )
            self._epoch = epoch_start(
                session=self.session,
                number=epoch.number + 1 if epoch else 1,
                boundary=start,
                base=_digest(base),
                baseline=render_baseline(base, values),
                snapshot=values,
            )
            return list(self._epoch.baseline)
        snapshot, text = reconcile(epoch.snapshot, values)
        if snapshot != epoch.snapshot:
            epoch_admit(epoch=epoch, snapshot=snapshot, after=ids[-1], text=text)
        return list(epoch.baseline)

    def _instructions(self, since: History) -> list[list[str]] | None:
        """The workspace's instruction files, then the org's own instructions (set in the console)."""
        files = self.sandbox.instructions(read_directories(since))
        org = self.session.org.instructions
        return files if files is None or not org else [*files, [ORG_INSTRUCTIONS, org]]

    @staticmethod
    def _stale(epoch: ContextEpoch, start: str, base: str, ids: set[str]) -> bool:
        return (
            epoch.boundary != start
            or epoch.base != _digest(base)
            or any(update["after"] not in ids for update in epoch.updates)
        )
