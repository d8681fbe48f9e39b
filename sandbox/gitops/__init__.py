"""Host-side git for session workspaces: the credential stays here, the sandbox sees only files.

Every git process runs hardened against the repository it touches: a repository's own content (hooks,
`core.fsmonitor`, filter drivers, `core.*` settings it ships, submodules) must never execute on the host.
So: no system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, HOME an empty temp
dir), hooks pointed at /dev/null, fsmonitor off, only http(s) transports, no redirects, no prompts, no
proxies from the environment. The credential reaches git as an `http.extraHeader` through the
GIT_CONFIG_COUNT variables of that one process (never argv, never a file).

Layout under HANGAR_SANDBOX_ROOT:
  mirrors/<key>.git   a bare mirror per (org, URL), refreshed with `fetch`; never gc'd (session git dirs
                      borrow its objects through `alternates`)
  layers/<mirror>-<commit>/  one commit's files checked out once (tree/, owned by the sandbox uid, never
                      changed after), its index and size: the read-only lower layer of every workspace
                      made from that commit (an overlay, sandbox.volumes.attach_lower)
  repos/<session>.git the session's git dir (owned by the sandbox uid); its work tree is the session
                      volume's workspace/, so the sandbox holds no .git and no remote at all.
  repos/<session>.host/ the host's own config and alternates for that git dir (root's): jailed git
                      writes the git dir, so nothing in it is believed; every git on it runs jailed with
                      these two bound over the git dir's, GIT_COMMON_DIR pinned to it, and a push bundles
                      its commits in the jail for host git to push from a git dir of its own.
Checkout and commit run as the sandbox uid, jailed (sandbox.gitjail: a mount namespace that holds only their
git dir, work tree and object stores), so the files are the sandbox's and a commit reads the workspace
with no more rights than the sandbox has and nothing of the host to reach through a link; fetch and push
(which need the credential and only touch host-owned git dirs) run as this process. SSH remotes
(ssh://, user@host:path) are fetched and pushed with a deploy key and a pinned host key (sandbox.gitops.run,
sandbox.gitssh).

The modules: remote (URLs, refs, GitError), run (one hardened git process), host_files (what the host
keeps beside a session git dir), mirrors, layers, worktree (a session's git dir and work tree) and
session_git (commit, push, merge, diff). Callers use the names re-exported here."""

from __future__ import annotations

from sandbox.gitops.host_files import ALTERNATES, SESSION_CONFIG
from sandbox.gitops.layers import layer_path, layers_dir, prune_layers, tree_size
from sandbox.gitops.mirrors import (
    default_branch,
    mirror_path,
    mirror_sync,
    mirrors_dir,
    prune_mirrors,
    resolve_ref,
)
from sandbox.gitops.remote import MAX_URL, GitError, Remote, check_url, is_ssh_url, parse_url, valid_ref_name
from sandbox.gitops.run import GIT_TIMEOUT_S, HARDENING, classify, git
from sandbox.gitops.session_git import commit_all, current_branch, diff_base, head, merge, push
from sandbox.gitops.worktree import checkout, ready_marker, remove_session, session_gitdir, workspace_dir

__all__ = [
    "ALTERNATES",
    "GIT_TIMEOUT_S",
    "HARDENING",
    "MAX_URL",
    "SESSION_CONFIG",
    "GitError",
    "Remote",
    "check_url",
    "checkout",
    "classify",
    "commit_all",
    "current_branch",
    "default_branch",
    "diff_base",
    "git",
    "head",
    "is_ssh_url",
    "layer_path",
    "layers_dir",
    "merge",
    "mirror_path",
    "mirror_sync",
    "mirrors_dir",
    "parse_url",
    "prune_layers",
    "prune_mirrors",
    "push",
    "ready_marker",
    "remove_session",
    "resolve_ref",
    "session_gitdir",
    "tree_size",
    "valid_ref_name",
    "workspace_dir",
]
