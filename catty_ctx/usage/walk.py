"""Finding the logs: which files under a PATH are catty, Claude Code or Codex logs, and their keys.

The folder listings of a walk are remembered by folder mtime (`Listings`), so a walk over
unchanged folders is one stat per folder. Imports nothing heavy: a cached answer needs the walk.
"""
from __future__ import annotations

import os
import stat
import time

from ..errors import UsageError
from ..layout import LOG_NAME, PREFIRE_NAME, REQUESTS_DIR, is_staging
from ..urls import is_url, url_logs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Sequence

    Survey = list[tuple[str, list[tuple[str, str | None, int, int, int]]]]  # per PATH: (file, kind, size, mtime_ns, inode)

CATTY, CLAUDE, CODEX = "catty", "claude", "codex"  # the kinds of log; None until a file's first line tells
# Not a log: a catty session's prefire cache, holding the usage events of calls no event records
# yet (see `prefire`), listed after its session's log when the session has a requests folder.
PREFIRE = "prefire"
_PENDING = os.path.join(REQUESTS_DIR, PREFIRE_NAME)
_CLAUDE_HOME_MARKS = ("settings.json", "history.jsonl", ".credentials.json", "CLAUDE.md", "todos", "statsig")
_CODEX_HOME_MARKS = ("config.toml", "auth.json", "history.jsonl", "version.json", "log")
COMPRESSED = ".jsonl.zst"  # a rollout Codex compressed (a week untouched): read whole through zstd (`compressed`)


def discover(path: str | os.PathLike[str], listings: Listings | None = None) -> list[tuple[str, str | None]]:
    """The log files under PATH with their kind (None: told from the first line when read).

    PATH is a catty session (directory or log), a ROOT of them, a Claude Code config dir or
    its projects tree, a Codex home or its sessions tree, or one log file of any of these.
    Codex's compressed rollouts (`rollout-*.jsonl.zst`) are Codex logs wherever they lie.
    LISTINGS, when given, remembers each folder's listing (see `Listings`).
    """
    p = os.fspath(path)
    join = os.path.join
    if os.path.isfile(p):
        name = os.path.basename(p)
        if name == LOG_NAME:
            return _session(os.path.dirname(p))
        return [(p, CODEX if name.endswith(COMPRESSED) and name.startswith("rollout-") else None)]
    if not os.path.isdir(p):
        raise UsageError(f"{p}: no such file or directory")
    if os.path.isfile(join(p, LOG_NAME)):
        return _session(p)
    roots = [join(p, "projects")] if _is_home(p, "projects", _CLAUDE_HOME_MARKS, lambda n: n.startswith("-")) else []
    if _is_home(p, "sessions", _CODEX_HOME_MARKS, lambda n: len(n) == 4 and n.isdigit()):
        roots += [r for r in (join(p, "sessions"), join(p, "archived_sessions")) if os.path.isdir(r)]
    out: list[tuple[str, str | None]] = []
    memo = listings if listings is not None else Listings()
    for root in roots or [p]:
        stack = [root]  # depth first, folders and files in name order
        while stack:
            folder = stack.pop()
            listing = memo.get(folder)
            if listing is None:
                continue
            subdirs, logs = listing
            prefix = folder if folder.endswith(os.sep) else folder + os.sep  # (join's checks, once per folder)
            if LOG_NAME in logs:  # a catty session: its own folders hold no sessions
                out.append((prefix + LOG_NAME, CATTY))
                if REQUESTS_DIR in subdirs:  # (told by the listing: no stat for a session without one)
                    out.append((prefix + _PENDING, PREFIRE))
                continue
            out.extend((prefix + name, CODEX if name.startswith("rollout-") else None) for name in logs)
            stack.extend(prefix + d for d in reversed(subdirs))
    return out


def _session(folder: str) -> list[tuple[str, str | None]]:
    """A catty session named as a PATH: its log, and its prefire cache when it has a requests
    folder (`survey` drops a cache that is not there)."""
    out: list[tuple[str, str | None]] = [(os.path.join(folder, LOG_NAME), CATTY)]
    if os.path.isdir(os.path.join(folder, REQUESTS_DIR)):
        out.append((os.path.join(folder, _PENDING), PREFIRE))
    return out


class Listings:
    """Folder listings (sub-folders to walk, *.jsonl and rollout-*.jsonl.zst names) remembered by the folder's mtime.

    A folder's mtime changes whenever an entry is added, removed or renamed in it, so a
    remembered listing whose folder has the same mtime is still true, and a walk over
    unchanged folders costs one stat each instead of reading them. As in git's index, a
    listing taken less than two seconds after the folder changed is not trusted (a second
    change within the clock's tick would leave the mtime as it was).
    """

    RACY_NS = 2_000_000_000

    def __init__(self, known: dict[str, tuple[int, int, list[str], list[str]]] | None = None) -> None:
        self.known = known if type(known) is dict else {}
        self.seen: dict[str, tuple[int, int, list[str], list[str]]] = {}  # what this walk used: what to keep

    def get(self, folder: str) -> tuple[list[str], list[str]] | None:
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return None
        old = self.known.get(folder)
        if old is not None and old[0] == mtime and mtime < old[1] - self.RACY_NS:
            self.seen[folder] = old
            return old[2], old[3]
        listed_at = time.time_ns()
        subdirs: list[str] = []
        logs: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    try:
                        is_dir = e.is_dir()
                        real_dir = is_dir and not e.is_symlink()  # a linked folder is not walked into
                    except OSError:
                        is_dir = real_dir = False
                    if real_dir:
                        if not is_staging(e.name):  # a killed fork's or import's leftovers
                            subdirs.append(e.name)
                    elif not is_dir and (e.name.endswith(".jsonl") or (e.name.endswith(COMPRESSED) and e.name.startswith("rollout-"))):
                        logs.append(e.name)
        except OSError:
            return None
        subdirs.sort()
        logs.sort()
        self.seen[folder] = (mtime, listed_at, subdirs, logs)
        return subdirs, logs


def _is_home(p: str, sub: str, marks: tuple[str, ...], child_ok: Callable[[str], bool]) -> bool:
    """Is P an agent's home (read only its SUB folder) rather than any folder that has one?

    Yes when P holds one of the agent's own files, or every entry of SUB looks like the
    agent's (Claude Code's project folders start with '-', Codex's session folders are years).
    """
    folder = os.path.join(p, sub)
    if not os.path.isdir(folder):
        return False
    if any(os.path.exists(os.path.join(p, m)) for m in marks):
        return True
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return bool(names) and all(child_ok(n) for n in names)


def sniff(first_line: bytes) -> str:
    """The kind of log whose first line is FIRST_LINE (any file not catty's or Codex's is Claude Code's)."""
    if b'"seq"' not in first_line and b'"payload"' not in first_line:
        return CLAUDE  # neither of the keys that tell the others: no need to decode the line
    # start-up: msgspec only to tell a catty or Codex first line apart
    import msgspec

    from .lines import UNDECODABLE

    try:
        obj = msgspec.json.decode(first_line)
    except UNDECODABLE:
        return CLAUDE
    if type(obj) is dict:
        if "kind" in obj and "v" in obj and "seq" in obj:
            return CATTY
        if "payload" in obj and obj.get("type") in ("session_meta", "response_item", "event_msg", "turn_context", "compacted"):
            return CODEX
    return CLAUDE


def _url_kind(url: str) -> str | None:
    name = url.rsplit("/", 1)[-1]
    return CATTY if name == LOG_NAME else CODEX if name.startswith("rollout-") else None


def survey(paths: Sequence[str | os.PathLike[str]], listings: Listings | None = None) -> Survey:
    """Every log under PATHS with its size, mtime and inode (a file named twice counts once),
    and each catty session's prefire cache when there is one (kind PREFIRE: the spend of a
    two-pass pass 1 that no event records yet; one stat, only for a session with a requests folder)."""
    out: Survey = []
    seen: set[str] = set()
    for raw in paths:
        if is_url(raw):
            out.append((str(raw), [(url, _url_kind(url), size, mtime, 0) for url, size, mtime in url_logs(str(raw)) if url not in seen]))
            seen.update(f[0] for f in out[-1][1])
            continue
        arg = os.path.abspath(os.fspath(raw))
        files = []
        for path, kind in discover(arg, listings):
            if path in seen:
                continue
            seen.add(path)
            if kind == PREFIRE and not os.access(path, os.F_OK):
                continue  # (no pass 1 waiting, the usual case: told without raising an exception)
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone since the walk
            if not stat.S_ISREG(st.st_mode):
                continue  # a FIFO or device would block or never end
            files.append((path, kind, st.st_size, st.st_mtime_ns, st.st_ino))
        out.append((arg, files))
    return out
