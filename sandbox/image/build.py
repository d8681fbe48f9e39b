"""Build the sandbox image offline, tagged by a content hash of its recipe.

Two layers, two tags, so changing the agent does not re-run debootstrap:
  hangar-base:<hash(packages, suite, lsp lock, tools recipe)>  debootstrap --variant=minbase + --include,
                    the language servers (`npm ci` of lsp/package-lock.json), the reference MCP servers and
                    formatters (tools.py: tools/package-lock.json, tools/requirements.txt), docker import
  hangar-sandbox:<hash(base tag, Dockerfile, agent/*)>  docker build FROM the base (no network)
`ensure_image()` is a fast no-op (one image lookup) when the tag already exists.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import docker
import docker.errors

from sandbox.image.tools import install_tools, recipe_bytes

SUITE = "bookworm"
MIRROR = os.environ.get("HANGAR_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# Everything the sandbox needs, installed by debootstrap so the docker build needs no network.
# `mount` is there so the escape suite can show that even a setuid mount is powerless.
# `nodejs` runs the language servers (pyright, typescript-language-server), which the in-container agent
# starts only when a session first touches a file of their language (agent/lsp.py).
PACKAGES = ["bash", "coreutils", "git", "ripgrep", "python3", "procps", "mount", "ca-certificates", "nodejs"]

IMAGE_DIR = Path(__file__).resolve().parent
SANDBOX_DIR = IMAGE_DIR.parent
AGENT_DIR = SANDBOX_DIR / "agent"
LSP_DIR = IMAGE_DIR / "lsp"  # package.json + lock of the language servers; installed at /opt/hangar/lsp
LSP_ROOT = "opt/hangar/lsp"
BASE_REPO = "hangar-base"
SANDBOX_REPO = "hangar-sandbox"


def _digest(*chunks: bytes) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "big"))
        h.update(chunk)
    return h.hexdigest()[:16]


def _agent_files() -> list[Path]:
    return sorted(p for p in AGENT_DIR.glob("*.py") if p.is_file())


def base_tag() -> str:
    lock = (LSP_DIR / "package-lock.json").read_bytes()
    chunks = [SUITE.encode(), " ".join(PACKAGES).encode(), b"minbase", lock, *recipe_bytes()]
    return f"{BASE_REPO}:{_digest(*chunks)}"


def sandbox_tag() -> str:
    chunks = [base_tag().encode(), (IMAGE_DIR / "Dockerfile").read_bytes()]
    for path in _agent_files():
        chunks += [path.name.encode(), path.read_bytes()]
    return f"{SANDBOX_REPO}:{_digest(*chunks)}"


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _build_base(tag: str) -> None:
    """debootstrap into a temp dir and `docker import` it (the only step that needs the mirror)."""
    if not shutil.which("debootstrap"):
        raise RuntimeError("debootstrap is not installed (apt-get install -y debootstrap)")
    root = Path(tempfile.mkdtemp(prefix="hangar-base-"))
    try:
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(root), MIRROR],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        _install_language_servers(root / LSP_ROOT)
        install_tools(root)
        # Drop caches the image never needs; smaller import, faster container start.
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / junk, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        subprocess.run(
            ["docker", "import", "-", tag], stdin=tar.stdout, check=True, stdout=subprocess.DEVNULL
        )
        if tar.wait() != 0:
            raise RuntimeError("tar of the debootstrap dir failed")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _install_language_servers(target: Path) -> None:
    """`npm ci` of the committed lock into the base's /opt/hangar/lsp, with the host's npm (the image has
    no registry access); the packages are plain JavaScript, so the host's Node builds nothing for them."""
    if not shutil.which("npm"):
        raise RuntimeError("npm is not installed: the sandbox's language servers are installed with it")
    target.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(LSP_DIR / name, target / name)
    subprocess.run(
        ["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=target,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # Readable by the sandbox's uid 1000 whatever the umask of the process that built it (`up` runs 077).
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(target)], check=True)


def _build_context() -> io.BytesIO:
    """A tar with just the Dockerfile and the agent: nothing else of the repo reaches the daemon."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(IMAGE_DIR / "Dockerfile", arcname="Dockerfile")
        for path in _agent_files():
            tar.add(path, arcname=f"agent/{path.name}")
    buf.seek(0)
    return buf


def ensure_image(client: docker.DockerClient | None = None, *, verbose: bool = False) -> str:
    """Return the sandbox image tag, building whatever layer is missing. Idempotent."""
    client = client or docker.from_env()
    tag = sandbox_tag()
    if _image_exists(client, tag):
        return tag
    base = base_tag()
    if not _image_exists(client, base):
        if verbose:
            print(f"building {base} with debootstrap (about a minute)...", flush=True)
        _build_base(base)
    if verbose:
        print(f"building {tag}...", flush=True)
    # The low-level build is a lazy stream of JSON log lines: consume it, keep it for errors.
    log = list(
        client.api.build(
            fileobj=_build_context(),
            custom_context=True,
            tag=tag,
            buildargs={"BASE": base},
            rm=True,
            forcerm=True,
            network_mode="none",
            labels={"hangar.recipe": tag},
            decode=True,
        )
    )
    if not _image_exists(client, tag):
        text = "".join(str(e.get("stream") or e.get("error") or "") for e in log)
        raise RuntimeError(f"docker build of {tag} failed:\n{text[-4000:]}")
    return tag
