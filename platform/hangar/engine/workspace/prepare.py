"""A session's workspace before its first prompt: the project's repository checked out on the session's
own branch (host-side git, sandbox.gitops: the credential never enters the sandbox), then the project's
setup script run in the sandbox with its output streamed to the session's event stream.

`workspace_ensure` is called wherever the engine obtains a session's sandbox (hangar.engine.workspace.sandboxes):
after the first preparation it costs one stat of a host marker file. Preparation is serialised per session
by a lock on a host file (flock: a worker that dies releases it with its process), not on a database
connection: git and the setup script may take many minutes, and no pooled connection is held across them
(`_release_connection` before each long part; the next query takes one again). Each part has its deadline:
every git process GIT_TIMEOUT_S, a mirror prefetch the same, the setup script the project's command
timeout. The preparation task and pushes and pulls run on the repository queue
(hangar.engine.session.enqueue.repo_queue), not the engine's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections, connection

from hangar.conversations.models import Session
from hangar.engine.agents.secret_env import masker_for, setup_env
from hangar.engine.workspace.env_cache import EnvKey, env_key
from hangar.engine.workspace.hosts import written_elsewhere
from hangar.logging import get_logger
from hangar.projects import crypto
from hangar.projects.models import Project
from hangar.repos import services as repos
from hangar.repos.models import SessionWorkspace, WorkspaceState
from sandbox import env_cache, gitops, host_locks, registry, volumes
from sandbox.protocol import WORKSPACE, Sandbox, SandboxError

log = get_logger(__name__)
OUTPUT_EVERY_S = 0.25


class WorkspaceError(SandboxError):
    """The workspace could not be prepared; its message is what the user is told."""


def needs_workspace(project: Project) -> bool:
    return bool(project.repo_url or project.setup_script.strip())


def remote_for(project: Project, url: str | None = None) -> gitops.Remote:
    """The project's repository, checked again now (DNS may have moved since it was saved), with its
    credential decrypted for this one git process."""
    token = crypto.decrypt(project.repo_token_encrypted) if project.repo_token_encrypted else ""
    ssh_key = crypto.decrypt(project.repo_ssh_key_encrypted) if project.repo_ssh_key_encrypted else ""
    return gitops.check_url(
        url or project.repo_url,
        allow_private=settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS,
        username=project.repo_username,
        token=token,
        ssh_key=ssh_key,
        host_key=project.repo_ssh_host_key,
    )


@contextmanager
def session_lock(session_id: str) -> Iterator[None]:
    """The session's workspace lock on this host, waited for with no database connection held."""
    _release_connection()
    with host_locks.held(f"workspace-{volumes.session_key(session_id)}.lock"):
        yield


def _release_connection() -> None:
    """Give this thread's database connection back (to the pool) before minutes of git or setup; the next
    query takes one again. Inside a transaction there is nothing to give back safely: it stays."""
    if not connection.in_atomic_block:
        connection.close()


def _fetch_in_thread(project: Project, url: str, scope: str, elsewhere: dict[str, float]) -> Future[Path]:
    """A mirror fetch on a thread of its own (a shared pool let four slow repositories hold up everyone
    else's); bounded by git's own deadline (GIT_TIMEOUT_S per process). No database work in it: what the
    org wrote on the other sandbox hosts (`elsewhere`, for its budget) is read before."""
    future: Future[Path] = Future()

    def fetch() -> None:
        try:
            future.set_result(gitops.mirror_sync(remote_for(project, url), scope=scope, elsewhere=elsewhere))
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=fetch, name="mirror-fetch", daemon=True).start()
    return future


@dataclass(frozen=True)
class MirrorFetch:
    """A mirror refresh under way, for the repository at `url`."""

    url: str
    future: Future[Path]


def mirror_prefetch(session: Session) -> MirrorFetch | None:
    """Start refreshing the session's mirror while its sandbox is created or claimed (no database work in
    the thread: the project is already loaded). None when there is nothing to fetch."""
    project = session.project
    if not project.repo_url or gitops.ready_marker(session.pk).exists():
        return None
    url, scope = project.repo_url, str(session.org_id)
    return MirrorFetch(url, _fetch_in_thread(project, url, scope, written_elsewhere({scope})))


def workspace_ensure(
    session: Session,
    box: Sandbox,
    prefetch: MirrorFetch | None = None,
    setup_phase: Callable[[], AbstractContextManager[None]] | None = None,
) -> None:
    """Prepare the session's workspace once (per volume). Raises WorkspaceError if it failed.
    `setup_phase`: what the setup script runs inside (its own network, hangar.engine.workspace.sandboxes)."""
    if not needs_workspace(session.project) or gitops.ready_marker(session.pk).exists():
        return
    with session_lock(session.pk):
        if gitops.ready_marker(session.pk).exists():
            return
        row = repos.workspace_for_run(session)
        row.session = session
        if row.state == WorkspaceState.FAILED:
            raise WorkspaceError(f"The workspace could not be prepared: {row.error.get('message', '')}")
        _prepare(session, box, row, prefetch, setup_phase)


def _prepare(
    session: Session,
    box: Sandbox,
    row: SessionWorkspace,
    prefetch: MirrorFetch | None = None,
    setup_phase: Callable[[], AbstractContextManager[None]] | None = None,
) -> None:
    started = time.monotonic()
    project = session.project
    code, output = None, ""
    cache: EnvKey | None = None
    base: Path | None = None  # the checkout layer the workspace stands on
    restored = False
    try:
        if row.repo_url:
            repos.workspace_preparing(row=row, phase="clone")
            elsewhere = written_elsewhere({str(session.org_id)})  # the org's budget counts every host
            _release_connection()
            if prefetch is not None and prefetch.url == row.repo_url:
                mirror = _prefetched(prefetch)
            else:
                remote = remote_for(project, row.repo_url)
                mirror = gitops.mirror_sync(remote, scope=str(session.org_id), elsewhere=elsewhere)
            ref = row.ref or gitops.default_branch(mirror)
            pushed = _pushed_branch(mirror, row)
            sha = pushed or gitops.resolve_ref(mirror, ref)
            cache = env_key(project, box, row.repo_url, sha)
            cached = env_cache.find(cache.key) if cache else None
            base = gitops.checkout(mirror, session.pk, sha, row.branch, cached=cached, elsewhere=elsewhere)
            restored = cached is not None and base == cached
            repos.workspace_cloned(row=row, ref=ref, base_commit=row.base_commit if pushed else sha)
        elif project.setup_script.strip():
            cache = env_key(project, box, "", "")
            restored = cache is not None and env_cache.attach(_volume_of(session), cache.key) is not None
        if project.setup_script.strip():
            repos.workspace_preparing(row=row, phase="setup")
            _release_connection()
            if restored:
                code, output = 0, RESTORED
                repos.workspace_setup_output(session=session, text=RESTORED)
            else:
                with setup_phase() if setup_phase is not None else nullcontext():
                    code, output = _run_setup(session, box, project)
            if code == 0 and cache is not None and not restored:
                _keep_environment(session, cache, base)
            if code != 0:
                message = f"The project's setup script failed (exit code {code}); see the setup log."
                repos.workspace_failed(
                    row=row, kind="setup", message=message, setup_exit_code=code, setup_log=output
                )
                raise WorkspaceError(message)
    except gitops.GitError as exc:
        message = _git_message(exc)
        repos.workspace_failed(row=row, kind=exc.kind, message=message)
        raise WorkspaceError(message) from None
    except SandboxError as exc:
        if not isinstance(exc, WorkspaceError):
            repos.workspace_failed(
                row=row, kind="sandbox", message=f"The sandbox failed during set-up: {exc}"
            )
        raise
    elapsed = int((time.monotonic() - started) * 1000)
    repos.workspace_ready(row=row, setup_exit_code=code, setup_log=output, prepare_ms=elapsed)
    marker = gitops.ready_marker(session.pk)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


RESTORED = "Restored the cached environment of this commit and setup script (the script did not run again).\n"


def _pushed_branch(mirror: Path, row: SessionWorkspace) -> str | None:
    """A workspace prepared before (a base commit recorded) is prepared again only on another host (its
    own was lost: docs/scale-out.md, "Host loss"): it resumes from the session's branch as last pushed,
    when the repository has it. None otherwise."""
    if not row.base_commit or not row.branch:
        return None
    try:
        return gitops.resolve_ref(mirror, f"refs/heads/{row.branch}")
    except gitops.GitError:
        return None


def _volume_of(session: Session) -> str:
    record = registry.lookup(volumes.session_key(session.pk))
    if record is None:
        raise WorkspaceError("The session has no sandbox volume.")
    return str(record["volume"])


def _keep_environment(session: Session, cache: EnvKey, base: Path | None) -> None:
    """Keep what the setup script left as the layer the next session starts from. A failure (no room in
    the disk budget, the copy failed) is logged: this session goes on as it is."""
    try:
        env_cache.capture(
            key=cache.key,
            volume_id=_volume_of(session),
            org_id=str(session.org_id),
            base_layer=base,
            info=cache.info,
            elsewhere=written_elsewhere({str(session.org_id)}),
        )
    except (env_cache.EnvCacheError, OSError) as exc:
        log.info("env_cache_not_kept", session=session.pk, reason=str(exc)[:300])


def _prefetched(prefetch: MirrorFetch) -> Path:
    try:
        return prefetch.future.result(timeout=gitops.GIT_TIMEOUT_S * 2 + 60)  # a clone's two git processes
    except TimeoutError:
        raise gitops.GitError("The repository's fetch did not finish in time.", kind="unreachable") from None


HOST_KEY_CHANGED = (
    "The repository host's SSH key does not match the key pinned on the project. If the host really "
    "changed its key, set the project's repo_ssh_host_key again."
)


def _git_message(exc: gitops.GitError) -> str:
    return {
        "auth": "The repository refused the credential (or needs one): check the project's repository token "
        "or deploy key.",
        "host_key": HOST_KEY_CHANGED,
        "unreachable": "The repository's host cannot be reached.",
        "not_found": str(exc),
        "invalid": str(exc),
        "quota": str(exc),  # the session's quota, the repository size limit or the disk budget: said
    }.get(exc.kind, f"Cloning the repository failed: {exc}")


def _run_setup(session: Session, box: Sandbox, project: Project) -> tuple[int | None, str]:
    """Run the setup script in the sandbox (bound env: the project's sandbox-safe vars; and in the script's
    own env, the secrets scoped to it), streaming its output as `workspace.setup.output` events, a batch
    every OUTPUT_EVERY_S from a thread of its own. Every secret is masked out of the output and the log."""
    masker = masker_for(project)
    stream = masker.stream()
    pending: list[str] = []
    lock, done = threading.Lock(), threading.Event()

    def drain() -> None:
        with lock:
            text = "".join(pending)
            pending.clear()
        if text:
            repos.workspace_setup_output(session=session, text=text)

    def publisher() -> None:
        try:
            while not done.wait(OUTPUT_EVERY_S):
                drain()
        finally:
            close_old_connections()
            connection.close()

    def on_output(chunk: str) -> None:
        with lock:
            pending.append(stream.feed(chunk))

    thread = threading.Thread(target=publisher, name=f"setup-{session.pk}", daemon=True)
    thread.start()
    try:
        result = box.exec(
            project.setup_script,
            cwd=WORKSPACE,
            env=setup_env(project) or None,
            timeout_s=project.command_timeout_s,
            on_output=on_output,
        )
    finally:
        done.set()
        thread.join()
        with lock:
            pending.append(stream.flush())
        drain()
    return (result.exit_code if result.status == "exited" else -1), masker.text(result.output)
