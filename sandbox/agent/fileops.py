"""File operations with OpenCode's read/list/glob/grep rules (seed 000 §6)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat as stat_mod
import subprocess
import tempfile

from wire import BadRequest, OpError, arg

WORKSPACE = "/workspace"
DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_BYTES = 50 * 1024
MAX_BYTES = 16 << 20  # read_bytes: base64 of this still fits the worker's frame cap (connection.py)
RESULT_LIMIT = 100
BINARY_SAMPLE = 4096
BINARY_EXTENSIONS = {
    ".zip",
    ".tar",
    ".gz",
    ".exe",
    ".dll",
    ".so",
    ".class",
    ".jar",
    ".war",
    ".7z",
    ".doc",
    ".docx",
    ".xls",
    ".xlsx",
    ".ppt",
    ".pptx",
    ".odt",
    ".ods",
    ".odp",
    ".bin",
    ".dat",
    ".obj",
    ".o",
    ".a",
    ".lib",
    ".wasm",
    ".pyc",
    ".pyo",
}
IGNORE_DIRS = [
    "node_modules",
    "__pycache__",
    ".git",
    "dist",
    "build",
    "target",
    "vendor",
    "bin",
    "obj",
    ".idea",
    ".vscode",
    ".zig-cache",
    "zig-out",
    ".coverage",
    "coverage",
    "tmp",
    "temp",
    ".cache",
    "cache",
    "logs",
    ".venv",
    "venv",
    "env",
]


def resolve(path: str) -> str:
    """Workspace-relative paths are joined to /workspace; absolute paths are taken as they are
    (the container, not the path, is the security boundary)."""
    if not isinstance(path, str) or not path:
        raise BadRequest("path must be a non-empty string")
    return os.path.normpath(path if path.startswith("/") else os.path.join(WORKSPACE, path))


def _path(args: dict, name: str = "path", default=...) -> str:
    return resolve(arg(args, name, str, default))


def is_binary(path: str, sample: bytes) -> bool:
    """OpenCode's rule: known binary extension, a NUL byte, or >30% non-printable in the sample."""
    if os.path.splitext(path)[1].lower() in BINARY_EXTENSIONS:
        return True
    if not sample:
        return False
    if b"\0" in sample:
        return True
    odd = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return odd / len(sample) > 0.3


def read(args: dict) -> dict:
    path = _path(args)
    offset = arg(args, "offset", int, 0)
    limit = arg(args, "limit", int, DEFAULT_READ_LIMIT)
    if offset < 0 or limit < 1:
        raise BadRequest("offset must be >= 0 and limit >= 1")
    if os.path.isdir(path):
        raise OpError(f"is a directory: {path}")
    with open(path, "rb") as f:
        if is_binary(path, f.read(BINARY_SAMPLE)):
            return {"content": "", "total_lines": 0, "offset": offset, "truncated": False, "binary": True}
        f.seek(0)
        lines = f.read().decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a trailing newline does not start another line
    window: list[str] = []
    size = 0
    for line in lines[offset : offset + limit]:
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + "..."
        size += len(line.encode()) + 1
        if size > MAX_READ_BYTES and window:
            break
        window.append(line)
    return {
        "content": "\n".join(window),
        "total_lines": len(lines),
        "offset": offset,
        "truncated": offset + len(window) < len(lines),
        "binary": False,
    }


def read_bytes(args: dict) -> dict:
    """The whole file, if it is at most `max_bytes` (never above MAX_BYTES): the reply is one line the
    worker holds in memory."""
    limit = min(arg(args, "max_bytes", int, MAX_BYTES), MAX_BYTES)
    with open(_path(args), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1)  # st_size lies for /proc files and fifos: read one past the limit
    if size > limit or len(data) > limit:
        raise OpError(f"file is too large to read whole: {max(size, len(data))} bytes (limit {limit})")
    return {"data": base64.b64encode(data).decode()}


def write(args: dict) -> dict:
    """Atomic: write a temp file beside the target, then rename over it. Parents are created."""
    path = _path(args)
    if "data" in args:
        content = base64.b64decode(arg(args, "data", str), validate=True)
    else:
        content = arg(args, "content", str).encode("utf-8")
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=".hangar-write-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        try:
            os.chmod(tmp, stat_mod.S_IMODE(os.stat(path).st_mode))
        except FileNotFoundError:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return {"size": len(content)}


def stat(args: dict) -> dict | None:
    path = _path(args)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    mode = st.st_mode
    kind = (
        "symlink"
        if stat_mod.S_ISLNK(mode)
        else "dir"
        if stat_mod.S_ISDIR(mode)
        else "file"
        if stat_mod.S_ISREG(mode)
        else "other"
    )
    return {"path": path, "type": kind, "size": st.st_size, "mtime": st.st_mtime}


def _rg(args: list[str], cwd: str) -> list[str]:
    proc = subprocess.run(["rg", *args], cwd=cwd, capture_output=True, timeout=60)
    if proc.returncode not in (0, 1):  # 1 means "nothing matched"
        raise OpError(proc.stderr.decode("utf-8", "replace").strip() or "ripgrep failed")
    return [p for p in proc.stdout.decode("utf-8", "replace").split("\n") if p]


def _existing_dir(path: str) -> str:
    if not os.path.isdir(path):
        raise OpError(f"not a directory: {path}", "FileNotFound")
    return path


def list_tree(args: dict) -> dict:
    """Up to 100 files (rg --files, hidden included, default ignores), with their parent dirs."""
    root = _existing_dir(_path(args, default=WORKSPACE))
    ignore = arg(args, "ignore", list, [])
    globs = [f"--glob=!{d}/" for d in IGNORE_DIRS] + [f"--glob=!{p}" for p in ignore if isinstance(p, str)]
    files = sorted(_rg(["--files", "--hidden", *globs, "."], root))
    truncated = len(files) > RESULT_LIMIT
    files = [f[2:] if f.startswith("./") else f for f in files[:RESULT_LIMIT]]
    entries = set(files)
    for f in files:
        parts = f.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            entries.add("/".join(parts[:i]) + "/")
    return {"paths": sorted(entries), "truncated": truncated}


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def glob(args: dict) -> dict:
    pattern = arg(args, "pattern", str)
    root = _existing_dir(_path(args, default=WORKSPACE))
    found = [
        os.path.normpath(os.path.join(root, f))
        for f in _rg(["--files", "--hidden", "--glob=!.git/", f"--glob={pattern}", "."], root)
    ]
    found.sort(key=_mtime, reverse=True)
    return {"paths": found[:RESULT_LIMIT], "truncated": len(found) > RESULT_LIMIT}


def grep(args: dict) -> dict:
    pattern = arg(args, "pattern", str)
    root = _path(args, default=WORKSPACE)
    include = arg(args, "include", str, None)
    rg_args = ["--json", "--hidden", "--no-messages", "--glob=!.git/", "--regexp", pattern]
    if include:
        rg_args.append(f"--glob={include}")
    target = root if os.path.isfile(root) else "."
    cwd = os.path.dirname(root) if os.path.isfile(root) else _existing_dir(root)
    matches = []
    for line in _rg([*rg_args, target], cwd):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") != "match":
            continue
        data = event["data"]
        text = (data["lines"].get("text") or "").rstrip("\n")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "..."
        path = data["path"].get("text") or ""
        matches.append(
            {"path": os.path.normpath(os.path.join(cwd, path)), "line": data["line_number"], "text": text}
        )
    mtimes = {m["path"]: _mtime(m["path"]) for m in matches}
    # Newest files first, matches within a file in line order (grouped by file).
    matches.sort(key=lambda m: (-mtimes[m["path"]], m["path"], m["line"]))
    return {"matches": matches[:RESULT_LIMIT], "truncated": len(matches) > RESULT_LIMIT}


def mkdir(args: dict) -> dict:
    os.makedirs(_path(args), exist_ok=True)
    return {}


def remove(args: dict) -> dict:
    path = _path(args)
    if path in ("/", WORKSPACE):
        raise OpError(f"refusing to remove {path}")
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    return {}


def move(args: dict) -> dict:
    src, dst = _path(args, "src"), _path(args, "dst")
    if not os.path.lexists(src):
        raise OpError(f"no such file: {src}", "FileNotFound")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.move(src, dst)
    return {}
