"""What a bash command line asks of the permission rules, from a real parse of it (tree-sitter's bash
grammar, as OpenCode's bash tool does), never from splitting the text.

Every simple command in the tree is checked, wherever it stands: in a pipeline or a list, in a subshell
or a function body, inside a `$(…)` or backticks (quoted or not), a `<(…)`, a heredoc, or the value of a
`VAR=$(…)` prefix or an `export`. A command's pattern is its words with quotes removed where they are
static (`"rm" -rf /` and `r''m -rf /` are `rm -rf /`), its `VAR=value` prefixes kept (they change what
the command does: `LD_PRELOAD`, `GIT_SSH_COMMAND`, `PAGER`); a part built at run time (a variable, a
substitution) keeps its source text, and the commands inside it are patterns of their own.

Paths outside the workspace ask `external_directory` for their folder, as the file tools do: the
non-option arguments of the commands that take paths (PATH_COMMANDS), every redirection's target, and
the working directory. Relative paths resolve against the working directory as a static `cd` moves it;
a `cd` to a place only known at run time asks `external_directory` for `*`, since every later relative
path runs there. A line the grammar cannot parse also asks for its whole text, so a rule written for
its first word never allows what the shell would read differently.
"""

from __future__ import annotations

import codecs
import posixpath
import threading
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from sandbox.protocol import WORKSPACE

# Commands whose second word is a subcommand worth keeping in the `always` prefix.
SUBCOMMANDS = frozenset(
    [
        "git",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "cargo",
        "go",
        "docker",
        "kubectl",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "make",
        "dotnet",
        "gh",
        "apt",
        "apt-get",
        "brew",
        "deno",
        "npx",
        "composer",
        "mvn",
        "gradle",
        "terraform",
        "helm",
        "systemctl",
    ]
)
# Commands whose non-option arguments are paths (OpenCode checks cd rm cp mv mkdir touch chmod chown cat).
PATH_COMMANDS = frozenset(
    [
        "cd",
        "pushd",
        "ls",
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "rm",
        "rmdir",
        "cp",
        "mv",
        "ln",
        "mkdir",
        "touch",
        "chmod",
        "chown",
        "chgrp",
        "tee",
        "truncate",
        "stat",
        "du",
        "wc",
        "diff",
        "source",
        ".",
    ]
)
CHANGES_DIRECTORY = frozenset({"cd", "pushd"})
DIRECTORY_COMMANDS = frozenset({"cd", "pushd", "mkdir", "rmdir", "ls"})
HARMLESS = tuple(  # the devices every command line uses: never a folder worth asking about
    f"/dev/{name}"
    for name in ["null", "zero", "random", "urandom", "full", "tty", "stdin", "stdout", "stderr", "fd/"]
)
UNKNOWN = "*"  # a directory only known at run time

_LANGUAGE = Language(tree_sitter_bash.language())
_local = threading.local()  # a Parser is not to be shared between threads


def _parser() -> Parser:
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(_LANGUAGE)
    return parser


@dataclass
class ShellCheck:
    patterns: list[str] = field(default_factory=list)  # `bash`, one per simple command
    always: list[str] = field(default_factory=list)  # the prefixes "always" remembers
    directories: list[str] = field(default_factory=list)  # `external_directory` globs (`<folder>/*`)

    def add(self, items: list[str], value: str) -> None:
        if value not in items:
            items.append(value)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape_word(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":  # a backslash-newline is a line continuation
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _unescape_double(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def static_value(node: Node) -> str | None:
    """The word the shell sees once quotes are removed, or None when part of it is made at run time."""
    kind = node.type
    if kind in ("word", "number"):
        return _unescape_word(_text(node))
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "ansi_c_string":
        try:
            return codecs.escape_decode(_text(node)[2:-1].encode("utf-8"))[0].decode("utf-8", "replace")
        except ValueError:
            return None
    if kind == "string":
        if any(child.type not in ('"', "string_content") for child in node.children):
            return None
        return _unescape_double(_text(node)[1:-1])
    if kind == "concatenation":
        parts = [static_value(child) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    if kind == "command_name":
        return static_value(node.children[0]) if node.children else None
    return None


def _word(node: Node) -> str:
    value = static_value(node)
    return _text(node) if value is None else value


def _prefix(words: list[str]) -> str:
    head = words[0]
    sub = next((w for w in words[1:] if not w.startswith("-")), None)
    return f"{head} {sub} *" if head in SUBCOMMANDS and sub else f"{head} *"


class _Walk:
    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.out = ShellCheck()

    def path(self, value: str | None, *, directory: bool) -> None:
        """Ask for `value`'s folder when it lies outside the workspace (None: only known at run time)."""
        if value is None:
            return
        if value.startswith("~"):
            self.out.add(self.out.directories, posixpath.join(value.split("/", 1)[0], "*"))
            return
        if not value.startswith("/"):
            if self.cwd is None:  # relative to a directory only known at run time: asked with it
                return
            value = posixpath.join(self.cwd, value)
        full = posixpath.normpath(value)
        if full.startswith("//"):
            full = "/" + full.lstrip("/")
        if full == WORKSPACE or full.startswith(WORKSPACE + "/") or full.startswith(HARMLESS):
            return
        folder = full if directory else posixpath.dirname(full)
        self.out.add(self.out.directories, posixpath.join(folder, "*"))

    def command(self, node: Node) -> None:
        assignments = [_text(c) for c in node.named_children if c.type == "variable_assignment"]
        name = node.child_by_field_name("name")
        arguments = node.children_by_field_name("argument")
        if name is None:
            return
        head = static_value(name)
        words = [_word(name)] + [_word(a) for a in arguments]
        if head in PATH_COMMANDS:
            self.paths(head, arguments)
        if head in CHANGES_DIRECTORY:
            return  # OpenCode: changing directory needs no `bash` permission, only where it goes
        self.out.add(self.out.patterns, " ".join(assignments + words))
        self.out.add(self.out.always, _prefix(words))

    def paths(self, head: str, arguments: list[Node]) -> None:
        values = [static_value(a) for a in arguments]
        operands = [v for v in values if v is None or not v.startswith(("-", "+"))]
        if head in CHANGES_DIRECTORY:
            target = operands[0] if operands else "~"
            if target is None or target == "-":
                self.out.add(self.out.directories, UNKNOWN)
                self.cwd = None
                return
            self.path(target, directory=True)
            if target.startswith("/"):
                self.cwd = posixpath.normpath(target)
            elif target.startswith("~"):
                self.cwd = None  # home: asked above
            elif self.cwd is not None:
                self.cwd = posixpath.normpath(posixpath.join(self.cwd, target))
            return
        for value in operands:
            self.path(value, directory=head in DIRECTORY_COMMANDS)

    def redirect(self, node: Node) -> None:
        destination = node.child_by_field_name("destination")
        if destination is not None and destination.type not in ("number", "file_descriptor"):
            self.path(static_value(destination), directory=False)

    def walk(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "command":
                self.command(node)
            elif node.type == "file_redirect":
                self.redirect(node)
            stack.extend(reversed(node.children))


def check(command: str, cwd: str | None = WORKSPACE) -> ShellCheck:
    """What running `command` in `cwd` asks: bash patterns, their "always" prefixes, external folders."""
    walk = _Walk(cwd)
    if cwd is not None:
        walk.path(cwd, directory=True)
    # The grammar reads a backslash-newline as a word break where bash joins the two lines (`r\<nl>m`
    # is `rm`): a line holding one is read both ways, and each reading asks.
    texts = [command, command.replace("\\\n", "")] if "\\\n" in command else [command]
    for text in texts:
        tree = _parser().parse(text.encode("utf-8"))
        walk.cwd = cwd
        walk.walk(tree.root_node)
        if tree.root_node.has_error and text.strip():
            walk.out.add(walk.out.patterns, text.strip())
    return walk.out
