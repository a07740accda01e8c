"""The ids already in a log, for an idempotent append (docs/reliability.md "Idempotent append").

An event that names itself — a message's `id`, a tool call's or result's `call_id`, a usage
record's `request_id` — is appended once: a runtime that retries after a crash, or a script
run twice, finds its events already there and they are skipped. So that the check costs
the new events, not the whole log, the session keeps `updates.jsonl.ids` beside its log: a
cache of 8-byte hashes of the ids in the log up to an offset. The log stays the truth: the
cache names the log's inode and the offset it covers, the lines past that offset are read
at every append (other writers never update it), and a cache that does not fit its log
(missing, cut, another inode) is rebuilt from the log. A hash collision (1 in 2^64 per pair)
could only skip an event; `--allow-duplicate-ids` turns the check off.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import xxhash

from .jsonl import BUFFER, numbered_lines

_MAGIC = b"CCIDS\x00\x01\x00"
_HEADER = 24  # magic, log inode, offset of the log covered (little-endian 8 bytes each)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SCAN_LOOKUPS = 32  # lookups answered by scanning the cache before it is made a set

# kind -> the field that names the event
ID_FIELDS = {"message": "id", "tool_call": "call_id", "tool_result": "call_id", "usage": "request_id"}


def index_path(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + ".ids")


def event_key(ev: Any) -> bytes | None:
    """The 8-byte hash naming EV (kind, agent and id), or None for an event without an id."""
    if type(ev) is not dict:
        return None
    kind = ev.get("kind")
    name = ID_FIELDS.get(kind) if type(kind) is str else None
    if name is None:
        return None
    value = ev.get(name)
    if type(value) is not str or not value:
        return None
    agent = ev.get("agent")
    agent = agent if type(agent) is str else ""
    return xxhash.xxh3_64_digest(f"{kind}\0{agent}\0{value}".encode("utf-8", "surrogatepass"))


class KnownIds:
    """The ids of a log (under its lock): the cache's hashes plus the lines it did not cover."""

    def __init__(self, log_path: Path, log_end: int) -> None:
        self.log_path = log_path
        self.path = index_path(log_path)
        self.log_end = log_end  # the log's complete lines end here
        self.inode = os.stat(log_path).st_ino
        self.stored = b""  # the cache's hashes, 8 bytes each
        self.added: set[bytes] = set()  # hashes not in the cache file yet
        self.new_entries: list[bytes] = []
        self.lookups = 0
        self.stored_set: set[bytes] | None = None  # the cache's hashes as a set, once lookups are many
        covered = self._load()
        if covered < log_end:
            self._scan(covered, log_end)

    def _load(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW)
        except OSError:
            return 0
        try:
            chunks = []
            while chunk := os.read(fd, BUFFER * 8):
                chunks.append(chunk)
            data = b"".join(chunks)
        except OSError:
            return 0
        finally:
            os.close(fd)
        if len(data) < _HEADER or data[:8] != _MAGIC or (len(data) - _HEADER) % 8:
            return 0
        inode = int.from_bytes(data[8:16], "little")
        covered = int.from_bytes(data[16:24], "little")
        if inode != self.inode or covered > self.log_end:
            return 0
        self.stored = data[_HEADER:]
        return covered

    def _scan(self, start: int, stop: int) -> None:
        self.stored = self.stored if start else b""
        fd = os.open(self.log_path, os.O_RDONLY)
        try:
            with os.fdopen(fd, "rb", buffering=BUFFER) as f:
                f.seek(start)
                pos = start
                for _, line in numbered_lines(f, str(self.log_path)):
                    pos += len(line)
                    if pos > stop:
                        break
                    if b'"id"' not in line and b'"call_id"' not in line and b'"request_id"' not in line:
                        continue
                    try:
                        key = event_key(orjson.loads(line))
                    except orjson.JSONDecodeError:
                        continue  # the reader reports invalid lines; the cache only lists ids
                    if key is not None and key not in self.added:
                        self.added.add(key)
                        self.new_entries.append(key)
        except OSError:
            pass

    def __contains__(self, key: bytes) -> bool:
        if key in self.added:
            return True
        stored = self.stored
        self.lookups += 1
        if self.stored_set is None and self.lookups > _SCAN_LOOKUPS:
            # a batch of many events: one pass into a set, not one scan of the cache per event
            self.stored_set = {stored[i: i + 8] for i in range(0, len(stored), 8)}
        if self.stored_set is not None:
            return key in self.stored_set
        find = stored.find
        at = find(key)
        while at != -1:
            if at % 8 == 0:
                return True
            at = find(key, at + 1)
        return False

    def add(self, key: bytes) -> None:
        if key not in self.added:
            self.added.add(key)
            self.new_entries.append(key)

    def save(self, log_end: int) -> None:
        """Record the new hashes and the offset now covered; a cache that cannot be written
        is left as it was (the next append reads the lines it misses)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError:
            return
        try:
            size = os.fstat(fd).st_size
            rebuilt = len(self.stored) == 0 or size < _HEADER or (size - _HEADER) % 8 or size - _HEADER < len(self.stored)
            entries = b"".join(self.new_entries)
            if rebuilt:
                header = _MAGIC + self.inode.to_bytes(8, "little") + (0).to_bytes(8, "little")
                body = header + self.stored + entries
                os.ftruncate(fd, 0)
                _write_all(fd, body, 0)
            else:
                _write_all(fd, entries, _HEADER + len(self.stored))
            # the covered offset last: until it is written the cache claims only what it held
            _write_all(fd, log_end.to_bytes(8, "little"), 16)
        except OSError:
            pass
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n


def split_known(events: Iterable[dict[str, Any]], known: KnownIds) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(events to append, events skipped because their id is in the log or earlier in the batch)."""
    kept: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for ev in events:
        key = event_key(ev)
        if key is not None:
            if key in known:
                skipped.append(ev)
                continue
            known.add(key)
        kept.append(ev)
    return kept, skipped
