"""What a run gives: what the scan read (`Scan`: the records in file order, and how it went)
and the ledger folded from it (`Ledger`).

Its own module, light to import: a cached answer is handed back as a Ledger and a Scan,
without the scan's machinery (`filescan`) or the fold's (`ledger`) being loaded.
"""
from __future__ import annotations

from typing import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .filecache import Writing
    from .records import Record


class Scan:
    """What a scan read: the records in file order, and how it went.

    (A plain class, not a dataclass: the dataclasses module is too slow to import for a
    cached answer.)
    """

    def __init__(self, records: list[Record] | None = None, calls_read: int = 0, files: int = 0, files_parsed: int = 0,
                 bytes_parsed: int = 0, bad_lines: int = 0, bad_samples: list[str] | None = None, warnings: list[str] | None = None) -> None:
        self.records: list[Record] = records if records is not None else []
        self.calls_read = calls_read  # usage records seen, copies included
        self.files = files
        self.files_parsed = files_parsed
        self.bytes_parsed = bytes_parsed
        self.bad_lines = bad_lines
        self.bad_samples: list[str] = bad_samples if bad_samples is not None else []
        self.warnings: list[str] = warnings if warnings is not None else []
        self.generations: list[int] = []  # per PATH: the per-file cache's generation now (0: none)
        self.from_cache = 0  # logs whose cached entry was used (unchanged, or read from where it stopped)
        self.writing: list[Writing] = []  # the caches being written (each job's index is in generations)
        self.logs: list[int] = []  # per PATH: the files that are an agent's log (or were not read: --since)
        self.not_logs: list[str] = []  # files that are no agent's log
        self.running: list[str] = []  # sessions with a subagent running: their calls are not all logged (incomplete)
        # What the workers handed over (their files' entries, packed and decoded), freed with the Scan rather
        # than as the scan returns: the CLI prints the answer first, and its exit frees them at once (cli end_now).
        self.handed: Any = None

    def settle(self) -> None:
        """Wait for the per-file caches `scan(..., write_behind=True)` is still writing; one that
        could not be written gets generation 0 and a warning."""
        for job in self.writing:
            job.thread.join()
            for i, warning in job.warnings:
                self.generations[i] = 0
                self.warnings.append(warning)
        self.writing = []


class Ledger(NamedTuple):
    """Rows by one key and their totals, with what the dedupe dropped and the price table's date.

    `rendered` is what a caller of `usage(render=…)` made of it, kept with a cached answer.
    (A named tuple, not a dataclass: the dataclasses module is too slow to import for a cached answer.)
    """

    by: str
    rows: list[dict[str, Any]]
    totals: dict[str, Any]
    incomplete: bool
    calls_read: int
    duplicates: int
    prices_date: str | None
    prices_source: dict[str, Any] | None = None  # the price library and its version, and the user's price files
    sources: list[dict[str, str]] | None = None  # the homes read when no PATH was named
    rendered: Any = None

    def with_sources(self, sources: list[dict[str, str]] | None) -> Ledger:
        return self._replace(sources=sources)

    def kept(self) -> dict[str, Any]:
        """The fields an answer cache keeps (`rendered` is kept beside them)."""
        return {name: value for name, value in self._asdict().items() if name != "rendered"}

    def document(self, scan: Scan | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {"by": self.by, "rows": self.rows, "totals": self.totals, "incomplete": self.incomplete,
                               "calls_read": self.calls_read, "duplicates_dropped": self.duplicates, "prices_date": self.prices_date,
                               "prices": self.prices_source}
        if self.sources is not None:
            doc["sources"] = self.sources
        if scan is not None:
            doc.update(files=scan.files, files_parsed=scan.files_parsed, bytes_parsed=scan.bytes_parsed, bad_lines=scan.bad_lines)
        return doc
