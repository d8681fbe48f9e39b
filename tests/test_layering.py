"""Writes go through services: an ORM write (`<Model>.objects...create/update/delete/...`) may stand only in
a services module, a selectors module (which may not write, but the line is drawn at the store's own
modules), models, admin and migrations. Views, consumers, commands, tasks and the loop call a named
service instead, so every write is atomic and audited in one place (docs/architecture.md, Conventions).
Function-level code counts the same as module-level code."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "platform" / "hangar"
WRITES = {
    "create",
    "get_or_create",
    "update_or_create",
    "update",
    "delete",
    "save",
    "bulk_create",
    "bulk_update",
    "create_user",
    "create_superuser",
}
ALLOWED_FILES = {"models.py", "admin.py", "admin_scoping.py"}
ALLOWED_SUFFIXES = ("services.py", "selectors.py")

# The HTTP/WebSocket edges read through selectors too: no `.objects` at all there.
EDGES = ("api", "opencode", "realtime")


def _allowed(path: Path) -> bool:
    return "migrations" in path.parts or path.name in ALLOWED_FILES or path.name.endswith(ALLOWED_SUFFIXES)


def _chain_has_objects(node: ast.AST) -> bool:
    """Whether the receiver of a call chain passes through `.objects` (Model.objects..., x.objects...)."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def orm_writes(source: str, name: str) -> list[str]:
    """`name:line .method()` for each ORM write in `source`."""
    return [
        f"{name}:{node.lineno} .{node.func.attr}()"
        for node in ast.walk(ast.parse(source, name))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITES
        and _chain_has_objects(node.func.value)
    ]


def test_orm_writes_stand_only_in_services_models_admin_and_migrations():
    offenders = [
        hit
        for path in sorted(ROOT.rglob("*.py"))
        if not _allowed(path)
        for hit in orm_writes(path.read_text(), str(path.relative_to(ROOT.parent)))
    ]
    assert offenders == [], "ORM writes outside services:\n" + "\n".join(offenders)


def test_the_edges_read_through_selectors():
    reads = [
        f"{path.relative_to(ROOT.parent)}:{node.lineno}"
        for edge in EDGES
        for path in sorted((ROOT / edge).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "objects"
    ]
    assert reads == [], "ORM access in an edge (use a selector or a service):\n" + "\n".join(reads)


def test_every_app_has_its_layer_in_the_import_contracts():
    """A new app must be placed in .importlinter's layers, or nothing would check what it imports."""
    contracts = (ROOT.parent.parent / ".importlinter").read_text()
    layers = contracts.split("[importlinter:contract:layers]", 1)[1].split("[importlinter:contract:", 1)[0]
    named = {
        name.strip() for line in layers.split("\n") if line.startswith("    ") for name in line.split("|")
    }
    apps = {f"hangar.{path.parent.name}" for path in ROOT.glob("*/apps.py")}
    assert apps - named == set()


def test_the_check_sees_writes_in_function_bodies_and_chains():
    source = (
        "def view(request):\n"
        "    Token.objects.filter(pk=1).update(last_used_at=None)\n"
        "    Thing.objects.create(name='x')\n"
        "    Thing.objects.select_for_update().get(pk=1)\n"
        "    thing.save()\n"
    )
    assert orm_writes(source, "api/views.py") == ["api/views.py:2 .update()", "api/views.py:3 .create()"]
