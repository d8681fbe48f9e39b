"""Ignore and attributes rules that live outside the workspace, as git finds them.

  ignore:     $GIT_DIR/info/exclude, then core.excludesFile (default $XDG_CONFIG_HOME/git/ignore or
              ~/.config/git/ignore); info/exclude takes precedence (dir.c: setup_standard_excludes)
  attributes: $GIT_DIR/info/attributes, core.attributesFile (default .../git/attributes),
              /etc/gitattributes

The sandbox user may write any of them (or a ~/.gitconfig that moves them), so each track stats them
(a few lstats) and re-reads what changed. git itself is asked where core.excludesFile and
core.attributesFile point only when a config file mentions them (or includes another file): no git
process in the common case.
"""

from __future__ import annotations

import os
import re
import subprocess

import gitrules

CONFIG_KEYS = re.compile(rb"(?i)excludesfile|attributesfile|include")


def _stat(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class GlobalRules:
    def __init__(self, git_dir: str, git_argv: list[str]) -> None:
        home = os.environ.get("HOME") or "/home/hangar"
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        self.git_argv = git_argv
        self.config_files = [
            "/etc/gitconfig",
            os.path.join(home, ".gitconfig"),
            os.path.join(xdg, "git", "config"),
            os.path.join(git_dir, "config"),
        ]
        self.defaults = (os.path.join(xdg, "git", "ignore"), os.path.join(xdg, "git", "attributes"))
        self.info = (os.path.join(git_dir, "info", "exclude"), os.path.join(git_dir, "info", "attributes"))
        self._config_sig: tuple | None = ()
        self.excludes_file, self.attributes_file = self.defaults
        self._ignore_key: tuple | None = ()  # what the ignore lists were read from
        self._attrs_key: tuple | None = ()
        self.lists: list[list] = []
        self.attributes = False

    def refresh(self) -> tuple[bool, bool]:
        """Re-read what changed; returns (ignore rules changed, attributes sources changed)."""
        config_sig = tuple(_stat(p) for p in self.config_files)
        if config_sig != self._config_sig:
            self._config_sig = config_sig
            self.excludes_file, self.attributes_file = self._locate()
        ignore_key = (self.excludes_file, _stat(self.info[0]), _stat(self.excludes_file))
        ignore_changed = False
        if ignore_key != self._ignore_key:
            self._ignore_key = ignore_key
            lists = [
                gitrules.parse(raw, b"") for raw in (_read(self.info[0]), _read(self.excludes_file)) if raw
            ]
            ignore_changed = [[(p.text, p.negative, p.mustbedir) for p in ps] for ps in lists] != [
                [(p.text, p.negative, p.mustbedir) for p in ps] for ps in self.lists
            ]
            self.lists = lists
        attrs_key = tuple(_stat(p) for p in (self.info[1], self.attributes_file, "/etc/gitattributes"))
        attrs_changed = attrs_key != self._attrs_key
        if attrs_changed:
            self._attrs_key = attrs_key
            self.attributes = any(attrs_key)
        return ignore_changed, attrs_changed

    def _locate(self) -> tuple[str, str]:
        """(core.excludesFile, core.attributesFile); git answers when a config file names them."""
        if not any(CONFIG_KEYS.search(_read(p) or b"") for p in self.config_files):
            return self.defaults
        proc = subprocess.run(
            [
                *self.git_argv,
                "config",
                "-z",
                "--type=path",
                "--get-regexp",
                r"^core\.(excludesfile|attributesfile)$",
            ],
            capture_output=True,
            timeout=60,
        )
        found = {}
        for item in filter(None, proc.stdout.split(b"\0")):
            key, _, value = item.partition(b"\n")
            found[key.lower()] = os.fsdecode(value)  # the last one wins, as in git
        return (
            found.get(b"core.excludesfile", self.defaults[0]),
            found.get(b"core.attributesfile", self.defaults[1]),
        )
