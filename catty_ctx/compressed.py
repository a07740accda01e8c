"""Compressed logs: Codex's `rollout-*.jsonl.zst`, read through the `zstd` program.

Codex compresses the rollouts it has not touched for a week (the `.jsonl` is removed). Both
readers of rollouts go through the zstd program, not a Python binding (no dependency for a
format most users meet rarely): the importer streams one (`importers.common.open_source`),
the usage ledger decompresses one whole into memory (`decompress`), since its parsers search
a buffer. The messages are the same for both.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
NOT_INSTALLED = "compressed with zstd, which catty-ctx reads through the zstd program: install it"


def program() -> str | None:
    """The zstd program on PATH, or None."""
    # start-up: only a compressed log needs the program
    import shutil

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


class Unreadable(ValueError):
    """A compressed log that could not be decompressed (no zstd program, or a bad frame)."""


def decompress(f: IO[bytes]) -> bytes:
    """The whole of the open compressed file F (read from where its descriptor stands),
    decompressed; `Unreadable` says why not."""
    # start-up: only a compressed log needs the program
    import subprocess

    exe = program()
    if exe is None:
        raise Unreadable(NOT_INSTALLED)
    try:
        proc = subprocess.run(command(exe), stdin=f, capture_output=True, check=False)
    except OSError as exc:  # (zstd removed or not executable since it was found)
        raise Unreadable(f"{NOT_INSTALLED} ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        raise Unreadable(failure(proc.stderr, proc.returncode))
    return proc.stdout
