"""Names of a session's files and folders on disk (docs/spec.md#the-session-directory).

Kept apart from the store, with no imports but os and xxhash, so a quick reader (the usage
ledger's walk, an importer naming a blob) can tell sessions from staging folders and name a
blob's file without loading the store.
"""
from __future__ import annotations

import os

import xxhash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

LOG_NAME = "updates.jsonl"
# A new session (fork DEST, import --out) is built in a hidden staging folder named
# ".<DEST>.<what>-<random>.tmp" beside DEST, its log named PART_NAME until the tree is whole,
# then renamed into place. A kill can leave a staging folder (even a whole one, between the
# last two renames): a ROOT walk skips it, so it is never taken for a session.
PART_NAME = LOG_NAME + ".part"
STAGING_SUFFIX = ".tmp"
SUMMARY_NAME = "summary.json"
QUARANTINE_NAME = "quarantine"
REQUESTS_DIR = "compaction_requests"  # compaction request artifacts, and two-pass's prefire cache
# Two-pass's pass-1 cache (compact --prefire): its note, and the `usage` events of pass 1's calls
# until a compaction appends them to the log (the usage ledger reads them there meanwhile).
PREFIRE_NAME = "prefire.json"


def prefire_origin(doc: Any) -> str:
    """The name of a prefire cache's own pass: its request artifact's file name without `.json`
    ("" when it names none). Its events' `prefire_call` is this name, a colon and their index."""
    art = doc.get("artifact") if type(doc) is dict else None
    return os.path.basename(art)[: -len(".json")] if type(art) is str and art.endswith(".json") else ""


def prefire_spend(doc: Any) -> list[dict[str, Any]]:
    """The `usage` events a prefire cache document holds (read by compaction and by the usage
    ledger alike), each named by `prefire_call`; an event written before the name existed gets
    `<origin>:<index>`, the name a compaction gives it when it appends it."""
    spend = doc.get("spend") if type(doc) is dict else None
    if type(spend) is not list:
        return []
    origin = prefire_origin(doc) or f"prefire-{doc.get('fp')}"
    out = []
    for i, ev in enumerate(spend):
        if type(ev) is not dict:
            continue
        call = ev.get("prefire_call")
        if type(call) is not str or not call:
            ev = {**ev, "prefire_call": f"{origin}:{i}"}
        out.append(ev)
    return out


def is_staging(name: str) -> bool:
    """Whether a folder name is a writer's staging folder (never a session)."""
    return name.startswith(".") and name.endswith(STAGING_SUFFIX)


def session_dirs(walk: Iterable[tuple[str, list[str], list[str]]]) -> Iterator[str]:
    """The session folders (holding the log) of a top-down walk shaped as `os.walk`'s, sorted:
    a session's own folders (segments, blobs) and a killed writer's staging folder are not
    entered. One rule for a local ROOT and an fsspec URL's (`fs.walk` prunes alike)."""
    for dirpath, dirnames, filenames in walk:
        dirnames[:] = sorted(d for d in dirnames if not is_staging(d))
        if LOG_NAME in filenames:
            dirnames[:] = []
            yield dirpath


def blob_handle(data: bytes) -> str:
    """A blob's file name under `blobs/`: its content address, xxh3-128 hex of its bytes."""
    return xxhash.xxh3_128_hexdigest(data)
