"""Reaper: hibernates idle, long-running or archived sandboxes, destroys those whose session is gone.

Safe to run from several workers at once: every action is idempotent and "already gone" is
success. Decisions per session sandbox (container `hangar-s-*` and/or registry record):
  * session no longer alive (callback), idle longer than gone_grace_s -> destroy (container, volume,
    record); within the grace period it is only hibernated: a session that merely looks gone for a
    moment (a read that failed over, a row not yet committed) keeps its files
  * session archived (callback), idle longer than archived_idle_s -> hibernate; the workspace stays
    for unarchive
  * running and idle longer than idle_ttl_s    -> hibernate (stop; the workspace stays)
  * running for longer than max_lifetime_s     -> hibernate (the next use resumes it fresh)
  ...but never while a command or terminal runs in it (the agent says so), unless it has outlived
  max_lifetime_s by BUSY_GRACE_S (a command's longest timeout): a stop mid-command loses the work.
  * an egress proxy/network whose session has neither record nor container -> removed
Idle time is the registry record's mtime, which every sandbox call refreshes (throttled).

A sweep over a thousand live and ten thousand hibernated sessions must stay cheap: one listing of the
containers (its state and creation time say which may be due; only those are inspected), and whether the
sessions still exist or are archived asked once for all of them when the caller can (`alive_of`,
`archived_of`), not once per session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import docker.errors

from sandbox import containers, egress, registry, volumes
from sandbox.connection import AgentConnection
from sandbox.protocol import SandboxError

if TYPE_CHECKING:
    from sandbox.manager import DockerSandboxes


BUSY_GRACE_S = 3600


@dataclass
class ReapReport:
    destroyed: list[str] = field(default_factory=list)
    hibernated: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _started_at(info: dict[str, Any]) -> float:
    stamp = info["State"].get("StartedAt", "")[:26].rstrip("Z")  # docker: nanoseconds, Z suffix
    try:
        return datetime.fromisoformat(stamp + "+00:00").timestamp()
    except ValueError:
        return time.time()


class Reaper:
    def __init__(
        self,
        manager: DockerSandboxes,
        is_session_alive: Callable[[str], bool],
        *,
        is_session_archived: Callable[[str], bool] | None = None,
        is_session_running: Callable[[str], bool] | None = None,
        gone_grace_s: float = 0,
        archived_idle_s: float = 60,
        idle_ttl_s: float = 1800,
        max_lifetime_s: float = 24 * 3600,
        only_labels: dict[str, str] | None = None,
        orphan_min_age_s: float = 120,
        alive_of: Callable[[Collection[str]], set[str]] | None = None,
        archived_of: Callable[[Collection[str]], set[str]] | None = None,
    ) -> None:
        """only_labels: restrict the sweep to containers carrying these labels (e.g. one test
        run's); records without a container are then left alone. alive_of / archived_of: which of many
        sessions are alive / archived, in one question (else the per-session callbacks are asked).
        is_session_running: the session has a run under way, so its sandbox is not idle whatever its
        record's clock says (a worker on another machine talks to the agent over TCP and never touches
        this host's record); asked only of a sandbox past a limit."""
        self.manager = manager
        self.is_session_alive = is_session_alive
        self.is_session_archived = is_session_archived or (lambda session_id: False)
        self.is_session_running = is_session_running or (lambda session_id: False)
        self.alive_of, self.archived_of = alive_of, archived_of
        self.gone_grace_s = gone_grace_s
        self.archived_idle_s = archived_idle_s
        self.idle_ttl_s = idle_ttl_s
        self.max_lifetime_s = max_lifetime_s
        self.only_labels = dict(only_labels or {})
        self.orphan_min_age_s = orphan_min_age_s  # younger egress leftovers may be mid-create

    def _candidates(self) -> dict[str, dict[str, Any] | None]:
        """session key -> its container as listed (None: a record whose container is gone)."""
        found: dict[str, dict[str, Any] | None] = (
            {} if self.only_labels else {k: None for k in registry.registered_keys()}
        )
        labels = [f"{containers.MANAGED}=1"] + [f"{k}={v}" for k, v in self.only_labels.items()]
        listed = self.manager.api.containers(all=True, filters={"label": labels})
        for c in listed:
            name = c["Names"][0].lstrip("/")
            if name.startswith(containers.SESSION_PREFIX):
                found[name[len(containers.SESSION_PREFIX) :]] = c | {"name": name}
        return found

    def _sessions(self, candidates: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
        """session key -> registry record, of the candidates that have one."""
        records = {key: registry.lookup(key) for key in candidates}
        return {key: record for key, record in records.items() if record is not None}

    def run_once(self) -> ReapReport:
        report = ReapReport()
        now = time.time()
        candidates = self._candidates()
        records = self._sessions(candidates)  # no record: unbound (mid-claim) or destroyed by another reaper
        ids = [record["session_id"] for record in records.values()]
        alive = self.alive_of(ids) if self.alive_of else {i for i in ids if self.is_session_alive(i)}
        idle_ids = [
            r["session_id"] for r in records.values() if now - r["last_active"] > self.archived_idle_s
        ]
        archived = self.archived_of(idle_ids) if self.archived_of else None
        for key, record in records.items():
            listed, session_id = candidates[key], record["session_id"]
            try:
                idle = now - record["last_active"]
                gone = session_id not in alive
                if gone and idle > self.gone_grace_s:
                    self.manager.destroy(session_id)
                    report.destroyed.append(session_id)
                    continue
                if listed is None or listed.get("State") not in ("running", "paused"):
                    continue  # hibernated: nothing runs
                is_archived = archived is not None and session_id in archived
                if archived is None and idle > self.archived_idle_s:
                    is_archived = self.is_session_archived(session_id)
                # Started no earlier than created: a young, active, wanted sandbox needs no inspect.
                if not (
                    gone
                    or is_archived
                    or idle > self.idle_ttl_s
                    or now - listed["Created"] > self.max_lifetime_s
                ):
                    continue
                info = self.manager.api.inspect_container(listed["name"])
                if not info["State"]["Running"]:
                    continue
                age = now - _started_at(info)
                if gone or is_archived or idle > self.idle_ttl_s or age > self.max_lifetime_s:
                    in_use = not gone and age <= self.max_lifetime_s + BUSY_GRACE_S
                    if in_use and (self.is_session_running(session_id) or self._busy(info["Id"])):
                        continue
                    self.manager.hibernate(session_id)
                    report.hibernated.append(session_id)
            except docker.errors.NotFound:
                pass  # a racing reaper or a destroy got there first
            except Exception as exc:  # one bad sandbox must not stop the sweep
                report.errors.append(f"{session_id}: {type(exc).__name__}: {exc}")
        try:
            report.destroyed += [
                f"egress:{k}"
                for k in egress.sweep_orphans(
                    self.manager.api, self._is_bound, self.only_labels, self.orphan_min_age_s
                )
            ]
        except Exception as exc:
            report.errors.append(f"egress sweep: {type(exc).__name__}: {exc}")
        return report

    def _busy(self, container_id: str) -> bool:
        """Does a command or terminal run in the sandbox? One round trip on a connection of our own
        (a relay when another process holds the attach lock). An agent that cannot say (an older image,
        a dead agent) is not busy: the reaper behaves as before."""
        try:
            conn = AgentConnection.open(self.manager.api, container_id, str(volumes.lock_path(container_id)))
        except (docker.errors.APIError, OSError):
            return False
        try:
            state = conn.call("busy", timeout=10)
            return bool(state.get("execs") or state.get("ptys"))
        except SandboxError:
            return False
        finally:
            conn.close()

    def _is_bound(self, key: str) -> bool:
        """A session key still has a sandbox (record or container): its egress stays."""
        if registry.lookup(key) is not None:
            return True
        try:
            self.manager.api.inspect_container(containers.SESSION_PREFIX + key)
            return True
        except docker.errors.NotFound:
            return False
