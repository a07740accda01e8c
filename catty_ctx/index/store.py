"""The search index: which files of which sessions hold a string, answered by SQLite FTS5 (docs/search.md#the-index).

One database under the cache folder ($XDG_CACHE_HOME/catty-ctx/index/search.sqlite, or
CATTY_CTX_INDEX) holds, per ROOT indexed, its sessions as the ROOT walker found them and the
folders it walked (their mtimes: a new file changes its folder's), and per file its key (size,
mtime, inode) and its bytes as text in an FTS5 table with the trigram tokenizer, so that any
string of three characters or more is found as a substring (case folded), as the byte
prefilter of `search` finds it in the file. The index only says which files may hold a match:
`search` still reads those and matches as it does without it, so deleting the database changes
no match.

Brought up to date before each use: a file that only grew (the one cursor, `session.cursor`,
tells it: the same file, its first bytes and those before the old offset unchanged) has only
its new lines added as a row of their own (JSON Lines end each
write with a newline, and no needle holds one, so no match spans two rows); any other change
indexes the file again. A folder whose mtime moved means the ROOT is walked again. The FTS
table is contentless (the text is not stored twice); rows of files indexed again are dropped
from the `chunks` map and so from every answer.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CattyError
from ..formats.roots import NativeSource
from ..session.cursor import NEW, UNCHANGED, Cursor, line_end, look
from ..session.layout import LOG_NAME
from ..sources import root_sessions
from .texts import Texts, forget, keep, kept, read_texts, signed, texts_folder, texts_key

SCHEMA_VERSION = 4
MIN_NEEDLE = 3  # the trigram tokenizer finds strings of at least this many characters
_SCHEMA = (
    "create table if not exists meta (key text primary key, value text)",
    "create table if not exists roots (root text primary key, walked real)",
    "create table if not exists units (root text, n integer, kind text, format text, path text, sid text, primary key (root, n))",
    "create table if not exists dirs (root text, path text, mtime integer, primary key (root, path))",
    "create table if not exists files (path text primary key, root text, unit text, size integer, mtime integer, dev integer,"
    " ino integer, offset integer, head integer, tail integer, mtime_s real, ctime integer)",
    "create table if not exists chunks (id integer primary key, path text)",
    "create index if not exists chunks_path on chunks (path)",
    "create table if not exists texts (unit text primary key, root text, key blob, meta blob, name text, size integer, digest integer)",
    "create virtual table if not exists body using fts5 (text, content='', tokenize='trigram')",
)


def index_path() -> Path:
    """The index database: CATTY_CTX_INDEX, else $XDG_CACHE_HOME/catty-ctx/index/search.sqlite."""
    given = os.environ.get("CATTY_CTX_INDEX")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "catty-ctx" / "index" / "search.sqlite"


@dataclass
class Report:
    """What bringing the index up to date did."""

    walked: list[str] = field(default_factory=list)  # the ROOTs walked again
    files_read: list[str] = field(default_factory=list)  # files (re)indexed whole
    files_grown: list[str] = field(default_factory=list)  # files whose appended lines alone were read
    bytes_read: int = 0
    files: int = 0
    sessions_read: int = 0  # sessions whose texts were read whole and kept (`keep_all`)


def unit_files(unit: Any) -> list[Path]:
    """The files whose bytes hold a session's text: its log and segments, or the native file."""
    path = getattr(unit, "path", None)
    if path is not None:
        return [Path(path)]
    folder = Path(unit)
    out = [folder / LOG_NAME]
    segments = folder / "segments"
    if segments.is_dir():
        out += sorted(segments.glob("segment_*.md"))
    return out


def _text(data: bytes) -> str:
    # (a needle is valid UTF-8, and the decoder keeps every valid sequence: no match is lost)
    return data.decode("utf-8", "replace")


class Index:
    """The index database, open (created when missing)."""

    def __init__(self, path: Path | None = None, *, create: bool = True) -> None:
        self.path = path or index_path()
        if not create and not self.path.is_file():
            raise FileNotFoundError(str(self.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.execute("pragma synchronous=normal")  # (a cache: a crash loses at most the last update, read again next time)
        self.db.execute("pragma mmap_size=17179869184")  # (pages read in place, not copied through read(): a session's kept texts are MBs)
        version = self._meta("version")
        if version == str(SCHEMA_VERSION):
            return  # (a query writes nothing: no write-ahead log to fold back in when it closes)
        if version is not None:
            self.db.close()
            self.path.unlink()
            shutil.rmtree(texts_folder(self.path), ignore_errors=True)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.execute("pragma journal_mode=wal")
        for statement in _SCHEMA:
            self.db.execute(statement)
        self.db.execute("insert or replace into meta values ('version', ?)", (str(SCHEMA_VERSION),))

    def _meta(self, key: str) -> str | None:
        try:
            row = self.db.execute("select value from meta where key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return None
        return None if row is None else row[0]

    def close(self) -> None:
        self.db.close()

    def drop(self) -> None:
        """Delete the index: its database (and its write-ahead log) and the kept texts."""
        self.db.close()
        for suffix in ("", "-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        shutil.rmtree(texts_folder(self.path), ignore_errors=True)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ROOTs ------------------------------------------------------------------------------

    def roots(self) -> list[str]:
        return [r for (r,) in self.db.execute("select root from roots order by root")]

    def covering(self, root: str) -> str | None:
        """The indexed ROOT that is ROOT or holds it, or None."""
        target = os.path.abspath(root)
        for indexed in self.roots():
            if target == indexed or target.startswith(indexed.rstrip(os.sep) + os.sep):
                return indexed
        return None

    def units(self, root: str, pick: Callable[[str, str], bool] | None = None) -> list[Path | NativeSource]:
        """ROOT's sessions in walk order (those PICK takes, given each one's `str` and path)."""
        out: list[Path | NativeSource] = []
        for kind, fmt, path, sid in self.db.execute("select kind, format, path, sid from units where root = ? order by n", (root,)):
            if pick is None or pick(f"{path}#{sid}" if sid else path, path):
                out.append(Path(path) if kind == "catty" else NativeSource(fmt, Path(path), sid))
        return out

    def unit_paths(self, root: str) -> dict[str, list[str]]:
        """The indexed files of each session of ROOT (keyed by the session's path, as `str` names it)."""
        out: dict[str, list[str]] = {}
        for unit, path in self.db.execute("select unit, path from files where root = ?", (root,)):
            out.setdefault(unit, []).append(path)
        return out

    def update(self, roots: Iterable[str]) -> Report:
        """Bring ROOTS (added when new) up to date: walk a ROOT again when one of its folders
        changed, then index the files that changed (only the appended lines of one that grew)."""
        report = Report()
        for given in roots:
            root = os.path.abspath(given)
            if self._stale(root):
                self._walk(root)
                report.walked.append(root)
                for unit in self.units(root):
                    for f in unit_files(unit):
                        report.files += 1
                        self._refresh(root, str(unit), f, report)
                continue
            # nothing new under ROOT: a stat of each file it holds tells what changed
            for path, unit, *known in self.db.execute("select path, unit, size, mtime, ctime, ino from files where root = ?", (root,)).fetchall():
                report.files += 1
                try:
                    st = os.stat(path)
                    if [st.st_size, st.st_mtime_ns, st.st_ctime_ns, signed(st.st_ino)] == known:
                        continue  # (a file written, moved or replaced shows a new ctime or inode: the cursor tells what changed)
                except OSError:
                    pass
                self._refresh(root, unit, Path(path), report)
        return report

    def _stale(self, root: str) -> bool:
        if self.db.execute("select 1 from roots where root = ?", (root,)).fetchone() is None:
            return True
        for path, mtime in self.db.execute("select path, mtime from dirs where root = ?", (root,)).fetchall():
            try:
                if os.stat(path).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def _walk(self, root: str) -> None:
        units = root_sessions(root, allow_empty=True)
        dirs = []
        for dirpath, dirnames, _files in os.walk(root, followlinks=False):
            dirnames.sort()
            try:
                dirs.append((root, dirpath, os.stat(dirpath).st_mtime_ns))
            except OSError:
                continue
        rows = []
        for n, unit in enumerate(units):
            if isinstance(unit, NativeSource):
                rows.append((root, n, "native", unit.format, str(unit.path), unit.session_id))
            else:
                rows.append((root, n, "catty", "catty", str(unit), None))
        keep = {str(f) for unit in units for f in unit_files(unit)}
        with self.db:
            self.db.execute("begin")
            self.db.execute("delete from units where root = ?", (root,))
            self.db.execute("delete from dirs where root = ?", (root,))
            self.db.executemany("insert into units values (?, ?, ?, ?, ?, ?)", rows)
            self.db.executemany("insert into dirs values (?, ?, ?)", dirs)
            gone = [p for (p,) in self.db.execute("select path from files where root = ?", (root,)) if p not in keep]
            for p in gone:
                self._forget(p)
            sessions = {str(unit) for unit in units}
            forget(self.db, texts_folder(self.path),
                   [u for (u,) in self.db.execute("select unit from texts where root = ?", (root,)) if u not in sessions])
            self.db.execute("insert or replace into roots values (?, ?)", (root, time.time()))

    def _forget(self, path: str) -> None:
        self.db.execute("delete from files where path = ?", (path,))
        self.db.execute("delete from chunks where path = ?", (path,))

    def _refresh(self, root: str, unit: str, f: Path, report: Report) -> None:
        """Index what F holds that the index lacks: the lines appended since (the one cursor,
        session.cursor, tells a grown file from another), else the whole file again."""
        path = str(f)
        row = self.db.execute("select size, mtime, dev, ino, offset, head, tail, ctime from files where path = ?", (path,)).fetchone()
        try:
            st = os.stat(f)
            fh = open(f, "rb") if stat.S_ISREG(st.st_mode) else None
        except OSError:
            fh = None
        if fh is None:
            if row is not None:
                with self.db:
                    self.db.execute("begin")
                    self._forget(path)
            return
        with fh:

            def read(start: int, length: int) -> bytes:
                fh.seek(start)
                return fh.read(length)

            try:
                reading = look(None if row is None else Cursor(*(v & 0xFFFF_FFFF_FFFF_FFFF for v in row[2:7])), st, read)
                if row is not None and reading.verdict == UNCHANGED and (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (row[0], row[1], row[7]):
                    return
                data = read(reading.start, st.st_size - reading.start)
                # (to the end of the last complete line; a line still being written is indexed now and again, whole, next time)
                cursor = reading.advance(reading.start + line_end(data, 0, len(data)), read)
            except OSError:
                return
        with self.db:
            self.db.execute("begin")
            if reading.verdict == NEW:
                self.db.execute("delete from chunks where path = ?", (path,))
                report.files_read.append(path)
            elif data:
                report.files_grown.append(path)
            if data:
                cur = self.db.execute("insert into chunks (path) values (?)", (path,))
                self.db.execute("insert into body (rowid, text) values (?, ?)", (cur.lastrowid, _text(data)))
            self.db.execute("insert or replace into files values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (path, root, unit, st.st_size, st.st_mtime_ns, *(signed(v) for v in cursor.fields()), st.st_mtime, st.st_ctime_ns))
        report.bytes_read += len(data)

    # -- each session's texts (index/texts.py) -----------------------------------------------

    def kept_texts(self, unit: str, key: bytes) -> Texts | None:
        """UNIT's texts as kept, when they were kept under KEY (the files unchanged since)."""
        return kept(self.db, texts_folder(self.path), unit, key)

    def keep_texts(self, unit: str, key: bytes, texts: Texts) -> None:
        root = self.db.execute("select root from files where unit = ? limit 1", (unit,)).fetchone()
        keep(self.db, texts_folder(self.path), unit, None if root is None else root[0], key, texts)

    def texts(self, unit: Any, warn: Callable[[str], None] | None) -> Texts:
        """UNIT's texts: those kept when their key still holds (what reading it warned said again
        to WARN), else read whole (its errors raised) and kept."""
        return self._texts(unit, warn, texts_key(unit))

    def _texts(self, unit: Any, warn: Callable[[str], None] | None, key: bytes | None) -> Texts:
        if key is not None:
            kept = self.kept_texts(str(unit), key)
            if kept is not None:
                if warn is not None:
                    for message in kept.warnings:
                        warn(message)
                return kept
        texts = read_texts(unit, warn)
        if key is not None and texts.segments_error is None and texts_key(unit) == key:
            try:
                self.keep_texts(str(unit), key, texts)
            except (sqlite3.Error, OSError):
                pass  # (a cache that cannot be written, or is busy: read again next time)
        return texts

    def keep_all(self, roots: list[str]) -> int:
        """Read and keep the texts of every session of the indexed ROOTS whose kept texts are
        missing or stale; how many were read (one that fails is left to `search`, which says why)."""
        read = 0
        for root in roots:
            for unit in self.units(os.path.abspath(root)):
                key = texts_key(unit)
                if key is None or self.db.execute("select 1 from texts where unit = ? and key = ?", (str(unit), key)).fetchone():
                    continue
                try:
                    self._texts(unit, None, key)  # (the key just made: its files' windows not read again)
                except CattyError:
                    continue
                read += 1
        return read

    # -- queries ----------------------------------------------------------------------------

    def candidates(self, needles: list[str]) -> dict[str, float] | None:
        """The indexed files holding every one of NEEDLES (each a substring, case folded; each
        asked apart, as a file's rows may hold them apart), with a score (BM25 weighed by
        recency, higher first); None when no needle is long enough to ask."""
        usable = [n for n in needles if len(n) >= MIN_NEEDLE]
        if not usable:
            return None
        now = time.time()
        found: dict[str, float] | None = None
        for needle in usable:
            phrase = '"' + needle.replace('"', '""') + '"'
            scores: dict[str, float] = {}
            # (one pass over the FTS rows; rows of files indexed again since are in no chunk: dropped by the join)
            for path, mtime, rank in self.db.execute("select c.path, f.mtime_s, bm25(body) from body join chunks c on c.id = body.rowid"
                                                     " join files f on f.path = c.path where body match ?", (phrase,)):
                age_days = max(0.0, (now - (mtime or now)) / 86_400)
                scores[path] = max(scores.get(path, 0.0), -rank / (1.0 + age_days / 7.0))
            found = scores if found is None else {p: found[p] + v for p, v in scores.items() if p in found}
        return found


def ranked(units: list[Any], scores: dict[str, float], files: dict[str, list[str]]) -> Iterator[Any]:
    """UNITS best first by the best score of their FILES (stable: the walk's order among equals)."""
    keyed = [(max((scores.get(f, 0.0) for f in files.get(str(u), ())), default=0.0), i, u) for i, u in enumerate(units)]
    for _score, _i, unit in sorted(keyed, key=lambda k: (-k[0], k[1])):
        yield unit
