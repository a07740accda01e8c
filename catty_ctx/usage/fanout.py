"""A cold run's walk, shared among the scan's workers: each walks the folders it is dealt and reads their logs.

With no cache, nothing is known of the logs before the walk, and the walk is long (a stat per
log and a listing per folder: thousands of each in an agent's home). So this process lists the
top of each tree (`PLAN_TREES` folders' worth), and the workers take the rest from the queue:
a folder to walk, or a run of the files found meanwhile, each log taken its key (`walk.survey_row`)
and read (`filescan.scan_file`) where it was found. The survey and the scan are put back
together in the walk's own order, so the answer, and every cache written from it, is what
`walk.survey` and `filescan.scan` make one after the other.
"""
from __future__ import annotations

from . import decoder  # noqa: F401  # (first: msgspec without typing_extensions, see decoder)

# isort: split

import os

import msgspec

from ..fleet.workers import QUEUE_ITEMS, can_fork, deal, usable_cpus
from . import filescan
from .opencode import survey_storage_file
from .records import DECODE_ENTRY, ENCODE, Packed
from .walk import CATTY, CLAUDE, OPENCODE, PREFIRE, UNLISTED, USAGE_FORMATS, Listings, folder_logs, start_of, survey_row, walk_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .filescan import Progress
    from .records import Scanned
    from .walk import Survey

    Row = tuple[str, str | None, int, int, int]
    Segment = tuple[int, str | None, list[tuple[str, str | None]]]  # (its place, a folder to walk or None, files)

PLAN_TREES = 64  # folders of a tree left to the workers before this process stops listing it
PLAN_LISTINGS = 512  # folders this process lists at most
FEW_FILES = 256  # a tree no larger than this, all listed here, goes the ordinary way (no worker)
RUN_FILES = 4  # files per segment of a folder's files
_UNREAD = -1  # the bytes read of a log last written before the day asked about (`--since`): it is passed over
_DB = filescan.OPENCODE_DB
_Seen = dict[str, tuple[int, int, list[str], list[str]]]
_DECODE = msgspec.msgpack.Decoder(tuple[int, tuple[list[tuple[int, list[tuple[str, str | None, int, int, int]], list[Packed]]], _Seen]]).decode


def survey_and_scan(paths: list[str], listings: Listings, jobs: int | None, progress: Progress | None = None,
                    since_ns: int | None = None, meanwhile: Callable[[], Any] | None = None,
                    ) -> tuple[Survey, tuple[list[Scanned], dict[str, bytes]]] | None:
    """`walk.survey(PATHS, LISTINGS)` and what `filescan.scan` reads of it, as (survey, (scanned, packed
    entries)), on JOBS processes; None when the tree is too small for workers to pay (or none can be had).
    A log last written before SINCE_NS (epoch nanoseconds) is surveyed, not read, as `filescan.scan` passes it over.
    MEANWHILE runs here while the workers parse (see `workers.deal`); not when None is returned."""
    jobs = jobs or usable_cpus()
    if jobs <= 1 or not can_fork():
        return None
    args = [os.path.abspath(os.fspath(p)) for p in paths]
    segments = _plan(args, listings)
    files = sum(len(s[2]) for _arg, segs in segments for s in segs)
    if not any(s[1] is not None for _arg, segs in segments for s in segs) and files <= FEW_FILES:
        return None
    units = [s for _arg, segs in segments for s in segs]
    weights = [_weight(s) for s in units]
    step = max(sum(weights) // min(QUEUE_ITEMS, 32 * jobs), 1)
    items: list[list[Segment]] = [[]]
    load = 0
    for s, w in zip(units, weights):
        if load >= step:
            items.append([])
            load = 0
        items[-1].append(s)
        load += w
    items.sort(key=lambda item: -sum(_weight(s) for s in item))  # (the heaviest first: they bound the run)
    # The parsers of the kinds the plan met (an untold kind is mostly Claude Code's) are imported once here, not
    # again in every forked worker; a kind met first by a worker is imported there (a tree of one agent's logs
    # loads one parser).
    parsed = {CATTY, PREFIRE, *(f.name for f in USAGE_FORMATS)}
    for kind in {CLAUDE, *(kind for s in units for _path, kind in s[2] if kind in parsed)}:
        filescan.parser(kind)
    known = listings.known

    def work(n: int) -> tuple[list[tuple[int, list[Row], list[Scanned]]], _Seen]:
        memo = Listings(known)
        out = []
        for place, folder, logs in items[n]:
            if folder is not None:
                logs = []
                walk_tree(folder, memo, logs)
            rows: list[Row] = []
            scanned: list[Scanned] = []
            for path, kind in logs:
                if kind == OPENCODE and path.endswith(".json"):  # (thousands of small files: one open each, no stat)
                    got = survey_storage_file(path, filescan.BAD_SAMPLES_PER_FILE, since_ns)
                    if got is not None:
                        rows.append((path, kind, *got[0]))
                        scanned.append(got[1] if got[1] is not None else (path, None, _UNREAD, None))
                    continue
                row = survey_row(path, kind)
                if row is not None:
                    rows.append(row)
                    if since_ns is not None and row[3] < since_ns:
                        scanned.append((path, None, _UNREAD, None))
                    else:
                        scanned.append(filescan.scan_file((path, kind, None, False, row[2:])))
            out.append((place, rows, scanned))
        return out, memo.seen

    def dump(item: tuple[int, tuple[list[tuple[int, list[Row], list[Scanned]]], _Seen]]) -> bytes:
        n, (done, seen) = item
        return ENCODE((n, ([(place, rows, [(p, ENCODE(e) if e is not None else None, b, err) for p, e, b, err in scanned])
                            for place, rows, scanned in done], seen)))

    placed: dict[int, tuple[list[Row], list[Scanned]]] = {}
    packed: dict[str, bytes] = {}
    for finished, (_n, (done, seen), here) in enumerate(deal(len(items), work, jobs, dump, _DECODE, meanwhile), 1):
        listings.seen.update(seen)
        for place, rows, scanned in done:
            if here:
                packed.update((path, ENCODE(entry)) for path, entry, _b, _e in scanned if entry is not None)
            else:
                for path, raw, _b, _e in scanned:
                    if raw is not None:
                        packed[path] = raw
                scanned = [(path, DECODE_ENTRY(raw) if raw is not None else None, nbytes, error) for path, raw, nbytes, error in scanned]
            placed[place] = rows, scanned
        if progress is not None:
            progress(finished, len(items))
    found: Survey = [(arg, [row for place, _folder, _logs in segs for row in placed[place][0]]) for arg, segs in segments]
    results = [one for _arg, segs in segments for place, _folder, _logs in segs for one in placed[place][1] if one[2] != _UNREAD]
    paths = [row[0] for _arg, rows in found for row in rows]
    if len(set(paths)) == len(paths):
        return found, (results, packed)
    # A log under two PATHs (one inside another) counts once, with the first, as in `walk.survey`.
    taken: set[str] = set()
    results = []
    for i, (arg, _rows) in enumerate(found):
        kept: list[Row] = []
        for place, _folder, _logs in segments[i][1]:
            for row, one in zip(*placed[place]):
                if row[0] not in taken:
                    taken.add(row[0])
                    kept.append(row)
                    if one[2] != _UNREAD:
                        results.append(one)
        found[i] = arg, kept
    return found, (results, packed)


def _plan(args: list[str], listings: Listings) -> list[tuple[str, list[Segment]]]:
    """Per PATH, its logs in the walk's order as segments: runs of files this process found, and
    folders left to walk. The top of the trees is listed breadth first until PLAN_TREES folders are
    left in a level (or PLAN_LISTINGS were listed), so that the workers have enough pieces to share.

    (Trees in the wild: Claude Code's `projects/<project>/<session>.jsonl` beside `<session>/subagents/`,
    Codex's `sessions/YYYY/MM/DD/`, Gemini CLI's `tmp/<project>/chats/`, opencode's
    `message/<session>/` and `part/<message>/`, thousands of them.)"""
    tops: list[tuple[str, list[tuple[str, str | None]], list[_Node]]] = []
    listed = 0
    for arg in args:
        out, roots = start_of(arg)
        nodes = [_Node(root) for root in roots]
        tops.append((arg, out, nodes))
        for top in nodes:  # (each tree on its own: one wide folder leaves the others' tops to list)
            level = [top]
            while level and len(level) < PLAN_TREES and listed + len(level) <= PLAN_LISTINGS:
                below: list[_Node] = []
                for node in level:  # (a whole level or none: the trees left to the workers are alike)
                    listing = listings.get(node.folder)
                    node.kids = [_Node(sub) for sub in folder_logs(node.folder, listing, node.logs)] if listing is not None else []
                    if listing is None and node.folder in listings.refused:
                        node.logs.append((node.folder, UNLISTED))
                    below.extend(node.kids)
                listed += len(level)
                level = below
    place = 0
    plan: list[tuple[str, list[Segment]]] = []

    def add(segs: list[Segment], folder: str | None, logs: list[tuple[str, str | None]]) -> None:
        nonlocal place
        if folder is not None:
            segs.append((place, folder, []))
            place += 1
        for i in range(0, len(logs), RUN_FILES):
            segs.append((place, None, logs[i:i + RUN_FILES]))
            place += 1

    def flatten(segs: list[Segment], node: _Node) -> None:
        if node.kids is None:
            add(segs, node.folder, [])
            return
        add(segs, None, node.logs)
        for kid in node.kids:
            flatten(segs, kid)

    for arg, out, nodes in tops:
        segs: list[Segment] = []
        add(segs, None, out)
        for node in nodes:
            flatten(segs, node)
        plan.append((arg, segs))
    return plan


class _Node:
    """A folder of the plan: the logs it holds itself and its folders' nodes (None: left to a worker)."""

    __slots__ = ("folder", "kids", "logs")

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.logs: list[tuple[str, str | None]] = []
        self.kids: list[_Node] | None = None


def _weight(segment: Segment) -> int:
    """A guess at what reading SEGMENT costs, before anything is known of its size: a folder to walk,
    a log of JSON Lines (a session: often large), one of opencode's small files, its database."""
    _place, folder, logs = segment
    if folder is not None:
        return 1
    return sum(64 if path.endswith(_DB) else 1 if path.endswith(".json") else 8 for path, _kind in logs)

