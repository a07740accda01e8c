"""Where an agent keeps its sessions: the native sessions under a ROOT, by the registry's layouts.

One walk (no link followed, a catty session's own folders and a writer's staging folder never
entered) finds every main session of every agent once: a file named as the format's sessions
are (`session_names`) whose first records show that format's marks, each storage tree
(`tree_marks`) as its session files, each database (`database`) as its session rows. Folders
that hold a session's member files (Claude Code's `<id>/subagents/`, workflow subagents under
it, `tool-results/`) and the older subagent files beside a transcript (`skip_names`) belong to
their main session, which imports them with it (docs/architecture.md#native-sessions). A Grok
Build session is a folder whose `updates.jsonl` is grok's (`formats.grok`); its subagent
children, folders of their own, belong to their parent.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from ..errors import CattyError
from ..session.layout import LOG_NAME, is_staging
from . import grok
from .registry import FORMATS


@dataclass(frozen=True)
class NativeSource:
    """One native session: its format, the file (or database) it lies in, and its id when the
    file holds several (a database)."""

    format: str
    path: Path
    session_id: str | None = None

    def __str__(self) -> str:
        return f"{self.path}#{self.session_id}" if self.session_id else str(self.path)

    def __fspath__(self) -> str:
        """The file it lies in: what a writer handed a ROOT's unit opens, to refuse it as another
        agent's (`ownership.require_ours`, exit 65 naming `import`) rather than fail on it."""
        return str(self.path)


_MEMBER_DIRS = frozenset(d for f in FORMATS.values() for d in f.member_dirs)
_SKIP = tuple(p for f in FORMATS.values() for p in f.skip_names)
_NAMED = tuple((f.name, p) for f in FORMATS.values() for p in f.session_names if not f.tree_marks)
_TREES = tuple(f for f in FORMATS.values() if f.tree_marks)
_DATABASES = {f.database: f for f in FORMATS.values() if f.database}
_COMPRESSED = ".zst"


def _candidates(name: str) -> tuple[str, ...]:
    """The formats whose session file names NAME matches."""
    if any(fnmatchcase(name, p) for p in _SKIP):
        return ()
    return tuple(fmt for fmt, pattern in _NAMED if fnmatchcase(name, pattern))


def file_format(path: Path) -> str | None:
    """The agent format of the session file at PATH (None: not one), from its first records."""
    from ..importers.detect import detect  # (the one import up: the importers sit above the registry)

    try:
        return detect(path)
    except (CattyError, OSError, ValueError):
        return None


def database_sessions(fmt: str, path: Path) -> list[NativeSource]:
    """A database's sessions, one per row of its `session` table (read-only)."""
    from .database import UNREADABLE, open_read_only

    try:
        con = open_read_only(path)
        try:
            ids = [row[0] for row in con.execute("SELECT id FROM session ORDER BY id")]
        finally:
            con.close()
    except UNREADABLE:
        return []
    return [NativeSource(fmt, path, str(i)) for i in ids]


def tree_sessions(fmt: str, storage: Path) -> list[NativeSource]:
    """A storage tree's sessions: each session file under its first marked folder."""
    session_dir = storage / FORMATS[fmt].tree_marks[0]
    names = FORMATS[fmt].session_names
    found = []
    for dirpath, dirnames, filenames in os.walk(session_dir, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            if any(fnmatchcase(name, p) for p in names):
                found.append(NativeSource(fmt, Path(dirpath) / name))
    return found


def _unreadable(path: Path) -> str | None:
    """Why PATH cannot be opened for reading (None: it can)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return exc.strerror or "cannot read"
    return None


def walk(root: str | os.PathLike[str], unreadable: Callable[[str, str], None] | None = None) -> Iterator[Path | NativeSource]:
    """Every session under ROOT in walk order (folders and files by name): a catty session's
    folder as a Path, a native session as a NativeSource. A folder that cannot be listed, or a
    file named as a session's that cannot be read, goes to UNREADABLE (its path, why)."""

    def unlisted(exc: OSError) -> None:
        if unreadable is not None:
            unreadable(str(exc.filename), exc.strerror or "cannot list")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not is_staging(d) and d not in _MEMBER_DIRS)
        if LOG_NAME in filenames:
            dirnames[:] = []
            if not grok.is_session_dir(dirpath):
                yield Path(dirpath)
            elif not grok.is_child(grok.summary(dirpath)):  # a subagent child is its parent's member
                yield NativeSource(grok.GROK, Path(dirpath) / LOG_NAME)
            continue
        names = set(dirnames)
        tree = next((f for f in _TREES if all(m in names for m in f.tree_marks)), None)
        if tree is not None:
            dirnames[:] = []
            yield from tree_sessions(tree.name, Path(dirpath))
            continue
        files = set(filenames)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            db = _DATABASES.get(name)
            if db is not None:
                if file_format(path) == db.name:
                    yield from database_sessions(db.name, path)
                continue
            expected = _candidates(name)
            if not expected:
                continue
            # A compressed rollout whose plain copy lies beside it (the agent is resuming it) is one session.
            if name.endswith(_COMPRESSED) and name[: -len(_COMPRESSED)] in files:
                continue
            if unreadable is not None and (why := _unreadable(path)) is not None:
                unreadable(str(path), why)
                continue
            fmt = file_format(path)
            if fmt in expected:
                yield NativeSource(fmt, path)
