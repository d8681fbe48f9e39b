"""Code out of a session: commit and push its branch (host-side git with the project's credential), fetch
and merge a branch that moved, the session's diff. (Files in and out of the workspace:
hangar.engine.workspace_transfer.)

Pushes and pulls asked for through the API are operations (`operation_request`): checked and recorded in
the request, run by a worker (`operation_run`, by hangar.engine.workspace_tasks), followed on the
session's stream (`workspace.operation`) or by id."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from django.conf import settings

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.audit.models import ActorType
from hangar.conversations.models import Session
from hangar.engine.services import require_member
from hangar.engine.workspace.hosts import written_elsewhere
from hangar.engine.workspace.prepare import HOST_KEY_CHANGED, remote_for, session_lock
from hangar.logging import get_logger
from hangar.repos import services as repos
from hangar.repos.models import (
    OperationKind,
    PushStatus,
    RepoPush,
    SessionWorkspace,
    WorkspaceOperation,
    WorkspaceState,
)
from hangar.repos.selectors import operation_for_run, workspace_get
from sandbox import gitops

log = get_logger(__name__)
MESSAGE_MAX = 10_000


class RepoOpError(Exception):
    """What the user is told; `status` is the HTTP status an edge should answer with."""

    def __init__(self, message: str, *, kind: str, status: int = 409):
        super().__init__(message)
        self.kind, self.status = kind, status


def _ready_workspace(session: Session) -> SessionWorkspace:
    row = workspace_get(session)
    if row is None or not row.repo_url:
        raise RepoOpError("This session's project has no repository.", kind="no_repository", status=400)
    if row.state != WorkspaceState.READY or not gitops.session_gitdir(session.pk).exists():
        raise RepoOpError("The session's workspace is not ready.", kind="not_ready")
    row.session = session
    return row


def compare_url(repo_url: str, base: str, branch: str) -> str:
    """The host's compare page, for hosts whose URL scheme is known."""
    match = re.match(
        r"^(?:https://|ssh://git@|git@)(github\.com|gitlab\.com)[/:](.+?)(?:\.git)?/?$", repo_url
    )
    if not match or not base:
        return ""
    host, path = match.groups()
    middle = "/-/compare/" if host == "gitlab.com" else "/compare/"
    return f"https://{host}/{path}{middle}{base}...{branch}"


def _author(actor: Actor, name: str, email: str) -> tuple[str, str]:
    user = actor.user
    name = name or (user.name if user and user.name else "") or (user.email if user else "Hangar")
    email = email or (user.email if user else "hangar@localhost")
    for value in (name, email):
        if len(value) > 200 or any(c in value for c in "<>\n\r\0"):
            raise RepoOpError("Author name and email must be plain text.", kind="invalid", status=400)
    return name, email


def workspace_push(
    *, actor: Actor, session: Session, message: str, author_name: str = "", author_email: str = ""
) -> RepoPush:
    """Commit everything in the workspace (if anything changed) and push the session's branch, never
    forced. The result is recorded either way; a rejection because the remote branch moved is
    RepoOpError(kind="rejected"): `workspace_pull` then retry."""
    require_member(actor, session)
    _check_message(message)
    name, email = _author(actor, author_name, author_email)
    row = _ready_workspace(session)
    check_branch_protection(actor, session, row)
    with session_lock(session.pk):
        try:
            gitops.commit_all(session.pk, message, name, email)
            commit = gitops.head(session.pk)
            if commit == row.base_commit:
                raise RepoOpError(
                    "Nothing to push: the workspace has no changes.", kind="nothing", status=400
                )
            gitops.push(session.pk, remote_for(session.project, row.repo_url), row.branch)
        except gitops.GitError as exc:
            rejected = exc.kind == "rejected"
            text = (
                f"The remote branch {row.branch} has moved: fetch its changes (pull) and push again."
                if rejected
                else _push_message(exc)
            )
            repos.push_record(
                actor=actor,
                session=session,
                branch=row.branch,
                status=PushStatus.REJECTED if rejected else PushStatus.FAILED,
                message=message,
                error={"kind": exc.kind, "message": text},
            )
            raise RepoOpError(text, kind=exc.kind, status=409 if rejected else 502) from None
    base = session.project.repo_default_branch or row.ref
    return repos.push_record(
        actor=actor,
        session=session,
        branch=row.branch,
        commit=commit,
        message=message,
        status=PushStatus.PUSHED,
        compare_url=compare_url(row.repo_url, base, row.branch),
    )


def branch_protected(session: Session, row: SessionWorkspace) -> bool:
    """The repository's default branch (the project's, else the remote's HEAD as the mirror knows it) and
    the project's `protected_branches` patterns are protected."""
    project = session.project
    default = project.repo_default_branch
    if not default:
        mirror = gitops.mirror_path(str(session.org_id), row.repo_url)
        default = gitops.default_branch(mirror) if (mirror / "HEAD").exists() else ""
    patterns = project.protected_branches or []
    return row.branch == default or any(fnmatch.fnmatchcase(row.branch, p) for p in patterns)


def check_branch_protection(actor: Actor, session: Session, row: SessionWorkspace) -> None:
    """A push to a protected branch needs an org admin: the project's write credential is the team's, not
    each member's, so the host's own branch protection cannot tell them apart."""
    if not branch_protected(session, row):
        return
    from hangar.accounts.selectors import membership_for

    membership = membership_for(actor.user, session.org_id) if actor.user is not None else None
    if membership is None or not membership.has_role(Role.ADMIN):
        raise RepoOpError(
            f"The branch {row.branch} is protected: only an org admin may push to it. Push from a session on "
            "another branch (and open a pull request).",
            kind="protected",
            status=403,
        )


def _push_message(exc: gitops.GitError) -> str:
    if exc.kind == "auth":
        return "The repository refused the push: the project's token or deploy key needs write access."
    if exc.kind == "host_key":
        return HOST_KEY_CHANGED
    if exc.kind == "unreachable":
        return "The repository's host cannot be reached."
    return f"The push failed: {exc}"


@dataclass
class PullResult:
    commit: str
    merged: str  # the remote commit merged in ("" if the remote branch does not exist yet)


def workspace_pull(
    *, actor: Actor, session: Session, author_name: str = "", author_email: str = ""
) -> PullResult:
    """Fetch the session's branch from the remote and merge it into the workspace (work tree included).
    Local changes are committed first so the merge never overwrites them; a conflict changes nothing."""
    require_member(actor, session)
    name, email = _author(actor, author_name, author_email)
    row = _ready_workspace(session)
    with session_lock(session.pk):
        try:
            scope = str(session.org_id)
            remote = remote_for(session.project, row.repo_url)
            mirror = gitops.mirror_sync(remote, scope=scope, elsewhere=written_elsewhere({scope}))
            try:
                remote_head = gitops.resolve_ref(mirror, row.branch)
            except gitops.GitError:
                return PullResult(gitops.head(session.pk), "")
            gitops.commit_all(session.pk, "Work in progress before merging the remote branch", name, email)
            commit = gitops.merge(session.pk, remote_head, name, email)
        except gitops.GitError as exc:
            status = 409 if exc.kind == "conflict" else 502
            raise RepoOpError(
                str(exc) if exc.kind == "conflict" else _push_message(exc), kind=exc.kind, status=status
            ) from None
    return PullResult(commit, remote_head)


# --- the same, asked for through the API and run by a worker -------------------------------------


def _check_message(message: str) -> None:
    if not message.strip() or len(message) > MESSAGE_MAX:
        raise RepoOpError(
            "A commit message is required (at most 10,000 characters).", kind="invalid", status=400
        )


def operation_request(
    *,
    actor: Actor,
    session: Session,
    kind: str,
    message: str = "",
    author_name: str = "",
    author_email: str = "",
) -> WorkspaceOperation:
    """Check what can be checked now (role, message, author, a ready workspace), record the operation and
    hand it to a worker once the caller's transaction commits."""
    require_member(actor, session)
    if kind == OperationKind.PUSH:
        _check_message(message)
    _author(actor, author_name, author_email)
    row = _ready_workspace(session)
    if kind == OperationKind.PUSH:
        check_branch_protection(actor, session, row)
    params = {"author_name": author_name, "author_email": author_email}
    if kind == OperationKind.PUSH:
        params["message"] = message
    op = repos.operation_create(actor=actor, session=session, kind=kind, params=params)
    from hangar.engine.session.enqueue import enqueue_operation

    enqueue_operation(op.pk)
    return op


def operation_run(operation_id: int) -> None:
    """Run a recorded push or pull as the person who asked for it; the outcome is recorded on the
    operation (and, for a push, as a RepoPush as before) and published. Runs once."""
    op = operation_for_run(operation_id)
    if op is None or not repos.operation_started(op=op):
        return
    session, user = op.session, op.created_by
    actor = Actor(
        type=ActorType.USER,
        org_id=session.org_id,
        user=user,
        label=f"{user.email if user else 'user'} (workspace {op.kind})",
    )
    params = op.params
    author = {"author_name": params.get("author_name", ""), "author_email": params.get("author_email", "")}
    result: dict[str, object] = {}
    error: dict[str, object] | None = None
    try:
        if op.kind == OperationKind.PUSH:
            push = workspace_push(actor=actor, session=session, message=params.get("message", ""), **author)
            result = {"push_id": push.pk, "branch": push.branch, "commit": push.commit}
            result["compare_url"] = push.compare_url
        else:
            pulled = workspace_pull(actor=actor, session=session, **author)
            result = {"commit": pulled.commit, "merged": pulled.merged}
    except RepoOpError as exc:
        error = {"kind": exc.kind, "message": str(exc), "status": exc.status}
    except Exception as exc:  # recorded, never left running; the log has the details
        log.exception("workspace_operation_failed", operation=op.pk, error=type(exc).__name__)
        error = {"kind": "error", "message": f"The {op.kind} failed unexpectedly.", "status": 500}
    repos.operation_finished(op=op, result=result, error=error)


# --- the repository changes of the session -------------------------------------------------------


def workspace_diff(*, session: Session, max_patch_bytes: int | None = None) -> dict[str, object]:
    """The workspace against the commit it was cloned at (the repository's view of the session's work:
    committed, pushed or not). Read-only; the caller has scoped the session to the actor."""
    row = _ready_workspace(session)
    cap = max_patch_bytes or settings.HANGAR_WORKSPACE_DIFF_MAX_BYTES
    try:
        diff = gitops.diff_base(session.pk, cap)
    except gitops.GitError as exc:
        raise RepoOpError(f"The diff failed: {exc}", kind=exc.kind, status=502) from None
    return {"base_commit": row.base_commit, "branch": row.branch, **diff}
