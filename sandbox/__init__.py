"""Hangar's sandbox library: per-session containers driven through an in-container agent.

Importable without Django. Entry points: `DockerSandboxes` (the Docker implementation of the
`Sandbox` protocol), `WarmPool`, `Reaper`, and `sandbox.image.ensure_image()`.
"""

from sandbox.protocol import (
    WORKSPACE,
    ExecResult,
    FileDiff,
    FileNotFound,
    FileStat,
    GrepMatch,
    ReadResult,
    Sandbox,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
)

__all__ = [
    "WORKSPACE",
    "DockerSandboxes",
    "ExecResult",
    "FileDiff",
    "FileNotFound",
    "FileStat",
    "GrepMatch",
    "ReadResult",
    "Reaper",
    "Sandbox",
    "SandboxError",
    "SandboxSpec",
    "SandboxUnavailable",
    "WarmPool",
]


def __getattr__(name: str) -> type:

    # Lazy: `import sandbox` must stay cheap and must not need the docker SDK for the protocol.
    if name == "DockerSandboxes":
        from sandbox.manager import DockerSandboxes

        return DockerSandboxes
    if name == "WarmPool":
        from sandbox.pool import WarmPool

        return WarmPool
    if name == "Reaper":
        from sandbox.reaper import Reaper

        return Reaper
    raise AttributeError(name)
