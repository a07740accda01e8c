"""Reading an importer's source (docs/import.md): JSON Lines records with their file and line (plain or
zstd-compressed, within the line limit), or one JSON document."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson

from ..errors import DataError, UsageError
from ..session.compressed import NOT_INSTALLED, ZSTD_MAGIC, BoundedStream, inflated_limit
from ..session.compressed import command as zstd_command
from ..session.compressed import failure as zstd_failure
from ..session.compressed import program as zstd_program
from ..session.jsonl import MAX_LINE_BYTES, json_problem, numbered_lines, open_log, surrogate_tolerant_loads
from .common import ImportReport, Warn, not_recognised


class SourceLine(NamedTuple):
    path: str
    lineno: int
    record: Any


def iter_jsonl(
    path: Path,
    *,
    report: ImportReport,
    lenient: bool,
    warn: Warn | None,
    display: str | None = None,
    what: str | None = None,
) -> Iterator[SourceLine]:
    """Parsed lines of a source JSONL file.

    Blank lines are skipped; a last line without its newline that does not parse is a
    torn write (warned about and ignored); any other line that does not parse is a data
    error naming file:line, or with `lenient` a warning and a skip.
    """
    name = display or str(path)
    loads = surrogate_tolerant_loads(report, warn, name)  # a lone surrogate escape: U+FFFD, counted

    def torn(lineno: int, size: int) -> None:
        report.torn.append(f"{name}:{lineno}")
        if warn:
            warn(f"{name}:{lineno}: torn final line ({size} bytes) ignored")

    with open_source(path, name) as f:
        # Another program wrote these: a last line that lacks only its newline is taken.
        for lineno, line in numbered_lines(f, name, on_torn=torn, final="parses"):
            if len(line) < 64 and not line.strip():  # blank (a long line is never stripped: a copy)
                continue
            try:
                record = loads(line)
            except orjson.JSONDecodeError as exc:
                if what and lineno == 1 and _is_json_document(path):
                    raise not_recognised(name, what) from None  # a whole JSON document, not lines
                if not lenient:
                    raise DataError(f"{json_problem(exc)}; --lenient skips such lines", path=name, line=lineno) from None
                report.invalid.append(f"{name}:{lineno}")
                if warn:
                    warn(f"{name}:{lineno}: invalid JSON skipped")
                continue
            if not isinstance(record, dict):
                if not lenient:
                    raise DataError("not a JSON object; --lenient skips such lines", path=name, line=lineno)
                report.invalid.append(f"{name}:{lineno}")
                if warn:
                    warn(f"{name}:{lineno}: not a JSON object, skipped")
                continue
            yield SourceLine(name, lineno, record)


@contextmanager
def open_source(path: Path, display: str) -> Iterator[IO[bytes]]:
    """A source file's bytes, as they are or, for a zstd frame, decompressed as they are read.

    Codex compresses the rollouts it has not touched for a week (`rollout-*.jsonl.zst`); they
    are read through the `zstd` program (see `compressed`), streamed, so a large one is never held whole.
    """
    with open_log(path, display) as f:
        if f.peek(4)[:4] != ZSTD_MAGIC:  # type: ignore[attr-defined]  # open_log's files are buffered readers
            yield f
            return
    exe = zstd_program()
    if exe is None:
        raise UsageError(f"{display}: {NOT_INSTALLED}, or run `zstd -d` on the file and import the result")
    proc = subprocess.Popen(zstd_command(exe, str(path)), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        yield BoundedStream(proc.stdout, inflated_limit(path.stat().st_size), display)  # type: ignore[misc]  # a bomb stops at its limit
        at_end = not proc.stdout.read(1)  # a reader that stopped early (a probe) leaves the rest
    finally:
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        code = proc.wait()
    if at_end and code != 0:
        raise DataError(zstd_failure(err, code), path=display)


def _is_json_document(path: Path) -> bool:
    try:
        if path.stat().st_size > MAX_LINE_BYTES:
            return False
        orjson.loads(path.read_bytes())
        return True
    except (OSError, orjson.JSONDecodeError):
        return False


def load_json(path: Path, display: str | None = None) -> Any:
    """A whole JSON document; a syntax error names file:line."""
    name = display or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=name) from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc.msg})", path=name, line=exc.lineno) from None
