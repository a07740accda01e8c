"""The scan: read every log under the PATHs, unchanged files from the per-file cache, grown ones
from where they stopped, the rest in full, on several processes when there is enough to read.

The per-file cache (`filecache`) keeps each log's `FileEntry`; an entry whose key (size, mtime,
inode) still holds is used without opening the log.
"""
from __future__ import annotations

from . import decoder  # noqa: F401  # (first: msgspec without typing_extensions, see decoder)

# isort: split

import importlib
import mmap
import os

from ..fleet.urls import filesystem
from ..fleet.workers import QUEUE_ITEMS, can_fork, deal, usable_cpus
from ..formats import registry as formats
from ..session import compressed
from ..session.cursor import Cursor, line_end, look, may_resume
from ..session.files import filled
from ..session.jsonl import marked_lines
from . import filecache
from .codex import PATTERN
from .copies import collapse_file
from .lines import json_object, line_number
from .opencode import scan_storage_file
from .outcome import Scan
from .records import DECODE_ENTRY, DECODE_PACKED_ITEM, DECODE_SCANNED, ENCODE, FileEntry
from .walk import CATTY, CLAUDE, CODEX, NOT_A_LOG, OPENCODE, OPENCODE_DB, PREFIRE, UNLISTED, key_stat, one_document, sniff, sniff_head, survey

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import IO, Any

    from .records import Record, Scanned
    from .walk import Survey

    Progress = Callable[[int, int], None]
    # path, kind, previous entry, strict, and (size, mtime, inode) as the survey took them (None: taken when read)
    Task = tuple[str, str | None, FileEntry | None, bool, tuple[int, int, int] | None]

BAD_SAMPLES_PER_FILE = 5
WRITE_BEHIND_FILES = 64  # logs read in full past which the per-file cache is written by a thread (when asked)
PARALLEL_MIN_BYTES = 8 << 20  # below this a worker pool costs more than it saves
ZST_INFLATION = 8  # a compressed rollout is weighed as this many times its size (zstd on JSON Lines: about 5-12x)


def _parser_module(kind: str) -> Any:
    """The parser of a KIND of log: catty-ctx's own, a prefire cache's, or the `usage` module the
    format registry names for an agent's format (looked up once per kind: a scan asks per file)."""
    module = _PARSERS.get(kind)
    if module is None:
        fmt = formats.FORMATS.get(kind)
        name = fmt.usage if fmt is not None and fmt.usage else PREFIRE if kind == PREFIRE else CATTY
        module = _PARSERS[kind] = importlib.import_module(f"{__package__}.{name}")
    return module


_PARSERS: dict[str, Any] = {}


def parser(kind: str) -> Callable[..., Any]:
    return _parser_module(kind).parse


def _running_session(state: Any) -> str | None:
    """`catty.running_session` (the catty parser is imported for a catty log only: a tree of other agents' logs needs none of it)."""
    return _parser_module(CATTY).running_session(state)


def _unmarked_bad_lines(mm: Any, start: int, end: int, kind: str) -> list[tuple[int, str]]:
    """--strict: the lines of [start, end) that hold no usage marker (so the parser never
    decoded them) and are not JSON objects."""
    if kind == CODEX:
        def marked(line: bytes) -> bool:
            return PATTERN.search(line) is not None
    else:
        mark = _parser_module(kind).MARK

        def marked(line: bytes) -> bool:
            return mark in line

    bad: list[tuple[int, str]] = []
    for pos, line in marked_lines(mm, start, end, b""):  # (every line holds the empty marker)
        if not marked(line):
            json_object(line, pos, bad)
    return bad


def scan_file(task: Task) -> Scanned:
    """Parse one log (or only what was appended since the previous entry); (path, entry, bytes parsed, error).

    A file that shrank, was replaced, or changed before where the previous entry stopped (the
    hashes of its first and last bytes differ) is parsed again from the start. With strict,
    every line of a Claude Code or Codex log is checked, not only those holding a usage marker
    (a catty log is checked whole before the scan: `validate_catty_logs`).
    """
    path, kind, prev, strict, key = task
    if kind == UNLISTED:  # a folder the walk could not list: named as a log that could not be read
        try:
            os.listdir(path)
        except OSError as exc:
            return path, None, 0, f"cannot read ({exc.strerror or exc})"
        return path, None, 0, "cannot read (not listed)"
    if kind == OPENCODE and path.endswith(".json") and "://" not in path:
        return scan_storage_file(path, key, BAD_SAMPLES_PER_FILE)
    if path.endswith(_ZST) or kind == PREFIRE or _is_document(path):
        prev = None  # (its offsets count decompressed bytes: a changed compressed log is read whole; a prefire cache, a JSON document is one document)
    try:
        f = open(path, "rb") if "://" not in path else _fetched(path)
    except OSError as exc:
        return path, None, 0, f"cannot read ({exc.strerror or exc})"
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        entry = FileEntry(size, st.st_mtime_ns, st.st_ino, kind)
        if path.endswith(OPENCODE_DB):  # (read through SQLite, its write-ahead log with it: the key counts both)
            entry.size, entry.mtime = key_stat(path, st)
            entry.kind = sniff(f.read(16))
            if entry.kind == OPENCODE:
                unreadable: list[tuple[int, str]] = []
                entry.state = parser(OPENCODE)(b"", 0, 0, path, None, entry.recs, unreadable)
                entry.read = len(entry.recs)
                entry.bad, entry.samples = len(unreadable), [(1, why) for _, why in unreadable]  # (named like a bad line)
                if entry.recs:
                    entry.recs, entry.aliases = collapse_file(entry.recs)
            return path, entry, entry.size, None
        if size == 0:
            return path, entry, 0, None
        try:
            mm = _contents(f, size, path)
        except (OSError, ValueError) as exc:  # shrank since fstat, cannot be mapped, or not decompressed
            return path, None, 0, f"cannot read ({exc})"
        size = len(mm)
        try:
            resumable = prev is not None and prev.kind is not None and not one_document(mm, path, prev.kind)
            reading = look(_cursor(prev) if prev is not None and resumable else None, st, lambda at, n: mm[at : at + n])
            start = reading.start
            if start and prev is not None:
                entry.kind, entry.state, entry.recs, entry.read = prev.kind, prev.state, prev.recs, prev.read
                entry.aliases = prev.aliases
                entry.bad, entry.samples = prev.bad, prev.samples
            if entry.kind is None:
                entry.kind = sniff(sniff_head(mm, size), lambda: mm[0:size])
            document = one_document(mm, path, entry.kind)
            end = line_end(mm, start, size)
            if document:
                end = size  # (one JSON document, whole: no line of it is torn)
            elif end < size and _whole_record(mm[end:size]):
                end = size  # a live session's last record, its newline not written yet: read, not torn
            bad: list[tuple[int, str]] = []
            if entry.kind == NOT_A_LOG:
                pass
            elif end > start:
                recs = list(entry.recs)
                entry.state = parser(entry.kind)(mm, start, end, path, entry.state, recs, bad)
                entry.read += len(recs) - len(entry.recs)
                if len(recs) > len(entry.recs):
                    entry.recs, entry.aliases = collapse_file(recs, entry.aliases)
                if strict and kind != CATTY and kind != PREFIRE and not document:
                    # (a log named as catty's was read whole before the scan; a prefire cache, a JSON document is one document)
                    bad = sorted(bad + _unmarked_bad_lines(mm, start, end, entry.kind))
            entry.bad += len(bad)
            room = BAD_SAMPLES_PER_FILE - len(entry.samples)
            if room > 0 and bad:
                entry.samples = entry.samples + [(line_number(mm, off), why) for off, why in bad[:room]]
            if end < size:
                entry.torn = line_number(mm, end)
            entry.dev, entry.ino, entry.off, entry.head, entry.tail = reading.advance(end, lambda at, n: mm[at : at + n]).fields()
            return path, entry, size - start, None
        finally:
            if type(mm) is not bytes:
                mm.close()


def _cursor(entry: FileEntry) -> Cursor:
    """The file cursor an entry keeps in its fields."""
    return Cursor(entry.dev, entry.ino, entry.off, entry.head, entry.tail)


def _whole_record(tail: bytes) -> bool:
    """Whether a last line without its newline is a complete JSON object (a torn write never is)."""
    import orjson

    try:
        return isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        return False


_ZST = ".zst"
_SMALL = 1 << 16  # a log smaller than this is read into memory (one read, not a map: opencode's many small files)


def _is_document(path: str) -> bool:
    """Whether PATH holds one JSON document (a Gemini CLI chat, an opencode file), read whole whenever it changed."""
    return path.endswith(".json")


def _contents(f: Any, size: int, path: str) -> Any:
    """What the parsers search in the open log F: a memory map of it or, for a compressed
    rollout (`.zst`), the whole of it decompressed through the zstd program into bytes (which
    find and slice as the map does; read from F, the file whose key was taken). A
    `compressed.Unreadable` (a ValueError) says why not."""
    if size < _SMALL and not path.endswith(_ZST):
        data = f.read()
        if len(data) != size:
            raise ValueError("changed while read")
        return data
    if not path.endswith(_ZST):
        return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    return compressed.decompress(f)


def scan_file_packed(task: Task) -> bytes:
    """`scan_file` as MessagePack: a cluster worker's answer (made and read in C, unlike pickled records)."""
    return ENCODE(scan_file(task))


def _fetched(url: str) -> Any:
    """A local temporary copy of the log at URL, open for reading (the parsers search a memory map)."""
    import shutil
    import tempfile

    fs, path = filesystem(url)

    def fetch(copy: IO[bytes]) -> None:
        with fs.open(path, "rb") as src:
            shutil.copyfileobj(src, copy, 1 << 20)

    return filled(tempfile.TemporaryFile(prefix="catty-ctx-url-"), fetch)


def validate_catty_logs(found: Survey) -> None:
    """--strict: read every line of each catty log as the store does, not only its usage
    lines, so a corrupt session is a DataError naming file:line even where the ledger would
    not have looked (costs a full parse; the default scan stays a byte search)."""
    from ..fleet.urlcopy import on_copy
    from ..session.store import Session

    def read_all(path: str) -> None:
        for _ in Session.open(path).events(warn=None):
            pass

    for _, files in found:
        for path, kind, *_ in files:
            if kind == CATTY and "://" in path:
                on_copy(read_all, path)  # (a copy of the log alone: named updates.jsonl, it opens as the store opens one)
            elif kind == CATTY:
                read_all(path)


def scan(paths: Sequence[str | os.PathLike[str]] | Survey, *, jobs: int | None = None, use_cache: bool = True, progress: Progress | None = None,
         max_samples: int = BAD_SAMPLES_PER_FILE, strict: bool = False, modified_since: float | None = None, engine: Any = None,
         write_behind: bool = False, ran: tuple[list[Scanned], dict[str, bytes]] | None = None) -> Scan:
    """Read every log under PATHS: unchanged files from the cache, grown ones from where they stopped.

    STRICT checks every line of every log (the per-file cache, which knows only the marked
    lines, is then neither read nor written). A log last modified before MODIFIED_SINCE (epoch
    seconds) cannot hold a newer call: it is neither read nor parsed and adds nothing (its
    cache entry is kept for later questions). ENGINE (`cluster.Engine`) parses the files on a
    Dask cluster instead of here; the caches stay with this process. WRITE_BEHIND returns while
    a large per-file cache is still being written by a thread: the caller must `settle()` the Scan.
    RAN: what the workers of a cold walk already read of every log (`fanout`), with their entries packed.
    """
    use_cache = use_cache and not strict
    since_ns = int(modified_since * 1e9) if modified_since is not None else None
    found: Survey = paths if paths and isinstance(paths[0], tuple) else survey(paths)  # type: ignore[assignment, arg-type]  # a Survey is told by its first entry
    result = Scan()
    # per PATH: arg, files, old entries (undecoded), new entries (undecoded or FileEntry), their generation
    plans: list[tuple[str, list[str], dict[str, Any], dict[str, Any], int]] = []
    tasks: list[Task] = []
    sizes: dict[str, int] = {}
    kept: dict[str, FileEntry] = {}  # unchanged files' entries, decoded
    skipped: dict[str, int] = {}
    for arg, listing in found:
        if ran is not None:  # (every log read already, none cached, those last written before the day passed over: see fanout)
            read = [row[0] for row in listing if since_ns is None or row[3] >= since_ns]
            if len(read) < len(listing):
                skipped[arg] = len(listing) - len(read)
            plans.append((arg, read, {}, {}, 0))
            continue
        gen, old = filecache.load_cache(arg) if use_cache else (0, {})
        new: dict[str, Any] = {}
        files: list[str] = []
        for path, kind, size, mtime, ino in listing:
            raw = old.get(path)
            if since_ns is not None and mtime < since_ns:
                if raw is not None:
                    new[path] = raw
                skipped[arg] = skipped.get(arg, 0) + 1
                continue
            files.append(path)
            prev = DECODE_ENTRY(raw) if raw is not None else None
            result.from_cache += prev is not None
            if prev is not None and prev.size == size and prev.mtime == mtime and prev.ino == ino:
                new[path] = raw
                kept[path] = prev
            else:
                tasks.append((path, kind, prev, strict, (size, mtime, ino)))
                if path.endswith(_ZST):  # read whole, and decompressed: its work is that of a larger log
                    sizes[path] = size * ZST_INFLATION
                else:
                    sizes[path] = size - (prev.off if prev is not None and may_resume(prev.ino, prev.off, ino, size) else 0)
        plans.append((arg, files, old, new, gen))
    result.files = sum(len(files) for _arg, files in found)

    done: dict[str, FileEntry] = {}
    packed: dict[str, bytes] = {}  # the workers' entries as MessagePack, stored in the cache as they came
    total = sum(sizes.values())
    results: Iterable[Scanned]
    if ran is not None:
        results, packed = ran
        result.handed = ran
    elif engine is None:
        results = _run(tasks, sizes, jobs, total, progress, packed)
    else:
        results = _run_on(engine, tasks, sizes, total, progress)
    errored: set[str] = set()
    behind: list[tuple[int, str, int, dict[str, Any]]] = []  # the caches written by a thread (`write_behind`)
    for path, entry, nbytes, error in results:
        if error is not None:
            compressed.refuse_bomb(error, path)  # a decompression bomb is refused, not skipped (docs/reliability.md)
            errored.add(path)
            result.bad_lines += 1
            if len(result.bad_samples) < max_samples:
                result.bad_samples.append(f"{path}: {error}")
            continue
        assert entry is not None
        done[path] = entry
        result.files_parsed += 1
        result.bytes_parsed += nbytes

    for arg, files, old, new, gen in plans:
        new.update((p, packed.get(p) or done[p]) for p in files if p in done)
        logs = skipped.get(arg, 0)
        for path in files:
            entry = done.get(path) or kept.get(path)
            if entry is None:
                logs += path in errored  # (a log it could not read, named as a bad line)
                continue
            if entry.kind == NOT_A_LOG:
                result.not_logs.append(path)
                continue
            logs += 1
            result.records.extend(entry.recs)
            if entry.kind == CATTY and (session := _running_session(entry.state)) is not None:
                result.running.append(session)
            result.calls_read += entry.read
            result.bad_lines += entry.bad + (1 if entry.torn else 0)
            for line, why in entry.samples:
                if len(result.bad_samples) < max_samples:
                    result.bad_samples.append(f"{path}:{line}: {why}")
            if entry.torn and len(result.bad_samples) < max_samples:
                result.bad_samples.append(f"{path}:{entry.torn}: torn final line (no newline)")
        if use_cache and (new.keys() != old.keys() or any(p in done for p in files)):  # (old entries of skipped files kept)
            if write_behind and len(done) > WRITE_BEHIND_FILES:
                gen = filecache.new_generation()
                behind.append((len(result.generations), arg, gen, new))
            else:
                gen, warning = filecache.save_cache(arg, new)
                if warning:
                    result.warnings.append(warning)
        result.generations.append(gen if use_cache else 0)
        result.logs.append(logs)
    if behind:
        result.writing.append(filecache.Writing(behind))
    return result


class Growth:
    """What `grown` read: the calls appended to the logs since the per-file caches were written."""

    def __init__(self) -> None:
        self.records: list[Record] = []  # the new calls, each log's own copies collapsed
        self.calls_read = 0  # usage records seen in the appended bytes, copies included
        self.files = 0
        self.files_parsed = 0
        self.bytes_parsed = 0
        self.generations: list[int] = []
        self.warnings: list[str] = []


GROWN_MAX_BYTES = PARALLEL_MIN_BYTES  # more to read than this goes to the full scan, on every CPU


def grown(found: Survey, generations: Sequence[int], before: Survey) -> Growth | None:
    """The calls appended since the per-file caches of GENERATIONS (one per PATH) were written
    for the logs BEFORE (a survey), when every log only grew or is new since then; the grown
    entries are written to the caches' delta files.

    None when anything else happened (a cache of another generation, a log gone, replaced, shrunk
    or changed before where it was read, a new bad or torn line, more than GROWN_MAX_BYTES to
    read): then the caller scans in full. Only the grown logs' entries are decoded.
    """
    if len(found) != len(generations) or len(found) != len(before):
        return None

    out = Growth()
    plans: list[tuple[str, int, int, dict[str, Any], dict[str, Any], list[Task]]] = []
    size_left = GROWN_MAX_BYTES
    for (arg, listing), want, (was_arg, was) in zip(found, generations, before):
        if arg != was_arg or len(listing) < len(was):
            return None
        known = {path: (size, mtime, ino) for path, _kind, size, mtime, ino in was}
        tasks: list[Task] = []
        sizes: dict[str, int] = {}
        seen = 0
        for path, kind, size, mtime, ino in listing:
            k = known.get(path)
            if k is None:
                tasks.append((path, kind, None, False, (size, mtime, ino)))
                size_left -= size
                continue
            seen += 1
            if k == (size, mtime, ino):
                continue
            if not may_resume(k[2], k[0], ino, size) or path.endswith((_ZST, OPENCODE_DB)) or _is_document(path):
                # (a compressed log, a document, a database are never resumed)
                return None
            tasks.append((path, kind, None, False, (size, mtime, ino)))  # (its entry is taken from the cache below)
            sizes[path] = size
        if seen != len(known) or size_left < 0:
            return None  # a log gone, or too much to read here
        if tasks:
            cached = filecache.read_entries(arg, {t[0] for t in tasks})
            if cached is None or cached[1] != want:
                return None
            base, gen, old, delta = cached
            for i, (path, kind, _, _, key) in enumerate(tasks):
                if path not in known:
                    continue  # (a new log is read whole: none of its calls were folded)
                raw = old.get(path)
                if raw is None:
                    return None  # (a cache without an entry for a log it was made with)
                prev = DECODE_ENTRY(raw)
                tasks[i] = (path, kind, prev, False, key)
                size_left -= sizes[path] - prev.off
            if size_left < 0:
                return None
        else:
            base, gen, old, delta = 0, want, {}, {}
        plans.append((arg, base, gen, old, delta, tasks))
        out.files += len(listing)
    for arg, base, gen, _old, delta, tasks in plans:
        changed = dict(delta)
        for task in tasks:
            path, entry, nbytes, error = scan_file(task)
            earlier = task[2]
            if error is not None or entry is None:
                return None
            before_recs = earlier.recs if earlier is not None else []
            resumed = earlier is None or (entry.size - nbytes == earlier.off and all(a is b for a, b in zip(entry.recs, before_recs)))
            if not resumed or entry.bad != (earlier.bad if earlier else 0) or entry.torn or (earlier is not None and earlier.torn):
                return None
            if entry.kind == CATTY and (_running_session(entry.state) or (earlier is not None and _running_session(earlier.state))):
                return None  # (a subagent started or ended: the session's bill changes as a whole)
            out.records.extend(entry.recs[len(before_recs):])
            out.calls_read += entry.read - (earlier.read if earlier is not None else 0)
            out.files_parsed += 1
            out.bytes_parsed += nbytes
            changed[path] = entry
        if tasks:
            gen, warning = filecache.save_delta(arg, base, changed)
            if warning:
                out.warnings.append(warning)
        out.generations.append(gen)
    return out


def _run_on(engine: Any, tasks: list[Task], sizes: dict[str, int], total: int, progress: Progress | None) -> Iterable[Scanned]:
    """scan_file over TASKS as tasks of ENGINE's cluster, largest files first (they bound the run)."""
    if not tasks:
        return

    order = sorted(tasks, key=lambda t: -sizes.get(t[0], 0))
    nbytes = 0
    for task, result in zip(order, engine.map(scan_file_packed, order)):
        if isinstance(result, Exception):  # (scan_file reports bad input in its result; this is not reached)
            raise result
        yield DECODE_SCANNED(result)
        if progress is not None:
            nbytes += sizes.get(task[0], 0)
            progress(nbytes, total)


def _run(tasks: list[Task], sizes: dict[str, int], jobs: int | None, total: int, progress: Progress | None,
         packed: dict[str, bytes] | None = None) -> Iterable[Scanned]:
    """scan_file over TASKS, in JOBS processes when there is enough to read (see `workers.deal`).

    The files go to the pool largest first, in at most QUEUE_ITEMS work items; each worker
    also collapses its files' own copies, and hands back each entry as MessagePack, which is
    kept in PACKED (path → bytes) for the per-file cache.
    """
    if not tasks:
        return  # (nothing to read: msgspec and the parsers are not even imported)

    jobs = min(jobs or usable_cpus(), len(tasks))
    if jobs <= 1 or total < PARALLEL_MIN_BYTES or not can_fork():
        jobs = 1
        items = [[t] for t in tasks]
    else:
        for kind in {t[1] or CLAUDE for t in tasks}:  # (untold kinds are mostly Claude Code's)
            parser(kind)  # imported once here, not again in every forked worker
        order = sorted(tasks, key=lambda t: -sizes.get(t[0], 0))
        step = -(-len(order) // QUEUE_ITEMS)  # files per work item
        items = [order[i : i + step] for i in range(0, len(order), step)]

    def dump(item: tuple[int, list[Scanned]]) -> bytes:
        n, results = item
        return ENCODE((n, [(path, ENCODE(entry) if entry is not None else None, nbytes, error) for path, entry, nbytes, error in results]))

    nbytes = 0
    for n, results, here in deal(len(items), lambda n: [scan_file(task) for task in items[n]], jobs, dump, DECODE_PACKED_ITEM):
        if here:
            if jobs > 1 and packed is not None:  # (encoded now, while the workers parse, not after them for the cache)
                packed.update((path, ENCODE(entry)) for path, entry, _n, _e in results if entry is not None)
            yield from results
        else:
            for path, raw, size, error in results:
                if raw is not None and packed is not None:
                    packed[path] = raw
                yield path, DECODE_ENTRY(raw) if raw is not None else None, size, error
        if here and progress is not None:
            nbytes += sum(sizes.get(task[0], 0) for task in items[n])
            progress(min(total, nbytes * jobs), total)  # the children read about as much meanwhile
