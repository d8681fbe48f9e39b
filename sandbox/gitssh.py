"""SSH keys for repositories reached over SSH: deploy keys checked (or made) with ssh-keygen, and the
host's public key read once with ssh-keyscan so that every later connection is pinned to it (gitops
passes both to ssh in files of the git process's own HOME). Errors are ValueError with the message a
project admin is shown."""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

MAX_KEY = 16 * 1024
HOST_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
)
_PUBLIC = re.compile(r"^(?P<type>[a-z0-9-]+) (?P<blob>[A-Za-z0-9+/]+={0,2})(?: .*)?$")


def public_key(private_key: str) -> str:
    """The public half of an unencrypted OpenSSH or PEM private key; ValueError if it is not one."""
    if not isinstance(private_key, str) or not private_key.strip() or len(private_key) > MAX_KEY:
        raise ValueError(f"Must be a private key of at most {MAX_KEY} characters.")
    with tempfile.TemporaryDirectory(prefix="hangar-key-") as tmp:
        path = Path(tmp) / "id"
        path.touch(mode=0o600)
        path.write_text(private_key.strip() + "\n")
        proc = subprocess.run(
            ["ssh-keygen", "-y", "-P", "", "-f", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    if proc.returncode != 0:
        if "passphrase" in proc.stderr.lower():
            raise ValueError("The key has a passphrase: a deploy key must have none.")
        raise ValueError("Not a private key ssh accepts (OpenSSH or PEM format).")
    return normalised_public_key(proc.stdout)


def generate(comment: str) -> tuple[str, str]:
    """A new ed25519 key pair: (private key, public key)."""
    with tempfile.TemporaryDirectory(prefix="hangar-key-") as tmp:
        path = Path(tmp) / "id"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment[:100], "-f", str(path)],
            check=True,
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        return path.read_text(), normalised_public_key(path.with_suffix(".pub").read_text())


def normalised_public_key(text: str) -> str:
    """ "type base64" of a public key line (a comment or a known_hosts host field dropped); ValueError if it
    is not a key of a type ssh accepts for hosts."""
    line = text.strip() if isinstance(text, str) else ""
    fields = line.split()
    if len(fields) >= 3 and fields[0] not in HOST_KEY_TYPES and fields[1] in HOST_KEY_TYPES:
        line = " ".join(fields[1:])  # a known_hosts line: "host type key"
    match = _PUBLIC.fullmatch(line) if len(line) < 2000 else None
    if not match or match["type"] not in HOST_KEY_TYPES:
        raise ValueError(f"Must be a public key: one of {', '.join(HOST_KEY_TYPES)}, then its base64.")
    try:
        base64.b64decode(match["blob"], validate=True)
    except ValueError:
        raise ValueError("The key's base64 does not decode.") from None
    return f"{match['type']} {match['blob']}"


def fingerprint(key: str) -> str:
    """SHA256:… as ssh-keygen -l prints it."""
    blob = base64.b64decode(key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def scan_host_key(address: str, port: int) -> str:
    """The host's public key (the strongest type it offers), asked of the address already checked;
    ValueError if it offers none in time."""
    proc = subprocess.run(
        ["ssh-keyscan", "-T", "10", "-p", str(port), "-t", "ed25519,ecdsa,rsa", address],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("#"):
            continue
        try:
            key = normalised_public_key(line)
        except ValueError:
            continue
        found.setdefault(key.split()[0], key)
    for kind in HOST_KEY_TYPES:
        if kind in found:
            return found[kind]
    raise ValueError(f"The host at {address}:{port} offered no SSH host key.")
