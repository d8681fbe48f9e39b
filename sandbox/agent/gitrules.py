"""Git's rules for which worktree paths a snapshot holds, ported so a track needs no git process.

Ported from git 2.39 (the image's git, which the tests use as the oracle):
  * `wildmatch` (wildmatch.c) and the .gitignore pattern rules (dir.c: parse_path_pattern,
    match_basename, match_pathname, last_matching_pattern_from_lists);
  * nested repositories (dir.c: is_nonbare_repository_dir, setup.c: is_git_directory);
  * paths git refuses to put in an index (read-cache.c: verify_path with core.protectNTFS, on by
    default): `.git` in any case, `git~1`, and the like. git lists those as untracked and then
    fails the whole `add`; a snapshot skips them instead.
All paths are bytes, relative to the worktree, '/'-separated, as git sees them.
"""

from __future__ import annotations

import os
import re
import stat

# git's own ctype (ctype.c): ASCII only, nothing above 0x7f.
_ALPHA = frozenset(range(65, 91)) | frozenset(range(97, 123))
_DIGIT = frozenset(range(48, 58))
_CLASSES = {
    b"alnum": _ALPHA | _DIGIT,
    b"alpha": _ALPHA,
    b"blank": frozenset(b" \t"),
    b"cntrl": frozenset(range(32)) | {127},
    b"digit": _DIGIT,
    b"graph": frozenset(range(33, 127)),
    b"lower": frozenset(range(97, 123)),
    b"print": frozenset(range(32, 127)),
    b"punct": frozenset(range(33, 127)) - _ALPHA - _DIGIT,
    b"space": frozenset(b" \t\n\r"),
    b"upper": frozenset(range(65, 91)),
    b"xdigit": _DIGIT | frozenset(b"abcdefABCDEF"),
}
_GLOB_SPECIAL = frozenset(b"*?[\\")
MATCH, NOMATCH, ABORT_ALL, ABORT_TO_STARSTAR = 0, 1, -1, -2


# A line-for-line port of git's wildmatch.c (checked against git by the differential tests): its one
# state machine stays one function so it can be compared with the C.
def _dowild(p: bytes, i: int, text: bytes, j: int, pathname: bool) -> int:  # noqa: C901
    """wildmatch.c's dowild on (pattern, index) and (text, index); the end of a bytes is C's NUL."""
    plen, tlen = len(p), len(text)
    while i < plen:
        p_ch = p[i]
        t_ch = text[j] if j < tlen else 0
        if j >= tlen and p_ch != 42:  # '*'
            return ABORT_ALL
        if p_ch == 92:  # '\\': the next pattern byte literally (a trailing '\\' matches nothing)
            i += 1
            if i >= plen or t_ch != p[i]:
                return NOMATCH
        elif p_ch == 63:  # '?'
            if pathname and t_ch == 47:
                return NOMATCH
        elif p_ch == 42:  # '*'
            i += 1
            if i < plen and p[i] == 42:
                prev = i - 2
                while i < plen and p[i] == 42:
                    i += 1
                if not pathname:
                    match_slash = True
                elif (prev < 0 or p[prev] == 47) and (
                    i >= plen or p[i] == 47 or (p[i] == 92 and i + 1 < plen and p[i + 1] == 47)
                ):
                    # "**/" may match nothing: foo/**/bar matches foo/bar too
                    if i < plen and p[i] == 47 and _dowild(p, i + 1, text, j, pathname) == MATCH:
                        return MATCH
                    match_slash = True
                else:
                    match_slash = False
            else:
                match_slash = not pathname
            if i >= plen:
                # trailing "**" matches everything, a trailing "*" only up to the next slash
                return NOMATCH if not match_slash and text.find(b"/", j) >= 0 else MATCH
            if not match_slash and p[i] == 47:
                slash = text.find(b"/", j)
                if slash < 0:
                    return NOMATCH
                j = slash  # the slash is consumed below, with the pattern's
                i += 1
                j += 1
                continue
            while True:
                if j >= tlen:
                    break
                if p[i] not in _GLOB_SPECIAL:
                    # skip ahead to the literal that follows the star
                    want = p[i]
                    while j < tlen and (match_slash or text[j] != 47) and text[j] != want:
                        j += 1
                    if j >= tlen or text[j] != want:
                        return NOMATCH
                t_ch = text[j]
                matched = _dowild(p, i, text, j, pathname)
                if matched != NOMATCH:
                    if not match_slash or matched != ABORT_TO_STARSTAR:
                        return matched
                elif not match_slash and t_ch == 47:
                    return ABORT_TO_STARSTAR
                j += 1
            return ABORT_ALL
        elif p_ch == 91:  # '['
            i += 1
            p_ch = p[i] if i < plen else 0
            if p_ch == 94:  # '^' is '!'
                p_ch = 33
            negated = p_ch == 33
            if negated:
                i += 1
                p_ch = p[i] if i < plen else 0
            prev_ch, matched = 0, False
            while True:
                if not p_ch:
                    return ABORT_ALL
                if p_ch == 92:
                    i += 1
                    p_ch = p[i] if i < plen else 0
                    if not p_ch:
                        return ABORT_ALL
                    if t_ch == p_ch:
                        matched = True
                elif p_ch == 45 and prev_ch and i + 1 < plen and p[i + 1] != 93:  # a range
                    i += 1
                    p_ch = p[i]
                    if p_ch == 92:
                        i += 1
                        p_ch = p[i] if i < plen else 0
                        if not p_ch:
                            return ABORT_ALL
                    if prev_ch <= t_ch <= p_ch:
                        matched = True
                    p_ch = 0  # so prev_ch becomes 0
                elif p_ch == 91 and i + 1 < plen and p[i + 1] == 58:  # "[:class:]"
                    s = i = i + 2
                    while i < plen and p[i] != 93:
                        i += 1
                    if i >= plen:
                        return ABORT_ALL
                    n = i - s - 1
                    if n < 0 or p[i - 1] != 58:
                        # no ":]": a plain '[' in the set
                        i = s - 2
                        p_ch = 91
                        if t_ch == p_ch:
                            matched = True
                        prev_ch = p_ch
                        i += 1
                        p_ch = p[i] if i < plen else 0
                        if p_ch == 93:
                            break
                        continue
                    members = _CLASSES.get(p[s : s + n])
                    if members is None:
                        return ABORT_ALL  # malformed [:class:]
                    if t_ch in members:
                        matched = True
                    p_ch = 0
                elif t_ch == p_ch:
                    matched = True
                prev_ch = p_ch
                i += 1
                p_ch = p[i] if i < plen else 0
                if p_ch == 93:  # ']'
                    break
            if matched == negated or (pathname and t_ch == 47):
                return NOMATCH
        elif t_ch != p_ch:
            return NOMATCH
        i += 1
        j += 1
    return NOMATCH if j < tlen else MATCH


def wildmatch(pattern: bytes, text: bytes, pathname: bool) -> bool:
    return _dowild(pattern, 0, text, 0, pathname) == MATCH


# --- .gitignore patterns ---------------------------------------------------------------------


class Pattern:
    __slots__ = ("anchored", "base", "literal", "mustbedir", "negative", "nodir", "suffix", "text")

    def __init__(self, line: bytes, base: bytes) -> None:
        self.negative = line.startswith(b"!")
        if self.negative:
            line = line[1:]
        self.mustbedir = line.endswith(b"/")
        if self.mustbedir:
            line = line[:-1]
        self.nodir = b"/" not in line
        self.text = line
        self.base = base  # the directory of the .gitignore, b"" or ending in b"/"
        # git's fast paths (match_basename, match_pathname): no glob character is a string compare,
        # and "*literal" against a basename is a suffix test
        self.anchored = line[1:] if line.startswith(b"/") else line
        self.literal = not any(c in _GLOB_SPECIAL for c in self.anchored)
        self.suffix = (
            line[1:] if line.startswith(b"*") and not any(c in _GLOB_SPECIAL for c in line[1:]) else None
        )

    def matches(self, path: bytes, basename: bytes, is_dir: bool) -> bool:
        if self.mustbedir and not is_dir:
            return False
        if self.nodir:
            if self.literal:
                return basename == self.text
            if self.suffix is not None:
                return basename.endswith(self.suffix)
            return wildmatch(self.text, basename, False)
        # match_pathname: the pattern is anchored at its .gitignore's directory
        base = self.base
        if base and not path.startswith(base):
            return False
        if self.literal:
            return path[len(base) :] == self.anchored
        return wildmatch(self.anchored, path[len(base) :], True)


def _trim_trailing_spaces(line: bytes) -> bytes:
    last_space, k = None, 0
    while k < len(line):
        c = line[k]
        if c == 32:
            if last_space is None:
                last_space = k
        elif c == 92:
            k += 1
            if k >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        k += 1
    return line if last_space is None else line[:last_space]


def parse(data: bytes, base: bytes) -> list[Pattern]:
    """A .gitignore's patterns in file order (add_patterns_from_buffer)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    patterns = []
    for line in data.split(b"\n")[: -1 if data.endswith(b"\n") else None]:
        if not line or line.startswith(b"#"):
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        line = _trim_trailing_spaces(line.split(b"\0", 1)[0])  # C stops at a NUL
        patterns.append(Pattern(line, base))
    return patterns


def excluded(lists: list[list[Pattern]], path: bytes, basename: bytes, is_dir: bool) -> bool:
    """`lists` from the highest precedence down (deepest .gitignore first, then info/exclude, then
    core.excludesFile); within a list the last matching pattern decides."""
    for patterns in lists:
        for pattern in reversed(patterns):
            if pattern.matches(path, basename, is_dir):
                return not pattern.negative
    return False


# --- nested repositories ---------------------------------------------------------------------


def _valid_headref(path: bytes) -> bool:
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return os.readlink(path).startswith(b"refs/")
        with open(path, "rb") as f:
            head = f.read(255).split(b"\0", 1)[0]
    except OSError:
        return False
    if head.startswith(b"ref:") and head[4:].lstrip(b" \t\n\r").startswith(b"refs/"):
        return True
    return re.fullmatch(rb"[0-9a-fA-F]{40}", head[:40]) is not None


def is_git_directory(path: bytes) -> bool:
    if not _valid_headref(path + b"/HEAD"):
        return False
    common = path
    try:
        os.lstat(path + b"/commondir")
        with open(path + b"/commondir", "rb") as f:
            data = f.read().rstrip(b"\r\n").split(b"\0", 1)[0]
        common = data if data.startswith(b"/") else path + b"/" + data
    except OSError:
        pass
    named = os.environ.get("GIT_OBJECT_DIRECTORY")
    objects = os.fsencode(named) if named else common + b"/objects"
    return os.access(objects, os.X_OK) and os.access(common + b"/refs", os.X_OK)


def is_nested_repo(path: bytes) -> bool:
    """Whether directory `path` (absolute) holds a repository of its own: a `.git` directory, or a
    `.git` file pointing at one (a submodule, a worktree). Such a directory is not snapshotted
    unless the snapshot already holds files in it."""
    dotgit = path + b"/.git"
    try:
        st = os.stat(dotgit)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return is_git_directory(dotgit)
    if st.st_size > 1 << 20:
        return False
    try:
        with open(dotgit, "rb") as f:
            data = f.read()
    except OSError:
        return True  # git counts an unreadable gitfile as a repository
    if len(data) != st.st_size:
        return True
    if not data.startswith(b"gitdir: "):
        return False
    data = data.rstrip(b"\r\n")
    if len(data) < 9:
        return False
    target = data[8:].split(b"\0", 1)[0]
    if not target.startswith(b"/"):
        target = path + b"/" + target
    return is_git_directory(target)


# --- names git will not index ----------------------------------------------------------------

_NTFS_DOTGIT = re.compile(rb"(?i)(\.git|git~1)[. ]*(:|\Z)")
_DOTGITMODULES = re.compile(rb"(?i)(\.gitmodules|gitmod~[0-9]+|gi7eba~[0-9]+)[. ]*(:|\Z)")


def indexable(name: bytes, is_link: bool) -> bool:
    """Whether git (core.protectNTFS, its default) accepts this path component in an index."""
    if name[0] not in b".gG" and b"\\" not in name:
        return True  # every name refused below starts so, or has a backslash
    if name.lower() == b".git":
        return False
    for part in name.split(b"\\"):  # protectNTFS checks after every backslash too
        if _NTFS_DOTGIT.match(part) or (is_link and _DOTGITMODULES.match(part)):
            return False
    return True
