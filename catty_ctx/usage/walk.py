"""Finding the logs: which files under a PATH are catty, Claude Code, Codex, Gemini CLI or opencode logs, and their keys.

The folder listings of a walk are remembered by folder mtime (`Listings`), so a walk over
unchanged folders is one stat per folder. Imports nothing heavy: a cached answer needs the walk.
"""
from __future__ import annotations

import os
import stat
import time

from ..fleet.urlname import is_url
from ..formats import grok
from ..formats import registry as formats
from ..session.layout import LOG_NAME, PREFIRE_NAME, REQUESTS_DIR, is_staging

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    Survey = list[tuple[str, list[tuple[str, str | None, int, int, int]]]]  # per PATH: (file, kind, size, mtime_ns, inode)

# The kinds of log (None until its content tells): the agents' formats of the registry that have a
# usage parser (`formats`: its `usage` module here), and catty-ctx's own.
CATTY = "catty"
CLAUDE, CODEX, GEMINI, OPENCODE, GROK = (formats.CLAUDE.name, formats.CODEX.name, formats.GEMINI.name, formats.OPENCODE.name,
                                         formats.GROK.name)
USAGE_FORMATS = tuple(f for f in formats.AGENTS if f.usage)
NOT_A_LOG = "none"  # a file whose content is no agent's log (named as a PATH: refused; met in a walk: passed over)
AGENTS = ", ".join(f.agent for f in USAGE_FORMATS) + " or catty-ctx"
# Not a log: a catty session's prefire cache, holding the usage events of calls no event records
# yet (see `prefire`), listed after its session's log when the session has a requests folder.
PREFIRE = "prefire"
# Not a log: a folder the walk could not list (no permission), kept in the survey so that the scan
# names it as it names a log it could not read, never passed over without a word.
UNLISTED = "unlisted"
_PENDING = os.path.join(REQUESTS_DIR, PREFIRE_NAME)
_CLAUDE_HOME_MARKS = ("settings.json", "history.jsonl", ".credentials.json", "CLAUDE.md", "todos", "statsig")
_CODEX_HOME_MARKS = ("config.toml", "auth.json", "history.jsonl", "version.json", "log")
_GROK_HOME_MARKS = (".metadata_version", "models_cache.json", "trusted_folders.toml")  # (config.toml is Codex's too)
_GEMINI_HOME_MARKS = ("settings.json", "oauth_creds.json", "google_accounts.json", "installation_id", "GEMINI.md", "user_id")
COMPRESSED = ".jsonl.zst"  # a rollout Codex compressed (a week untouched): read whole through zstd (`compressed`)
OPENCODE_DB = formats.OPENCODE.database or "opencode.db"
# opencode's storage files: messages and parts (its sessions' own files hold no usage)
_OPENCODE_PREFIXES = ("msg_", "prt_")


def named_kind(name: str, folder: str = "") -> str | None:
    """The kind of log a file's NAME (in FOLDER) tells, or None (its content tells)."""
    if name.startswith("rollout-"):
        return CODEX
    if name.endswith(".json"):
        return OPENCODE if name.startswith(_OPENCODE_PREFIXES) else GEMINI if name.startswith("session-") else None
    if name == OPENCODE_DB:
        return OPENCODE
    if name.startswith("session-") and folder.endswith("chats"):
        return GEMINI
    return None


def _listed(name: str) -> bool:
    """Whether a walk lists the file NAME: JSON Lines, compressed rollouts, Gemini chats, opencode's files."""
    if name.endswith(".jsonl"):
        return True
    if name.endswith(".json"):
        return name.startswith(("session-", *_OPENCODE_PREFIXES))
    return name == OPENCODE_DB or (name.endswith(COMPRESSED) and name.startswith("rollout-"))


def discover(path: str | os.PathLike[str], listings: Listings | None = None) -> list[tuple[str, str | None]]:
    """The log files under PATH with their kind (None: told from the content when read).

    PATH is a catty session (directory or log), a ROOT of them, a Claude Code config dir or
    its projects tree, a Codex home or its sessions tree, a Gemini CLI home (`~/.gemini`: its
    `tmp/<project>/chats/session-*`), opencode's data folder or its `storage` (message and part
    files, and `opencode.db`), a Grok Build home (`~/.grok`: its `sessions/`) or session folder,
    or one log file of any of these. Codex's compressed rollouts
    (`rollout-*.jsonl.zst`) are Codex logs wherever they lie.
    LISTINGS, when given, remembers each folder's listing (see `Listings`).
    """
    p = os.fspath(path)
    out, roots = start_of(p)
    if roots:
        memo = listings if listings is not None else Listings()
        for root in roots:
            walk_tree(root, memo, out)
    return out


def start_of(p: str) -> tuple[list[tuple[str, str | None]], list[str]]:
    """What `discover` finds under P before walking: the files P names itself, and the folders
    whose trees hold its other logs (none: the files are all)."""
    join = os.path.join
    if os.path.isfile(p):
        name = os.path.basename(p)
        if name == LOG_NAME:
            return ([(p, GROK)] if grok.log_is_grok(p) else _session(os.path.dirname(p))), []
        # A Claude Code session's file is read with its subagents' (`<session>/subagents/`), as its import is.
        subagents = join(p[: -len(".jsonl")], "subagents") if name.endswith(".jsonl") else ""
        return [(p, named_kind(name, os.path.dirname(p)))], [subagents] if subagents and os.path.isdir(subagents) else []
    if not os.path.isdir(p):
        from ..errors import UsageError  # (enum's import: not on the cached answer's path)

        raise UsageError(f"{p}: no such file or directory")
    if os.path.isfile(join(p, LOG_NAME)):
        return ([(join(p, LOG_NAME), GROK)] if grok.is_session_dir(p) else _session(p)), []
    if _is_grok_home(p):
        return [], [join(p, "sessions")]
    roots = [join(p, "projects")] if _is_home(p, "projects", _CLAUDE_HOME_MARKS, lambda n: n.startswith("-")) else []
    if _is_home(p, "sessions", _CODEX_HOME_MARKS, lambda n: len(n) == 4 and n.isdigit()):
        roots += [r for r in (join(p, "sessions"), join(p, "archived_sessions")) if os.path.isdir(r)]
    if _is_gemini_home(p):
        roots.append(join(p, "tmp"))
    out: list[tuple[str, str | None]] = []
    storage = join(p, "storage") if os.path.isdir(join(p, "storage", "message")) else p
    if os.path.isdir(join(storage, "message")) and (storage != p or os.path.isdir(join(p, "session"))):
        roots += [r for r in (join(storage, "message"), join(storage, "part")) if os.path.isdir(r)]  # (opencode's storage)
    if os.path.isfile(join(p, OPENCODE_DB)):
        out.append((join(p, OPENCODE_DB), OPENCODE))
        if not roots:
            return out, []  # (opencode's data folder: its database and storage, not its snapshots and logs)
    return out, roots or [p]


def walk_tree(root: str, memo: Listings, out: list[tuple[str, str | None]]) -> None:
    """Add the logs under ROOT to OUT: depth first, a folder's files before its folders, each in name order."""
    stack = [root]
    while stack:
        folder = stack.pop()
        listing = memo.get(folder)
        if listing is not None:
            stack.extend(reversed(folder_logs(folder, listing, out)))
        elif folder in memo.refused:
            out.append((folder, UNLISTED))


def folder_logs(folder: str, listing: tuple[list[str], list[str]], out: list[tuple[str, str | None]]) -> list[str]:
    """Add the logs of FOLDER, whose LISTING `Listings.get` gave, to OUT; its folders to walk, in name order."""
    subdirs, logs = listing
    prefix = folder if folder.endswith(os.sep) else folder + os.sep  # (join's checks, once per folder)
    if LOG_NAME in logs and grok.CHAT in logs:  # a Grok Build session (its log's content tells): its own files only
        if not grok.is_child(grok.summary(folder)):  # a subagent child: its parent's turns already count it
            out.append((prefix + LOG_NAME, None))
        return []
    if LOG_NAME in logs:  # a catty session: its own folders hold no sessions
        out.append((prefix + LOG_NAME, CATTY))
        if REQUESTS_DIR in subdirs:  # (told by the listing: no stat for a session without one)
            out.append((prefix + _PENDING, PREFIRE))
        return []
    out.extend((prefix + name, named_kind(name, folder)) for name in logs)
    return [prefix + d for d in subdirs]


def _session(folder: str) -> list[tuple[str, str | None]]:
    """A catty session named as a PATH: its log, and its prefire cache when it has a requests
    folder (`survey` drops a cache that is not there)."""
    out: list[tuple[str, str | None]] = [(os.path.join(folder, LOG_NAME), CATTY)]
    if os.path.isdir(os.path.join(folder, REQUESTS_DIR)):
        out.append((os.path.join(folder, _PENDING), PREFIRE))
    return out


class Listings:
    """Folder listings (sub-folders to walk, the names of logs: see `_listed`) remembered by the folder's mtime.

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
        self.refused: set[str] = set()  # folders that exist but could not be listed (see UNLISTED)

    def get(self, folder: str) -> tuple[list[str], list[str]] | None:
        old = self.known.get(folder)
        if old is None:
            return self._listed(folder)
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return None
        if old[0] == mtime and mtime < old[1] - self.RACY_NS:
            self.seen[folder] = old
            return old[2], old[3]
        return self._listed(folder)

    def _listed(self, folder: str) -> tuple[list[str], list[str]] | None:
        """FOLDER listed now: its mtime taken before its entries are read (a change in between leaves
        the older mtime with the newer entries, and the next walk lists it again). By its path, not
        through a descriptor: `scandir` of a descriptor duplicates and rewinds it, eleven system
        calls a folder instead of five, over the thousands of folders of an opencode tree."""
        subdirs: list[str] = []
        logs: list[str] = []
        try:
            mtime = os.stat(folder).st_mtime_ns
            listed_at = time.time_ns()
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
                    elif not is_dir and _listed(e.name):
                        logs.append(e.name)
        except PermissionError:
            self.refused.add(folder)
            return None
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


def key_stat(path: str, st: os.stat_result) -> tuple[int, int]:
    """(size, mtime) of an SQLite database as its readers see it: its write-ahead log included
    (new rows sit there until a checkpoint, the database file unchanged)."""
    try:
        wal = os.stat(path + "-wal")
    except OSError:
        return st.st_size, st.st_mtime_ns
    return st.st_size + wal.st_size, max(st.st_mtime_ns, wal.st_mtime_ns)


def _is_grok_home(p: str) -> bool:
    """Is P Grok Build's home (read only `sessions/`)? Yes when it has `sessions/` and one of grok's own files."""
    return os.path.isdir(os.path.join(p, "sessions")) and any(os.path.exists(os.path.join(p, m)) for m in _GROK_HOME_MARKS)


def _is_gemini_home(p: str) -> bool:
    """Is P Gemini CLI's home (read only `tmp/`)? Yes when it has `tmp/` and one of Gemini CLI's own files."""
    return os.path.isdir(os.path.join(p, "tmp")) and any(os.path.exists(os.path.join(p, m)) for m in _GEMINI_HOME_MARKS)


_CLAUDE_KEYS = (b'"sessionId"', b'"parentUuid"', b'"leafUuid"', b'"uuid"')
_SQLITE = b"SQLite format 3\x00"
SNIFF_LINES = 4  # a log whose first lines are all unreadable is no log (a text file, a README)


def sniff(head: bytes, whole: Callable[[], bytes] | None = None) -> str:
    """The kind of log that begins with HEAD (its first bytes), NOT_A_LOG when it is none.

    The first line that is a JSON object tells (of the first few: a torn or damaged first line
    leaves the next ones to tell); a file of one JSON document (WHOLE gives its bytes) is a Gemini
    CLI chat or an opencode storage file or export; an SQLite file is opencode's database.
    """
    if head.startswith(_SQLITE):
        return OPENCODE
    pos = 0
    decided = False  # (a line decoded: an object of no agent's, not damage)
    indented = False
    for _ in range(SNIFF_LINES):
        end = head.find(b"\n", pos)
        line = head[pos : end if end >= 0 else len(head)]
        pos = end + 1
        if line.strip() == b"{":
            indented = True
            break  # (no record of JSON Lines: a document written indented, which the whole of it tells)
        if line.strip():
            kind = _sniff_line(line)
            if kind is not None and kind != NOT_A_LOG:
                return kind
            decided = decided or kind == NOT_A_LOG
        if end < 0:
            break
    if whole is not None and head.lstrip()[:1] == b"{":
        data = whole()
        kind = _sniff_document(data)
        if kind != NOT_A_LOG:
            return kind
        start = bytes(data[:_SNIFFED])
        if indented and b'"messages"' in start and (b'"sessionId"' in start or b'"projectHash"' in start):
            return GEMINI  # (a Gemini CLI chat cut short: its reader names it not valid JSON)
    # No line decoded: JSON Lines whose first lines are damaged are read as Claude Code's (the
    # commonest, its bad lines then named); anything else (a text file) is no log.
    return CLAUDE if head.lstrip()[:1] == b"{" and not decided else NOT_A_LOG


_SNIFFED = 1 << 20  # the bytes `sniff` may look at


def sniff_head(mm: Any, size: int) -> bytes:
    """The first bytes of a log that `sniff` reads: its first lines (as many as it looks at, or
    the first MiB), not a copy of the whole MiB when they are short."""
    limit = min(size, _SNIFFED)
    end = 0
    for _ in range(SNIFF_LINES):
        nl = mm.find(b"\n", end, limit)
        if nl < 0:
            return mm[0:limit]
        end = nl + 1
    head = mm[0:end]
    return head if head.strip() else mm[0:limit]  # (blank lines only: it looks further for a '{')


def one_document(mm: Any, path: str, kind: str | None) -> bool:
    """Whether the log of KIND in MM is one JSON document: named `.json`, opencode's, or a Gemini
    CLI chat of the older form under another name (told by its content)."""
    if path.endswith(".json") or kind == OPENCODE:
        return True
    if kind != GEMINI:
        return False
    from .gemini import is_document

    return is_document(mm, path)


def _sniff_line(line: bytes) -> str | None:
    """The kind a JSON Lines file whose line is LINE is, NOT_A_LOG for an object of no agent's, None: not an object."""
    if grok.MARK in line and grok.is_update(_decoded(line)):
        return GROK
    if line.lstrip()[:1] == b"{" and b'"seq"' not in line and b'"payload"' not in line and b'"projectHash"' not in line \
            and any(k in line for k in _CLAUDE_KEYS):
        return CLAUDE  # (told without decoding the line; an array, Gemini CLI's logs.json say, is no Claude line)
    obj = _decoded(line)
    if type(obj) is not dict:
        return None
    if "kind" in obj and "v" in obj and "seq" in obj:
        return CATTY
    if "payload" in obj and obj.get("type") in ("session_meta", "response_item", "event_msg", "turn_context", "compacted"):
        return CODEX
    if "projectHash" in obj and "type" not in obj:
        return GEMINI
    kind = _document_kind(obj)
    if kind != NOT_A_LOG:
        return kind
    if "type" in obj or "message" in obj or any(k.strip(b'"').decode() in obj for k in _CLAUDE_KEYS):
        return CLAUDE
    return NOT_A_LOG


def _sniff_document(data: bytes) -> str:
    return _document_kind(_decoded(data))


def _decoded(data: bytes) -> Any:
    """DATA decoded as JSON; None when it is not JSON (which no sniffer takes for a log)."""
    from .lines import decoded_or_none

    return decoded_or_none(data)


def _document_kind(obj: Any) -> str:
    """The kind of a file holding the one JSON document OBJ: a Gemini CLI chat, an opencode export or storage file, or none."""
    if type(obj) is not dict:
        return NOT_A_LOG
    if type(obj.get("messages")) is list:
        if type(obj.get("info")) is dict:
            return OPENCODE  # `opencode export`
        if "sessionId" in obj or "projectHash" in obj:
            return GEMINI
    if ("messageID" in obj and "type" in obj) or ("role" in obj and "sessionID" in obj):
        return OPENCODE
    return NOT_A_LOG


def _url_kind(url: str) -> str | None:
    name = url.rsplit("/", 1)[-1]
    return CATTY if name == LOG_NAME else named_kind(name, url.rsplit("/", 2)[-2] if url.count("/") > 1 else "")


def homes(environ: Any = None) -> tuple[list[tuple[str, str]], list[str]]:
    """The agents' standard homes that exist, as (agent, folder), and every folder looked for.

    From the format registry (`formats.home_folders`): Claude Code's `CLAUDE_CONFIG_DIR` (a
    comma-separated list), else `~/.config/claude` and `~/.claude`; Codex's `CODEX_HOME`, else
    `~/.codex`; Gemini CLI's `~/.gemini`; opencode's `$XDG_DATA_HOME/opencode`; Grok Build's
    `GROK_HOME` and `~/.grok`.
    """
    env = os.environ if environ is None else environ
    user_home = env.get("HOME") or os.path.expanduser("~")
    found: list[tuple[str, str]] = []
    looked: list[str] = []
    for fmt in USAGE_FORMATS:
        for folder in formats.home_folders(fmt, env, user_home):
            folder = os.path.abspath(os.path.expanduser(folder))
            looked.append(folder)
            if os.path.isdir(folder) and all(folder != f for _a, f in found):
                found.append((fmt.name, folder))
    return found, looked


def survey(paths: Sequence[str | os.PathLike[str]], listings: Listings | None = None) -> Survey:
    """Every log under PATHS with its size, mtime and inode (a file named twice counts once),
    and each catty session's prefire cache when there is one (kind PREFIRE: the spend of a
    two-pass pass 1 that no event records yet; one stat, only for a session with a requests folder)."""
    out: Survey = []
    seen: set[str] = set()
    for raw in paths:
        if is_url(raw):
            from ..fleet.urls import url_logs

            out.append((str(raw), [(url, _url_kind(url), size, mtime, 0) for url, size, mtime in url_logs(str(raw)) if url not in seen]))
            seen.update(f[0] for f in out[-1][1])
            continue
        arg = os.path.abspath(os.fspath(raw))
        files = []
        for path, kind in discover(arg, listings):
            if path in seen:
                continue
            seen.add(path)
            row = survey_row(path, kind)
            if row is not None:
                files.append(row)
        out.append((arg, files))
    return out


def survey_row(path: str, kind: str | None) -> tuple[str, str | None, int, int, int] | None:
    """The survey's row of the log PATH of KIND: (path, kind, size, mtime_ns, inode); None when it
    is not to be read (gone since the walk, not a regular file, or a prefire cache that is not there)."""
    if kind == PREFIRE and not os.access(path, os.F_OK):
        return None  # (no pass 1 waiting, the usual case: told without raising an exception)
    if kind == UNLISTED:
        return path, kind, 0, 0, 0
    try:
        st = os.stat(path)
    except OSError:
        return None  # gone since the walk
    if not stat.S_ISREG(st.st_mode):
        return None  # a FIFO or device would block or never end
    if path.endswith(OPENCODE_DB):
        return (path, kind, *key_stat(path, st), st.st_ino)
    return path, kind, st.st_size, st.st_mtime_ns, st.st_ino
