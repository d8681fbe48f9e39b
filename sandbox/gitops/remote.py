"""Repository URLs and ref names, checked before any git runs: the error every git operation raises
(GitError), https and SSH URL parsing, the ref names git accepts, and a validated remote with the addresses
its host resolved to (pinned for git) and the credential for one operation (Remote, check_url).
No git, no files."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field

from sandbox import netguard

MAX_URL = 500


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
