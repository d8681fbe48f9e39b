"""docs/settings.md lists every HANGAR_* variable the tree reads, and nothing else; the Django side reads
them in settings.py, except the per-call readers the page names."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"\bHANGAR_[A-Z0-9_]*[A-Z0-9]\b")
SEARCHED = [
    "platform",
    "sandbox",
    "deploy",
    "scripted_llm",
    "bench",
    "Dockerfile",
    "Makefile",
    "frontend/build.sh",
]
SKIPPED_SUFFIXES = {".md", ".pyc", ".png", ".svg", ".json", ".lock"}
# Read from the environment on each use (docs/settings.md, "per call"): tests give a worker its own queue.
PER_CALL = {"engine/session/enqueue.py", "integrations/queue.py", "engine/workspace/sandboxes.py"}
ENV_READ = re.compile(r"(environ(\.get)?\s*[\(\[]\s*|getenv\(\s*)[\"']HANGAR_")


def _files() -> list[Path]:
    found = []
    for entry in SEARCHED:
        path = ROOT / entry
        candidates = [path] if path.is_file() else path.rglob("*")
        found += [
            p
            for p in candidates
            if p.is_file()
            and p.suffix not in SKIPPED_SUFFIXES
            and "__pycache__" not in p.parts
            and "node_modules" not in p.parts
        ]
    return found


def names_in_code() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for path in _files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for name in set(NAME.findall(text)):
            names.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return names


def names_on_page() -> set[str]:
    page = (ROOT / "docs" / "settings.md").read_text()
    return set(re.findall(r"^\| `(HANGAR_[A-Z0-9_]+)` \|", page, flags=re.MULTILINE))


def test_every_variable_the_tree_reads_is_on_the_settings_page():
    missing = {name: files for name, files in names_in_code().items() if name not in names_on_page()}
    assert not missing, f"read in the tree, missing from docs/settings.md: {missing}"


def test_the_settings_page_lists_no_variable_the_tree_does_not_read():
    stale = names_on_page() - set(names_in_code())
    assert not stale, f"on docs/settings.md but read nowhere: {sorted(stale)}"


def test_the_django_side_reads_hangar_variables_only_in_settings():
    package = ROOT / "platform" / "hangar"
    readers = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "settings.py" and ENV_READ.search(path.read_text())
    }
    assert readers <= PER_CALL, f"read HANGAR_* outside settings.py: {sorted(readers - PER_CALL)}"
