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
(ssh://, user@host:path) are fetched and pushed with a deploy key and a pinned host key (_ssh_flags,
sandbox.gitssh).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox import budget, netguard, repo_disk, volumes
from sandbox.gitjail import jailed

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
MAX_URL = 500
GIT_TIMEOUT_S = 900


class GitError(Exception):
    """A git operation failed. `kind`: auth | host_key | unreachable | not_found | rejected | quota |
    invalid | error."""

    def __init__(self, message: str, *, kind: str = "error", output: str = ""):
        super().__init__(message)
        self.kind, self.output = kind, output


@dataclass
class Remote:
    """A validated repository URL, the addresses its host was checked at (git connects to those only),
    and the credential for this one operation."""

    url: str
    host: str
    port: int
    addresses: list[str] = field(default_factory=list)
    username: str = ""
    token: str = field(default="", repr=False)
    ssh_key: str = field(default="", repr=False)  # an OpenSSH private key, for ssh:// and scp-like URLs
    host_key: str = ""  # the host's pinned public key ("ssh-ed25519 AAAA..."), for the same

    @property
    def is_ssh(self) -> bool:
        return is_ssh_url(self.url)

    def config(self) -> dict[str, str]:
        pairs: dict[str, str] = {}
        if self.is_ssh:
            return pairs  # the ssh command carries everything (_ssh_flags)
        if self.addresses:
            pinned = ",".join(f"[{a}]" if ":" in a else a for a in self.addresses)
            pairs["http.curloptResolve"] = f"{self.host}:{self.port}:{pinned}"
        if self.token:
            raw = f"{self.username or 'x-access-token'}:{self.token}".encode()
            pairs["http.extraHeader"] = "Authorization: Basic " + base64.b64encode(raw).decode()
        return pairs


def parse_url(url: str, *, allow_private: bool | str | list[str] = False) -> tuple[str, int]:
    """(host, port) of an acceptable repository URL, else GitError(kind="invalid") saying why. No network.
    Plain http:// only when the operator opens private hosts (`allow_private`: True or CIDRs)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or any(ord(c) < 33 for c in url):
        raise GitError("Must be a URL of at most 500 characters without spaces.", kind="invalid")
    if is_ssh_url(url):
        return _parse_ssh_url(url)
    try:
        parts, host, port = netguard.split_url(
            url,
            ("https", "http") if allow_private else ("https",),
            credentials_hint=": set the repository token instead",
        )
    except ValueError as exc:
        raise GitError(str(exc), kind="invalid") from None
    if parts.query or parts.fragment or not parts.path.strip("/"):
        raise GitError("Must name a repository path, without query or fragment.", kind="invalid")
    return host, port


# ssh://user@host[:port]/path, or git's scp-like user@host:path. A user is required (hosts serve git
# as one: git@github.com), the host is a name or an IPv4 address (it goes on ssh's command line).
_SSH_URL = re.compile(
    r"^ssh://(?P<user>\w[\w.-]*)@(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*)(?::(?P<port>\d{1,5}))?/(?P<path>[^?#]+)$"
)
_SCP_URL = re.compile(r"^(?P<user>\w[\w.-]*)@(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*):(?P<path>(?!/)[^?#]+)$")


def is_ssh_url(url: str) -> bool:
    return url.startswith("ssh://") or bool(re.match(r"^[^/:@]+@[^/:]+:", url))


def _parse_ssh_url(url: str) -> tuple[str, int]:
    match = _SSH_URL.fullmatch(url) or _SCP_URL.fullmatch(url)
    if not match:
        raise GitError(
            "An SSH URL is ssh://user@host[:port]/path or user@host:path (e.g. git@github.com:org/repo.git).",
            kind="invalid",
        )
    port = int(match.groupdict().get("port") or 22)
    host = match["host"].lower()
    if not 0 < port < 65536 or host.startswith(("-", ".")) or ".." in host:
        raise GitError("The SSH URL's host or port is not valid.", kind="invalid")
    if not match["path"].strip("/"):
        raise GitError("Must name a repository path.", kind="invalid")
    return host, port


_REF = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)(?!/)[A-Za-z0-9._/+-]{1,200}(?<![/.])(?<!\.lock)$")


def valid_ref_name(name: str) -> bool:
    """A branch, tag or commit name git accepts (a conservative subset of check-ref-format)."""
    return isinstance(name, str) and bool(_REF.fullmatch(name)) and "/." not in name


def check_url(
    url: str,
    *,
    allow_private: bool | str | list[str] = False,
    username: str = "",
    token: str = "",
    ssh_key: str = "",
    host_key: str = "",
) -> Remote:
    """Validate and resolve: every address the host resolves to must be public unless the operator allows
    private hosts. The checked addresses are pinned for git (http.curloptResolve): a DNS answer that
    changes between this check and the connection cannot move git onto a private address."""
    host, port = parse_url(url, allow_private=allow_private)
    allowed = netguard.networks(allow_private)
    try:
        infos = netguard.resolve(host, port, allowed, setting="HANGAR_REPO_ALLOW_PRIVATE_HOSTS")
    except netguard.Refused as exc:
        raise GitError(f"{exc}.", kind="invalid") from None
    except (OSError, UnicodeError) as exc:
        raise GitError(f"Cannot resolve {host}: {exc}.", kind="unreachable") from None
    addresses = sorted({str(info[4][0]) for info in infos})
    return Remote(
        url=url,
        host=host,
        port=port,
        addresses=addresses,
        username=username,
        token=token,
        ssh_key=ssh_key,
        host_key=host_key,
    )


# --- running git --------------------------------------------------------------------------------


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


# --- mirrors ------------------------------------------------------------------------------------


def mirrors_dir() -> Path:
    return repo_disk.mirrors_dir()


def mirror_path(scope: str, url: str) -> Path:
    """One mirror per (scope, URL): the scope (the org) keeps one tenant's fetched private objects from
    serving another tenant that names the same URL without the right to read it."""
    return mirrors_dir() / (hashlib.sha256(f"{scope}\0{url}".encode()).hexdigest()[:32] + ".git")


def _fetch_room(scope: str) -> int:
    """The most this clone or fetch may write (sandbox.budget.repo_room_bytes), GitError(kind="quota")
    when there is no room at all."""
    room = budget.repo_room_bytes(scope)
    if room <= 0:
        raise GitError(
            "The organisation's disk budget has no room left for repositories: remove sessions or ask the "
            "operator for a larger budget.",
            kind="quota",
        )
    return room


def _too_large(exc: GitError, room: int) -> GitError:
    if exc.kind != "quota":
        return exc
    return GitError(
        f"The repository is larger than the {room // 2**20} MB a fetch may write here (the repository "
        "size limit, HANGAR_REPO_MAX_MB, or the disk budget left): nothing was kept.",
        kind="quota",
        output=exc.output,
    )


def mirror_sync(remote: Remote, scope: str) -> Path:
    """Create the mirror (`clone --mirror`) or bring it up to date (`fetch --prune`), under a lock. Either
    stops at the room the disk budgets leave (_fetch_room) with GitError(kind="quota"); a clone that
    stops leaves nothing, a fetch that stops leaves the mirror as it was."""
    path = mirror_path(scope, remote.url)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o755)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        room = _fetch_room(scope)
        # unpackLimit 1: what is fetched stays one pack, one file, so the size cap applies to all of it.
        packed = ("-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1")
        try:
            if (path / "HEAD").exists():
                _readable_by_sandbox(path)
                git(*packed, "--git-dir", str(path), "fetch", "--prune", "--quiet", remote.url,
                    "+refs/*:refs/*", remote=remote, max_bytes=room)  # fmt: skip
            else:
                tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
                try:
                    git(*packed, "clone", "--mirror", "--quiet", "--", remote.url, str(tmp), remote=remote,
                        max_bytes=room)  # fmt: skip
                    git("--git-dir", str(tmp), "config", "remote.origin.url", remote.url)
                    os.rename(tmp, path)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        except GitError as exc:
            raise _too_large(exc, room) from None
        finally:
            for stray in (path / "objects" / "pack").glob("tmp_*"):
                stray.unlink(missing_ok=True)
        repo_disk.mark_used(path, scope)
        repo_disk.measure_mirror(path)
    return path


def _readable_by_sandbox(mirror: Path) -> None:
    """Repair a mirror that git wrote under umask 077 (deploy/up.sh's, before git ran with its own): the
    jailed checkout reads its objects as the sandbox uid. Checked on the objects folder, so once."""
    if (mirror / "objects").stat().st_mode & 0o005 == 0o005:
        return
    for folder, _dirs, files in os.walk(mirror):
        os.chmod(folder, os.stat(folder).st_mode | 0o555)
        for name in files:
            file = os.path.join(folder, name)
            if not os.path.islink(file):
                os.chmod(file, os.stat(file).st_mode | 0o444)


def resolve_ref(mirror: Path, ref: str) -> str:
    """The commit a branch, tag or commit id names in the mirror."""
    if not ref or ref.startswith("-") or len(ref) > 250:
        raise GitError(f"Bad ref {ref!r}.", kind="invalid")
    for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        proc = git(
            "--git-dir",
            str(mirror),
            "rev-parse",
            "--verify",
            "--quiet",
            f"{candidate}^{{commit}}",
            check=False,
        )
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise GitError(f"No branch, tag or commit {ref!r} in the repository.", kind="not_found")


def default_branch(mirror: Path) -> str:
    proc = git("--git-dir", str(mirror), "symbolic-ref", "--short", "HEAD", check=False)
    return proc.stdout.strip() or "main"


# --- a session's git dir and work tree ----------------------------------------------------------


def session_gitdir(session_id: str) -> Path:
    return volumes.ROOT / "repos" / f"{volumes.session_key(session_id)}.git"


def workspace_dir(session_id: str) -> Path:
    """The session volume's workspace on the host (mounted if it was not)."""
    record = volumes.lookup(volumes.session_key(session_id))
    if record is None:
        raise GitError(f"session {session_id} has no sandbox volume", kind="error")
    return volumes.ensure_mounted(record["volume"]) / "workspace"


def checkout(mirror: Path, session_id: str, sha: str, branch: str, cached: Path | None = None) -> Path | None:
    """Give the session `sha` on a new branch: its workspace becomes an overlay of the commit's shared
    read-only tree (built once per mirror and commit), and its git dir (objects borrowed from the mirror,
    the index copied from the tree's) is written directly. No file of the repository is written per
    session, so the time does not grow with the repository's size. GitError(kind="quota") when the
    commit's files exceed the session's disk quota; nothing is then changed.
    `cached`: a cached environment's layer of the same commit (sandbox.env_cache) to stand on instead,
    if it is still there. Returns the layer the workspace stands on."""
    record = volumes.lookup(volumes.session_key(session_id))
    if record is None:
        raise GitError(f"session {session_id} has no sandbox volume", kind="error")
    volume_id = record["volume"]
    capacity = _capacity(volumes.ensure_mounted(volume_id))
    if cached is not None:
        with _layer_lock(cached):
            if (cached / "tree").is_dir() and (cached / "index").is_file():
                _fits(_layer_size(cached), capacity)
                volumes.attach_lower(volume_id, cached)
                os.utime(cached)  # recently used: pruned last
                _write_gitdir(session_gitdir(session_id), mirror, cached, sha, branch)
                return cached
    layer = layer_path(mirror, sha)
    built = False
    with _layer_lock(layer):
        if not (layer / "tree").is_dir():
            size = tree_size(mirror, sha)
            _fits(size, capacity)
            _fits_budget(size[1], repo_disk.mirror_org(mirror))
            _build_layer(mirror, sha, layer, size)
            built = True
        repo_disk.mark_used(mirror, repo_disk.mirror_org(mirror))
        _fits(_layer_size(layer), capacity)
        volumes.attach_lower(volume_id, layer)
        os.utime(layer)  # recently used: pruned last
    _write_gitdir(session_gitdir(session_id), mirror, layer, sha, branch)
    if built:
        prune_layers()
    return layer


ALTERNATES = "objects/info/alternates"
SESSION_CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    "\tlogallrefupdates = true\n\tcheckStat = minimal\n"
)


@dataclass(frozen=True)
class _SessionFiles:
    """What git may believe about a session git dir, kept by the host beside it (repos/<key>.host/, root's
    alone): its config and the object stores it borrows. Jailed git writes the git dir as the sandbox
    uid, so a config or `alternates` there is never read: these two are bound over them in the jail."""

    config: Path
    alternates: Path

    def stores(self) -> set[Path]:
        return {Path(line) for line in self.alternates.read_text().split() if line.startswith("/")}


def _host_dir(gitdir: Path) -> Path:
    return gitdir.with_suffix(".host")


def _write_host_files(gitdir: Path, mirror_objects: Path) -> None:
    host = _host_dir(gitdir)
    tmp = host.with_name(f".{host.name}.{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    os.chmod(tmp, 0o755)  # whatever this process's umask
    (tmp / "config").write_text(SESSION_CONFIG)
    (tmp / "alternates").write_text(f"{mirror_objects}\n")
    for name in ("config", "alternates"):
        os.chmod(tmp / name, 0o644)
    shutil.rmtree(host, ignore_errors=True)
    os.rename(tmp, host)


def _session_files(gitdir: Path) -> _SessionFiles:
    """The host's files for `gitdir`, made from what the git dir says only where that is a mirror of
    ours (a git dir written before the host kept its own). The git dir's own config and alternates are
    made plain files, so the host's can be bound over them."""
    host = _host_dir(gitdir)
    if not (host / "alternates").is_file():
        named = gitdir / ALTERNATES
        lines = named.read_text().split() if named.is_file() and not named.is_symlink() else []
        mirrors = mirrors_dir().resolve()
        ours = [Path(line) for line in lines if Path(line).resolve().parent.parent == mirrors]
        _write_host_files(gitdir, ours[0] if ours else mirrors / "none.git" / "objects")
    for name in ("config", ALTERNATES):
        path = gitdir / name
        if path.is_symlink() or not path.is_file():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return _SessionFiles(config=host / "config", alternates=host / "alternates")


def _write_gitdir(gitdir: Path, mirror: Path, layer: Path, sha: str, branch: str) -> None:
    """A git dir by hand (what `git init` + `update-ref` + `checkout -b` would leave, without a process
    each), owned by the sandbox uid. checkStat minimal: the index's stat data comes from the layer, and
    through the overlay a file's inode and device differ, which would make git re-read every file."""
    shutil.rmtree(gitdir, ignore_errors=True)
    gitdir.parent.mkdir(parents=True, exist_ok=True)
    _write_host_files(gitdir, mirror / "objects")
    files = {
        "HEAD": f"ref: refs/heads/{branch}\n",
        "config": SESSION_CONFIG,
        ALTERNATES: f"{mirror / 'objects'}\n",
        f"refs/heads/{branch}": f"{sha}\n",
        "refs/hangar/base": f"{sha}\n",
        "refs/tags/.keep": "",
    }
    tmp = gitdir.with_name(f".{gitdir.name}.{uuid.uuid4().hex[:8]}")
    try:
        for name, text in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (tmp / "refs/tags/.keep").unlink()
        (tmp / "objects" / "pack").mkdir()
        shutil.copyfile(layer / "index", tmp / "index")
        for path in (tmp, *tmp.rglob("*")):
            os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
        os.rename(tmp, gitdir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- read-only trees per commit: the lower layers of workspaces ---------------------------------


def layers_dir() -> Path:
    return repo_disk.layers_dir()


def layer_path(mirror: Path, sha: str) -> Path:
    """The tree of `sha` from `mirror`: per mirror (so per org) as the mirror is."""
    return layers_dir() / f"{mirror.stem}-{sha}"


class _layer_lock:
    def __init__(self, layer: Path):
        layers_dir().mkdir(parents=True, exist_ok=True)
        os.chmod(layers_dir(), 0o755)
        self.path = layers_dir() / f".{layer.name}.lock"

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def tree_size(mirror: Path, sha: str) -> tuple[int, int]:
    """(files, bytes on disk rounded up to 4 KiB blocks) of the commit's tree, without checking it out."""
    out = git("--git-dir", str(mirror), "ls-tree", "-r", "-l", "-z", "--full-tree", sha).stdout
    files = size = 0
    for entry in out.split("\0"):
        meta = entry.split("\t", 1)[0].split()
        if len(meta) == 4 and meta[3].isdigit():
            files += 1
            size += -(-int(meta[3]) // 4096) * 4096
    return files, size


def _capacity(mnt: Path) -> tuple[int, int]:
    fs = os.statvfs(mnt)
    return fs.f_files, fs.f_blocks * fs.f_frsize


def _fits(size: tuple[int, int], capacity: tuple[int, int]) -> None:
    (files, used), (max_files, max_bytes) = size, capacity
    if used > max_bytes or files > max_files:
        raise GitError(
            f"The repository ({files} files, {used // 2**20} MB) does not fit in the session's disk quota "
            f"({max_bytes // 2**20} MB, {max_files} files).",
            kind="quota",
        )


def _fits_budget(size: int, org_id: str) -> None:
    """A layer is the org's too (sandbox.repo_disk): it must fit what the disk budgets leave."""
    room = budget.repo_room_bytes(org_id)
    if size > room:
        raise GitError(
            f"The repository's files ({size // 2**20} MB) do not fit in the disk budget left for "
            f"repositories ({max(room, 0) // 2**20} MB).",
            kind="quota",
        )


def _layer_size(layer: Path) -> tuple[int, int]:
    files, size = (layer / "size").read_text().split()
    return int(files), int(size)


def _build_layer(mirror: Path, sha: str, layer: Path, size: tuple[int, int]) -> None:
    """Check `sha` out into a fresh directory as the sandbox uid (its files are the sandbox's once copied
    up), with an index beside it, then rename it into place: a failure leaves no layer."""
    tmp = layers_dir() / f".{layer.name}.{uuid.uuid4().hex[:8]}"
    try:
        (tmp / "tree").mkdir(parents=True)
        for path in (tmp, tmp / "tree"):
            os.chown(path, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
        g = ("--git-dir", str(mirror), "--work-tree", str(tmp / "tree"))
        index = {"GIT_INDEX_FILE": str(tmp / "index")}
        git(*g, "read-tree", "--reset", "-u", sha, env=index, as_sandbox_user=True)
        # Older than the index: no entry is "racily clean", so no session re-reads a file to trust it.
        past = time.time() - 10
        for path in (tmp / "tree").rglob("*"):
            os.utime(path, (past, past), follow_symlinks=False)
        git(*g, "update-index", "-q", "--refresh", env=index, as_sandbox_user=True, check=False)
        (tmp / "size").write_text(f"{size[0]} {size[1]}")
        os.rename(tmp, layer)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _live_users(layer: Path) -> bool:
    users = layer / "users"
    return users.is_dir() and any(
        (volumes.ROOT / "volumes" / f"{u.name}.img").exists() for u in users.iterdir()
    )


def prune_layers(keep: int | None = None, keep_bytes: int | None = None) -> list[str]:
    """Remove the least recently used layers no volume stands on, beyond `keep` unused ones or beyond
    `keep_bytes` of them, whichever comes first (a reference whose volume is gone does not count)."""
    keep = int(os.environ.get("HANGAR_REPO_LAYERS_KEEP", "8")) if keep is None else keep
    keep_bytes = repo_disk.layers_keep_bytes() if keep_bytes is None else keep_bytes
    if not layers_dir().exists():
        return []
    unused = []
    for layer in layers_dir().iterdir():
        if layer.name.startswith(".") or not layer.is_dir():
            continue
        if not _live_users(layer):
            unused.append((layer.stat().st_mtime, layer))
    kept = kept_bytes = 0
    removed = []
    for _, layer in sorted(unused, reverse=True):
        size = repo_disk.layer_bytes(layer)
        if kept < keep and kept_bytes + size <= keep_bytes:
            kept, kept_bytes = kept + 1, kept_bytes + size
            continue
        if _remove_layer(layer):
            removed.append(layer.name)
    return removed


def _remove_layer(layer: Path) -> bool:
    with _layer_lock(layer):
        if not layer.is_dir() or _live_users(layer):
            return False  # claimed meanwhile
        doomed = layer.with_name(f".{layer.name}.gone-{uuid.uuid4().hex[:8]}")
        os.rename(layer, doomed)
    shutil.rmtree(doomed, ignore_errors=True)
    return True


def _borrowed_mirrors() -> set[str]:
    """The object stores session git dirs borrow (the host's own records, and a git dir's own file where
    the host kept none): a mirror named there stays."""
    named: set[str] = set()
    repos = volumes.ROOT / "repos"
    if not repos.exists():
        return named
    for record in repos.glob("*.host/alternates"):
        named.update(record.read_text().split())
    for gitdir in repos.glob("*.git"):
        if not (_host_dir(gitdir) / "alternates").exists():
            try:
                named.update((gitdir / ALTERNATES).read_text().split())
            except OSError:
                continue
    return named


def prune_mirrors(idle_s: float | None = None, now: float | None = None) -> list[str]:
    """Remove the mirrors nobody used for `idle_s` (HANGAR_REPO_MIRROR_IDLE_DAYS) that no session git dir
    borrows from and no volume stands on a layer of, with their unused layers."""
    idle_s = repo_disk.mirror_idle_s() if idle_s is None else idle_s
    now = time.time() if now is None else now
    if not mirrors_dir().exists():
        return []
    borrowed = _borrowed_mirrors()
    removed = []
    for mirror in mirrors_dir().glob("*.git"):
        if now - repo_disk.last_used(mirror) < idle_s or str(mirror / "objects") in borrowed:
            continue
        layers = list(layers_dir().glob(f"{mirror.stem}-*")) if layers_dir().exists() else []
        if any(_live_users(layer) for layer in layers):
            continue
        with open(mirror.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if now - repo_disk.last_used(mirror) < idle_s:
                continue  # fetched meanwhile
            doomed = mirror.with_name(f".{mirror.name}.gone-{uuid.uuid4().hex[:8]}")
            os.rename(mirror, doomed)
            for suffix in (".org", ".size"):
                mirror.with_suffix(suffix).unlink(missing_ok=True)
        shutil.rmtree(doomed, ignore_errors=True)
        for layer in layers:
            _remove_layer(layer)
        removed.append(mirror.name)
    return removed


def commit_all(session_id: str, message: str, author_name: str, author_email: str) -> str | None:
    """Stage everything in the workspace (its .gitignore honoured) and commit; None if nothing changed."""
    gitdir, worktree = session_gitdir(session_id), workspace_dir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(worktree))
    git(*g, "add", "--all", as_sandbox_user=True, session=gitdir)
    if git(*g, "diff", "--cached", "--quiet", check=False, session=gitdir).returncode == 0:
        return None
    who = {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": author_name,
        "GIT_COMMITTER_EMAIL": author_email,
    }
    git(*g, "commit", "--quiet", "--no-verify", "-m", message, env=who, session=gitdir)
    return head(session_id)


def head(session_id: str) -> str:
    gitdir = session_gitdir(session_id)
    sha = git(
        "--git-dir", str(gitdir), "rev-parse", "--verify", "HEAD^{commit}", session=gitdir
    ).stdout.strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise GitError(f"The session's HEAD is not a commit: {sha[:100]!r}.")
    return sha


def current_branch(session_id: str) -> str:
    gitdir = session_gitdir(session_id)
    return git("--git-dir", str(gitdir), "symbolic-ref", "--short", "HEAD", session=gitdir).stdout.strip()


def push(session_id: str, remote: Remote, branch: str) -> str:
    """Push the session's branch (never forced); GitError(kind="rejected") when the remote branch moved.

    The session git dir is the sandbox uid's, so the git that holds the credential never opens it: jailed
    git bundles the commits the mirror lacks, and host git pushes from a git dir of its own (its config
    ours, its objects that bundle and the mirror's)."""
    gitdir = session_gitdir(session_id)
    sha = head(session_id)
    stores = _session_files(gitdir).stores()
    with tempfile.TemporaryDirectory(prefix="hangar-push-") as tmp:
        shadow, out = Path(tmp) / "push.git", Path(tmp) / "out"
        git("init", "--bare", "--quiet", str(shadow))
        (shadow / ALTERNATES).write_text("".join(f"{store}\n" for store in sorted(stores)))
        have = git("--git-dir", str(shadow), "cat-file", "-e", f"{sha}^{{commit}}", check=False)
        if have.returncode != 0:
            out.mkdir()
            os.chown(out, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
            bundle = out / "push.bundle"
            # The jail makes the index's folder writable: that is where the bundle goes.
            bundling = {"GIT_INDEX_FILE": str(out / "index")}
            create = ("bundle", "create", "-q", str(bundle), "HEAD", "--not", "refs/hangar/base")
            git("--git-dir", str(gitdir), *create, session=gitdir, env=bundling)
            git("--git-dir", str(shadow), "bundle", "unbundle", str(bundle))
        git(
            "--git-dir",
            str(shadow),
            "push",
            "--quiet",
            "--porcelain",
            remote.url,
            f"{sha}:refs/heads/{branch}",
            remote=remote,
        )
    return sha


def merge(session_id: str, sha: str, author_name: str, author_email: str) -> str:
    """Merge commit `sha` (fetched into the mirror) into the session's branch, work tree included; a
    conflict leaves everything as it was and raises GitError(kind="conflict")."""
    gitdir = session_gitdir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(workspace_dir(session_id)))
    who = {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": author_name,
        "GIT_COMMITTER_EMAIL": author_email,
    }
    proc = git(*g, "merge", "--no-edit", "--no-verify", sha, env=who, session=gitdir, check=False)
    if proc.returncode != 0:
        git(*g, "merge", "--abort", session=gitdir, check=False)
        output = (proc.stdout + proc.stderr).strip()[-4000:]
        raise GitError(f"The remote changes do not merge cleanly: {output}", kind="conflict", output=output)
    return head(session_id)


def diff_base(session_id: str, max_patch_bytes: int) -> dict[str, Any]:
    """The workspace as it is now (untracked files included, .gitignore honoured) against the commit it
    was cloned at: per-file additions/deletions and the unified patch, cut at `max_patch_bytes`. Staged
    in a throwaway index, so the session's own index is untouched."""
    gitdir = session_gitdir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(workspace_dir(session_id)))
    index = gitdir / f"index.diff-{uuid.uuid4().hex[:8]}"
    try:
        _copy_nofollow(gitdir / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        git(*g, "add", "--all", env=env, session=gitdir)
        diff = ("diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "refs/hangar/base")
        numstat = git(*g, *diff, "--numstat", "-z", env=env, session=gitdir).stdout
        names = git(*g, *diff, "--name-status", "-z", env=env, session=gitdir).stdout
        patch, truncated = _git_bounded((*g, *diff, "--patch"), env, max_patch_bytes, gitdir)
    finally:
        index.unlink(missing_ok=True)
    fields = names.split("\0")
    status = dict(zip(fields[1::2], fields[0::2], strict=False))
    files = []
    for entry in numstat.split("\0"):
        parts = entry.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, path = parts
        binary = added == "-"
        files.append(
            {
                "path": path,
                "status": {"A": "added", "D": "deleted"}.get(status.get(path, "M"), "modified"),
                "additions": 0 if binary else int(added),
                "deletions": 0 if binary else int(deleted),
                "binary": binary,
            }
        )
    return {"files": files, "patch": patch, "truncated": truncated}


def _copy_nofollow(source: Path, target: Path) -> None:
    """Copy a file of a session git dir, owned by the sandbox uid; a link there is not followed (a missing
    or linked index leaves none: git then stages from nothing)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return
        with open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.chown(target, volumes.SANDBOX_UID, volumes.SANDBOX_UID)


def _git_bounded(args: tuple[str, ...], env: dict[str, str], cap: int, gitdir: Path) -> tuple[str, bool]:
    """Run git (hardened, jailed over a session git dir) and keep at most `cap` bytes of its output."""
    with (
        _prepared(args, env, None, as_sandbox_user=True, session=gitdir) as (command, full_env),
        subprocess.Popen(
            command,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd="/",
        ) as proc,
    ):
        assert proc.stdout is not None
        out = proc.stdout.read(cap + 1)
        truncated = len(out) > cap
        if truncated:
            proc.kill()
        else:
            proc.wait(timeout=GIT_TIMEOUT_S)
    return out[:cap].decode("utf-8", "replace"), truncated


def ready_marker(session_id: str) -> Path:
    return volumes.ROOT / "repos" / f"{volumes.session_key(session_id)}.ready"


def remove_session(session_id: str) -> None:
    shutil.rmtree(session_gitdir(session_id), ignore_errors=True)
    shutil.rmtree(_host_dir(session_gitdir(session_id)), ignore_errors=True)
    ready_marker(session_id).unlink(missing_ok=True)
