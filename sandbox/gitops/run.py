"""Running one git process hardened: the HARDENING settings, an empty HOME of its own, no system or global
config, the credential in that one process's environment; as the sandbox uid and jailed (sandbox.gitjail)
where it works on a session git dir, with the host's own config and alternates bound over that git dir's.
An SSH remote gets an ssh command for that process only, with the deploy key and the pinned host key. A
failure becomes a GitError of the kind its output says (classify)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.gitjail import jailed
from sandbox.gitops.host_files import ALTERNATES, _session_files
from sandbox.gitops.remote import GitError, Remote

HARDENING = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.http.allow=always",
    "http.followRedirects=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "safe.directory=*",
    "init.defaultBranch=main",
    "advice.detachedHead=false",
)


GIT_TIMEOUT_S = 900


def _env(remote: Remote | None, home: str, extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    pairs = remote.config() if remote else {}
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs.items()):
        env[f"GIT_CONFIG_KEY_{index}"], env[f"GIT_CONFIG_VALUE_{index}"] = key, value
    return env | (extra or {})


def classify(output: str) -> str:
    text = output.lower()
    if "host key verification failed" in text or "remote host identification has changed" in text:
        return "host_key"
    if "permission denied (publickey" in text:
        return "auth"
    if "[rejected]" in text or "non-fast-forward" in text or "fetch first" in text:
        return "rejected"
    if "no space left" in text or "disk quota" in text or "file too large" in text:
        return "quota"
    if "authentication failed" in text or "could not read username" in text or " 401" in text:
        return "auth"
    if " 403" in text or "repository not found" in text or " 404" in text:
        return "auth"
    if (
        "could not resolve host" in text
        or "failed to connect" in text
        or "connection refused" in text
        or "connection timed out" in text
    ):
        return "unreachable"
    return "error"


def git(
    *args: str,
    remote: Remote | None = None,
    as_sandbox_user: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    check: bool = True,
    session: Path | None = None,
    max_bytes: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git hardened. `session`: the session git dir the command works on; then git runs jailed as the
    sandbox uid with the host's own config and alternates over that git dir's (_SessionFiles).
    `max_bytes`: no file git writes may grow beyond it (RLIMIT_FSIZE: a fetch's pack is one file, and
    git fails with "File too large", GitError kind "quota")."""
    with _prepared(args, env, remote, as_sandbox_user, session) as (command, full_env):
        if max_bytes is not None:
            blocks = str(max(1, max_bytes // 512))
            command = ["sh", "-c", 'trap "" XFSZ; ulimit -f "$0" && exec "$@"', blocks, *command]
        try:
            proc = subprocess.run(
                command,
                env=full_env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                cwd="/",
                # What git creates (a mirror's objects, a layer's files) the sandbox uid reads through
                # the jail's binds: whatever umask this process runs under (deploy/up.sh used 077).
                umask=0o022,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} timed out after {timeout:.0f} s.", kind="unreachable") from None
    if check and proc.returncode != 0:
        # --porcelain push reports a rejection on stdout, the hints on stderr: both are looked at.
        output = f"{proc.stdout.strip()}\n{proc.stderr.strip()}".strip()[-4000:]
        command_name = next((a for a in args if not a.startswith("-") and "/" not in a), "git")
        raise GitError(f"git {command_name} failed: {output}", kind=classify(output), output=output)
    return proc


@contextmanager
def _prepared(
    args: tuple[str, ...],
    env: dict[str, str] | None,
    remote: Remote | None,
    as_sandbox_user: bool,
    session: Path | None = None,
) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The hardened command line and environment for one git process, with an empty HOME of its own.
    As the sandbox uid (so run as root), git also runs jailed (sandbox.gitjail)."""
    with tempfile.TemporaryDirectory(prefix="hangar-git-home-") as home:
        os.chmod(home, 0o755)
        hardening = HARDENING if remote is None or not remote.is_ssh else _ssh_flags(remote, Path(home))
        command = ["git", *(part for item in hardening for part in ("-c", item)), *args]
        full_env = _env(remote, home, env)
        if session is not None:
            # The common dir is the git dir itself, whatever a `commondir` file in it says.
            full_env |= {"GIT_DIR": str(session), "GIT_COMMON_DIR": str(session)}
        if not ((as_sandbox_user or session is not None) and os.getuid() == 0):
            yield command, full_env
            return
        with tempfile.TemporaryDirectory(prefix="hangar-git-jail-") as root:
            if session is None:
                yield jailed(command, args, full_env, root), full_env
                return
            files = _session_files(session)
            binds = {files.config: session / "config", files.alternates: session / ALTERNATES}
            yield jailed(command, args, full_env, root, readable=files.stores(), files=binds), full_env


def _ssh_flags(remote: Remote, home: Path) -> tuple[str, ...]:
    """HARDENING for one SSH fetch or push: ssh is allowed for this process only, with the deploy key and
    the pinned host key in files of this process's own HOME (root's, 0600, gone with it), no ssh config
    but ours, no agent, no proxy, and the checked address as the host to connect to (HostKeyAlias keeps
    the known-hosts entry under the name)."""
    if not remote.ssh_key or not remote.host_key:
        raise GitError("An SSH repository needs a deploy key and the host's key.", kind="auth")
    key, known = home / "id", home / "known_hosts"
    key.touch(mode=0o600)
    key.write_text(remote.ssh_key.strip() + "\n")
    known.write_text(f"{remote.host} {remote.host_key}\n")
    options = {
        "IdentitiesOnly": "yes",
        "IdentityAgent": "none",
        "UserKnownHostsFile": str(known),
        "GlobalKnownHostsFile": "/dev/null",
        "StrictHostKeyChecking": "yes",
        "UpdateHostKeys": "no",
        "CheckHostIP": "no",
        "HostKeyAlias": remote.host,
        "HostName": (remote.addresses or [remote.host])[0],
        "BatchMode": "yes",
        "ConnectTimeout": "30",
        "ProxyCommand": "none",
        "ProxyJump": "none",
        "PermitLocalCommand": "no",
        "ClearAllForwardings": "yes",
    }
    ssh = " ".join(["ssh", "-F", "/dev/null", "-i", str(key), *(f"-o {k}={v}" for k, v in options.items())])
    allowed = tuple(i for i in HARDENING if not i.startswith("core.sshCommand="))
    return (*allowed, f"core.sshCommand={ssh}", "protocol.ssh.allow=always")
