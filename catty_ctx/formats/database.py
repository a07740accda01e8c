"""opencode's SQLite database, opened the one way every reader opens it: read-only (its
write-ahead log read with it), text cells decoded whatever bytes a damaged file holds."""
from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

# What reading a damaged database raises: sqlite3's errors, and the UnicodeDecodeError sqlite3
# itself raises when a schema's names or its own error message hold bytes that are not UTF-8.
UNREADABLE = (sqlite3.Error, UnicodeDecodeError)


def text_cell(raw: bytes) -> str:
    """A text cell as str: a corrupt database's bytes need not be UTF-8 (kept as U+FFFD)."""
    return raw.decode("utf-8", "replace")


def open_read_only(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """PATH opened read-only; raises one of UNREADABLE."""
    con = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
    con.text_factory = text_cell
    return con
