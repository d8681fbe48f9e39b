"""The sandbox's commands besides the agent and the language servers, installed into the debootstrapped
base by the host (the image itself never reaches a registry, and the sandbox has no network):

  /opt/hangar/tools  `npm ci` of tools/package-lock.json: the reference MCP server `mcp-server-everything`
                     and the `prettier` formatter (plain JavaScript: the image's Node 18 runs them)
  /opt/hangar/py     a venv for the image's python3 (3.11), filled by the host's pip with the pinned
                     wheels of tools/requirements.txt (--no-deps: the list is the whole closure):
                     `mcp-server-time`, `mcp-server-git` (reference MCP servers) and `black`
Each command is linked into /usr/local/bin, which is on the sandbox's PATH, so a project's MCP config can
name it (`command: ["mcp-server-time"]`) and the formatters find it.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent / "tools"
RECIPE_FILES = ("package.json", "package-lock.json", "requirements.txt")  # hashed into the base tag
# What Node never loads at run time: type declarations and source maps (a fifth of the packages' bytes).
NODE_UNUSED = ("*.d.ts", "*.d.mts", "*.d.cts", "*.map")
NODE_ROOT = "opt/hangar/tools"
PY_ROOT = "opt/hangar/py"
PY_VERSION = "3.11"  # Debian bookworm's python3; the wheels are chosen for it
NODE_COMMANDS = ("mcp-server-everything", "prettier")
PY_COMMANDS = ("mcp-server-time", "mcp-server-git", "black")
# The wheels the image's CPython can load: glibc 2.36 (bookworm) takes every manylinux tag up to it; pip
# widens a manylinux_2_X tag to older ones, but the legacy names (manylinux2014) must be listed.
PY_PLATFORM = [
    "--python-version",
    PY_VERSION,
    "--implementation",
    "cp",
    "--abi",
    "cp311",
    "--only-binary=:all:",
]
for _tag in ("manylinux_2_36_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"):
    PY_PLATFORM += ["--platform", _tag]


def recipe_bytes() -> list[bytes]:
    """What the base tag hashes of this part: the pinned lists, and this installer (how they land)."""
    return [Path(__file__).read_bytes()] + [(TOOLS_DIR / name).read_bytes() for name in RECIPE_FILES]


def install_tools(root: Path) -> None:
    _install_node_tools(root)
    _install_python_tools(root)
    # Readable by the sandbox's uid 1000 whatever the umask of the process that built it (`up` runs 077).
    for tree in (NODE_ROOT, PY_ROOT):
        subprocess.run(["chmod", "-R", "a+rX,go-w", str(root / tree)], check=True)


def _link(root: Path, name: str, target: str) -> None:
    link = root / "usr/local/bin" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def _install_node_tools(root: Path) -> None:
    target = root / NODE_ROOT
    target.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(TOOLS_DIR / name, target / name)
    subprocess.run(
        ["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=target,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    for pattern in NODE_UNUSED:
        for path in (target / "node_modules").rglob(pattern):
            if path.is_file():
                path.unlink()
    for name in NODE_COMMANDS:
        if not (target / "node_modules/.bin" / name).exists():
            raise RuntimeError(f"npm installed no `{name}` command")
        _link(root, name, f"/{NODE_ROOT}/node_modules/.bin/{name}")


def _install_python_tools(root: Path) -> None:
    """A venv made by hand (the image has no pip or ensurepip): pyvenv.cfg and bin/python3 are all that
    makes one, and each command is a two-line script whose shebang is the venv's python."""
    venv = root / PY_ROOT
    site = venv / f"lib/python{PY_VERSION}/site-packages"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {PY_VERSION}\n"
    )
    (venv / "bin/python3").symlink_to("/usr/bin/python3")
    pip = [shutil.which("pip3") or shutil.which("pip") or "pip", "install", "--quiet", "--no-deps"]
    subprocess.run(
        [*pip, *PY_PLATFORM, "--target", str(site), "-r", str(TOOLS_DIR / "requirements.txt")],
        check=True,
        stdout=subprocess.DEVNULL,
        env={
            **os.environ,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_WARN_SCRIPT_LOCATION": "1",
            "PIP_ROOT_USER_ACTION": "ignore",
        },
    )
    shutil.rmtree(site / "bin", ignore_errors=True)  # pip's scripts name the host's python
    entry_points = _console_scripts(site)
    for name in PY_COMMANDS:
        module, _, func = entry_points[name].partition(":")
        script = venv / "bin" / name
        script.write_text(
            f"#!/{PY_ROOT}/bin/python3\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
        )
        script.chmod(0o755)
        _link(root, name, f"/{PY_ROOT}/bin/{name}")


def _console_scripts(site: Path) -> dict[str, str]:
    scripts: dict[str, str] = {}
    for path in site.glob("*.dist-info/entry_points.txt"):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path)
        if parser.has_section("console_scripts"):
            scripts.update(parser["console_scripts"])
    return scripts
