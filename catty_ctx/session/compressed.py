"""Compressed logs: Codex's `rollout-*.jsonl.zst`, read through the `zstd` program.

Codex compresses the rollouts it has not touched for a week (the `.jsonl` is removed). Both
readers of rollouts go through the zstd program, not a Python binding (no dependency for a
format most users meet rarely): the importer streams one (`importers.common.open_source`),
the usage ledger decompresses one whole into memory (`decompress`), since its parsers search
a buffer. The messages are the same for both.

Both are bounded (docs/reliability.md "Bounded memory"): a frame may inflate to at most
MAX_RATIO times its compressed size (never less than RATIO_FLOOR bytes) and never past
MAX_BYTES; a log that would is refused as a decompression bomb (exit 65 naming the file),
having cost at most that much memory and time.
"""
from __future__ import annotations

import os

from ..errors import DataError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_RATIO = 200  # decompressed bytes per compressed byte (JSON logs inflate 5 to 50 times)
RATIO_FLOOR = 32 << 20  # a small file may always inflate this far
MAX_BYTES = 4 << 30  # and no compressed log past this
BOMB_MARK = "decompression bomb"  # how the refusal reads (the usage ledger tells it from an unreadable frame by it)
NOT_INSTALLED = "compressed with zstd, which catty-ctx reads through the zstd program: install it"


def program() -> str | None:
    """The zstd program on PATH, or None."""
    import shutil  # (asked only where a compressed rollout is met: the warm usage answer loads none)

    return shutil.which("zstd")


def command(exe: str, path: str | None = None) -> list[str]:
    """The command that writes PATH (None: stdin) decompressed to stdout, quietly."""
    return [exe, "-dcq", "--", path] if path is not None else [exe, "-dcq"]


def failure(err: bytes | str, code: int) -> str:
    """What went wrong, from the zstd program's stderr ERR and exit CODE (the path not included)."""
    text = (err.decode("utf-8", "replace") if isinstance(err, bytes) else err).strip()
    # zstd's last line is "<name, cut to fit> : <what> : <why>": the why alone reads cleanly
    why = text.splitlines()[-1].rsplit(": ", 1)[-1].strip() if text else ""
    return f"not a readable zstd file: {why or f'zstd exit {code}'}"


def refuse_bomb(error: str, path: str) -> None:
    """Raise the DataError (exit 65) of a file whose reading stopped at the bomb limit (ERROR
    says so); any other unreadable file is left to its caller."""
    if BOMB_MARK in error:
        raise DataError(error.removeprefix("cannot read (").removesuffix(")"), path=path)


class Unreadable(ValueError):
    """A compressed log that could not be decompressed (no zstd program, or a bad frame)."""


def inflated_limit(compressed_size: int) -> int:
    """The most bytes a compressed log of COMPRESSED_SIZE bytes may inflate to."""
    return min(MAX_BYTES, max(RATIO_FLOOR, compressed_size * MAX_RATIO))


def bomb(limit: int) -> str:
    return f"decompresses to more than {limit:,} bytes ({MAX_RATIO} times its size at most): refused as a {BOMB_MARK}"


def decompress(f: IO[bytes]) -> bytes:
    """The whole of the open compressed file F (read from where its descriptor stands),
    decompressed; `Unreadable` says why not (a bomb past `inflated_limit` too, stopped there)."""
    import subprocess

    exe = program()
    if exe is None:
        raise Unreadable(NOT_INSTALLED)
    try:
        size = os.fstat(f.fileno()).st_size - f.tell()
    except (OSError, AttributeError, ValueError):
        size = 0
    limit = inflated_limit(size)
    try:
        proc = subprocess.Popen(command(exe), stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:  # (zstd removed or not executable since it was found)
        raise Unreadable(f"{NOT_INSTALLED} ({exc.strerror or exc})") from None
    assert proc.stdout is not None and proc.stderr is not None
    chunks: list[bytes] = []
    held = 0
    try:
        while chunk := proc.stdout.read(1 << 20):
            held += len(chunk)
            if held > limit:
                proc.kill()
                raise Unreadable(bomb(limit))
            chunks.append(chunk)
    finally:
        proc.stdout.close()
        err = proc.stderr.read(1 << 16)
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        raise Unreadable(failure(err, code))
    data = b"".join(chunks)
    chunks.clear()
    return data


class BoundedStream:
    """A decompressed stream (a pipe from the zstd program) that refuses to give more than
    LIMIT bytes: past it, reading raises a DataError naming DISPLAY (a bomb, exit 65)."""

    def __init__(self, raw: IO[bytes], limit: int, display: str) -> None:
        self.raw = raw
        self.limit = limit
        self.display = display
        self.given = 0

    def _count(self, data: bytes) -> bytes:
        self.given += len(data)
        if self.given > self.limit:
            raise DataError(bomb(self.limit), path=self.display)
        return data

    def read(self, n: int = -1) -> bytes:
        return self._count(self.raw.read(n if n is not None and n >= 0 else self.limit + 1 - self.given))

    def readline(self, limit: int = -1) -> bytes:
        return self._count(self.raw.readline(limit))

    def peek(self, n: int = 0) -> bytes:
        return self.raw.peek(n)  # type: ignore[attr-defined]  # raw is a buffered reader

    def __iter__(self) -> BoundedStream:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self) -> None:
        self.raw.close()

    @property
    def name(self) -> object:
        return getattr(self.raw, "name", "<stream>")
