"""A real SSH git server for tests: OpenSSH's sshd on 127.0.0.1, serving the bare repositories of a
GitServer's root (git-upload-pack / git-receive-pack over SSH, as GitHub's git@ does). Only keys written
to its authorized_keys get in."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


class SSHServer:
    def __init__(self, workdir: Path, repos: Path):
        self.dir, self.repos = workdir, repos
        self.proc: subprocess.Popen | None = None
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    @property
    def host_key(self) -> str:
        kind, blob = (self.dir / "host_ed25519.pub").read_text().split()[:2]
        return f"{kind} {blob}"

    def url(self, name: str) -> str:
        return f"ssh://root@127.0.0.1:{self.port}{self.repos / name}"

    def authorize(self, public_key: str) -> None:
        with (self.dir / "authorized_keys").open("a") as f:
            f.write(public_key.strip() + "\n")

    def start(self) -> SSHServer:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "host_ed25519")], check=True
        )
        (self.dir / "authorized_keys").touch()
        config = self.dir / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.dir / 'host_ed25519'}\n"
            f"PidFile {self.dir / 'sshd.pid'}\nAuthorizedKeysFile {self.dir / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nAllowUsers root\nAllowTcpForwarding no\nX11Forwarding no\n"
            "PermitUserEnvironment no\nLogLevel VERBOSE\n"
        )
        log = (self.dir / "sshd.log").open("wb")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen: {(self.dir / 'sshd.log').read_text()}")

    def log(self) -> str:
        return (self.dir / "sshd.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def ssh_key_pair(directory: Path, name: str) -> tuple[str, str]:
    path = directory / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True)
    return path.read_text(), path.with_suffix(".pub").read_text().strip()
