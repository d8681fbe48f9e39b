"""The jail of host-side git that reads or writes a session's workspace (sandbox.gitops): the sandbox
controls those files while git reads them, so git must find nothing of the host behind them."""

from __future__ import annotations

from pathlib import Path

from sandbox import volumes

# A git process that reads or writes a workspace does so in a mount namespace of its own, chrooted into
# an empty tmpfs that holds only the system's read-only /usr, /dev/null, /dev/urandom and the paths that one command
# needs. The sandbox controls the workspace's files while host git reads them: a file swapped for a
# symlink between git's lstat and its open would otherwise be followed on the host, so its target (a
# world-readable host file, another session's workspace) could end up in a commit, or a write land
# outside the workspace. Inside the jail such a link finds nothing.
# Everything in the jail is made world-traversable whatever umask this process inherited: git runs in it as
# the sandbox uid, and a 0700 /dev (root's, under umask 077) failed every clone on "/dev/null".
JAIL_SCRIPT = r"""
set -eu
umask 022
root=$1; ids=$2; shift 2
mount -t tmpfs -o mode=755,size=1m,nosuid,nodev hangar-git "$root"
for top in /usr /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$top" ]; then ln -s "$(readlink "$top")" "$root$top"
  elif [ -d "$top" ]; then
    mkdir -p -m 755 "$root$top"; mount -o bind,ro "$top" "$root$top"
  fi
done
mkdir -p -m 755 "$root/dev" "$root$HOME"
for dev in null urandom; do : > "$root/dev/$dev"; mount --bind "/dev/$dev" "$root/dev/$dev"; done
while [ "$1" != "--" ]; do
  mode=${1%%:*}; path=${1#*:}; shift
  case $mode in
    file) src=${path%%=*}; dst=${path#*=}; mount -o bind,ro "$src" "$root$dst" ;;
    *) mkdir -p -m 755 "$root$path"; mount -o "rbind,$mode" "$path" "$root$path" ;;
  esac
done
shift
exec /usr/sbin/chroot --userspec="$ids" --groups="${ids#*:}" "$root" "$@"
"""


def jailed(
    command: list[str],
    args: tuple[str, ...],
    env: dict[str, str],
    root: str,
    *,
    readable: set[Path] | None = None,
    files: dict[Path, Path] | None = None,
) -> list[str]:
    """`command` wrapped to run in the jail as the sandbox uid. What it sees: its --git-dir and
    --work-tree and its GIT_INDEX_FILE's folder (read-write), the object stores in `readable`
    (read-only; by default those its git dir borrows through `alternates`, for a git dir the host
    alone writes), and each of `files` (host file -> the path it covers, read-only: a session git dir's
    config and alternates are the host's own, whatever the git dir holds)."""
    named = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i] in ("--git-dir", "--work-tree")}
    writable = {Path(p) for p in named.values()}
    if "GIT_INDEX_FILE" in env:
        writable.add(Path(env["GIT_INDEX_FILE"]).parent)
    if readable is None:
        readable = set()
        alternates = Path(named.get("--git-dir", "/nonexistent")) / "objects" / "info" / "alternates"
        if alternates.is_file():
            readable = {Path(line) for line in alternates.read_text().split() if line.startswith("/")}
    return jailed_paths(command, root, writable=writable, readable=readable, files=files)


def jailed_paths(
    command: list[str],
    root: str,
    *,
    writable: set[Path],
    readable: set[Path],
    files: dict[Path, Path] | None = None,
) -> list[str]:
    """`command` wrapped to run in the jail as the sandbox uid, seeing only `writable` (read-write),
    `readable` (read-only) and `files` (host file -> the path it covers, read-only)."""
    binds = sorted(
        [(len(p.parts), f"rw:{p}") for p in writable]
        + [(len(p.parts), f"ro:{p}") for p in readable - writable]
        + [(len(dst.parts), f"file:{src}={dst}") for src, dst in (files or {}).items()]
    )
    ids = f"{volumes.SANDBOX_UID}:{volumes.SANDBOX_UID}"
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        JAIL_SCRIPT,
        "jail",
        root,
        ids,
        *(b for _, b in binds),
        "--",
        *command,
    ]
